"""codebelt against the real Claude Code: every recorded case replayed through a Session.

A case passes when codebelt's tool_result (and what the calls left on disk) is exactly Claude
Code's, or when it is listed in differences.json with a reason and codebelt's result is still
the one listed there. `python -m tests.compat.report` shows every difference as a diff.
"""

from __future__ import annotations

import json

import pytest

from . import differences, harness
from .replay import comparable, run_case
from .report import describe

CASES = harness.load_cases()
TABLE = differences.load()
GOLDENS = {g: harness.load_goldens(g) for g in {c.group for c in CASES}}


def test_enough_cases_over_every_tool():
    assert len(CASES) >= 200
    tools = {tool for c in CASES for tool, _ in c.calls}
    assert {"Read", "Write", "Edit", "Glob", "Grep", "Bash", "TaskStop", "NotebookEdit"} <= tools


def test_every_case_is_recorded_and_every_recording_is_a_case():
    names = {(c.group, c.name) for c in CASES}
    recorded = {(g, n) for g, cases in GOLDENS.items() for n in cases}
    assert sorted(names - recorded) == [], "cases without a golden: run scripts/claude_code/record.py --only …"
    assert sorted(recorded - names) == []
    missing = [f"{g}/{n}" for g, cases in GOLDENS.items() for n, rec in cases.items()
               if any("missing" in c for c in rec["calls"])]
    assert missing == [], "cases whose recording has no result for a call"


def test_the_table_lists_only_cases_with_a_reason():
    ids = {c.id for c in CASES}
    assert sorted(set(TABLE) - ids) == []
    assert [k for k, v in TABLE.items() if not v.get("reason", "").strip()] == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case(case: harness.Case):
    golden = GOLDENS[case.group].get(case.name)
    if golden is None:
        pytest.fail(f"{case.id} has no golden")
    want, got = comparable(golden), comparable(run_case(case))
    listed = TABLE.get(case.id)
    if got == want:
        assert listed is None, f"{case.id} matches Claude Code now: remove it from differences.json"
        return
    shown = "\n".join(describe(case, want, got))
    assert listed is not None, f"{case.id} differs from Claude Code and is not listed in differences.json:\n{shown}"
    assert got == listed["codebelt"], (
        f"{case.id}: codebelt's result is no longer the one listed in differences.json "
        f"(python -m tests.compat.report --update to review it):\n"
        + json.dumps(listed["codebelt"], indent=1, ensure_ascii=False)[:3000] + "\n--- now:\n"
        + json.dumps(got, indent=1, ensure_ascii=False)[:3000]
    )
