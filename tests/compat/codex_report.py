"""Run every Codex case through codebelt and list the cases that differ from Codex.

    .venv/bin/python -m tests.compat.codex_report            # summary, one line a case
    .venv/bin/python -m tests.compat.codex_report --update   # refresh codebelt's side of
                                                             # codex_differences.json (new ones get an
                                                             # empty reason, which the test refuses)
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from tests.compat import codex_harness as ch
from tests.compat.test_codex import CASES, GOLDENS, comparable, rendered, run_case


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()
    differences = ch.load_differences()
    out = {}
    same = 0
    for case in CASES:
        golden = GOLDENS[case.group].get(case.name)
        if golden is None:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            ours = comparable(run_case(case, Path(tmp)))
        theirs = comparable(rendered(golden, case))
        if ours == theirs:
            same += 1
            continue
        reason = differences.get(case.id, {}).get("reason", "")
        out[case.id] = {"reason": reason, "codebelt": ours}
        print(f"{case.id}: {'(listed) ' + reason[:70] if reason else 'NEW'}")
    print(f"{same} of {same + len(out)} cases match Codex; {len(out)} differ")
    if args.update:
        ch.DIFFERENCES_FILE.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
