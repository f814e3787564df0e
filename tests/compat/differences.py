"""The expected-differences tables: cases where codebelt's result is not the recorded Claude Code
release's, each with its reason and codebelt's result as it is now (so a difference that changes
is noticed too). One table per profile: `tests/compat/differences.json` for the default profile,
`differences.<profile>.json` for each older release's.

{case id: {"reason": why, "codebelt": codebelt's comparable record}}. Reasons are written by
hand; `python -m tests.compat.report --update` refreshes the recorded codebelt results, drops
cases that match now and adds new differences with an empty reason, which the test refuses until
one is written.
"""

from __future__ import annotations

import json
from typing import Any

from .harness import Release, release as default_release


def load(release: Release | None = None) -> dict[str, dict[str, Any]]:
    path = (release or default_release()).differences_file
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def save(table: dict[str, dict[str, Any]], release: Release | None = None) -> None:
    path = (release or default_release()).differences_file
    path.write_text(json.dumps(dict(sorted(table.items())), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
