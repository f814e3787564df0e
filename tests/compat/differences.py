"""The expected-differences table: cases where codebelt's result is not Claude Code's, each with
its reason and codebelt's result as it is now (so a difference that changes is noticed too).

`tests/compat/differences.json`: {case id: {"reason": why, "codebelt": codebelt's comparable
record}}. Reasons are written by hand; `python -m tests.compat.report --update` refreshes the
recorded codebelt results, drops cases that match now and adds new differences with an empty
reason, which the test refuses until one is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("differences.json")


def load() -> dict[str, dict[str, Any]]:
    if not TABLE.exists():
        return {}
    return json.loads(TABLE.read_text(encoding="utf-8"))


def save(table: dict[str, dict[str, Any]]) -> None:
    TABLE.write_text(json.dumps(dict(sorted(table.items())), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
