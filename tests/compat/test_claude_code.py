"""codebelt against the real Claude Code: every recorded case replayed through a Session, for
every Claude Code profile against the release it follows (the current one, and each older one
with its own goldens and differences table).

A case passes when codebelt's tool_result (and what the calls left on disk) is exactly that
release's, or when it is listed in the profile's differences table with a reason and codebelt's
result is still the one listed there. `python -m tests.compat.report` shows every difference as a
diff.
"""

from __future__ import annotations

import json

import pytest

from . import differences, harness
from .replay import comparable, run_case
from .report import describe

RELEASES = harness.releases()
CASES = {r.profile: harness.load_cases(release=r) for r in RELEASES}
TABLES = {r.profile: differences.load(r) for r in RELEASES}
GOLDENS = {r.profile: {g: harness.load_goldens(g, r) for g in {c.group for c in CASES[r.profile]}} for r in RELEASES}
PARAMS = [pytest.param(r, c, id=c.id if r.default else f"{r.profile}:{c.id}") for r in RELEASES for c in CASES[r.profile]]


def test_enough_cases_over_every_tool():
    cases = CASES[harness.DEFAULT_PROFILE]
    assert len(cases) >= 200
    tools = {tool for c in cases for tool, _ in c.calls}
    assert {"Read", "Write", "Edit", "Glob", "Grep", "Bash", "TaskStop", "NotebookEdit"} <= tools


def test_every_profile_follows_a_recorded_release():
    assert [r.profile for r in RELEASES][0] == harness.DEFAULT_PROFILE and len(RELEASES) > 1
    for r in RELEASES:
        recorded = json.loads(r.tools_file.read_text(encoding="utf-8"))["claude_code"]
        assert recorded == r.version, r.profile
        assert harness._profile_table(r.profile)["release"] == r.version, r.profile


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.profile)
def test_every_case_is_recorded_and_every_recording_is_a_case(release):
    names = {(c.group, c.name) for c in CASES[release.profile]}
    goldens = GOLDENS[release.profile]
    recorded = {(g, n) for g, cases in goldens.items() for n in cases}
    assert sorted(names - recorded) == [], "cases without a golden: run scripts/claude_code/record.py --only …"
    assert sorted(recorded - names) == []
    missing = [f"{g}/{n}" for g, cases in goldens.items() for n, rec in cases.items()
               if any("missing" in c for c in rec["calls"])]
    assert missing == [], "cases whose recording has no result for a call"


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.profile)
def test_the_table_lists_only_cases_with_a_reason(release):
    table = TABLES[release.profile]
    ids = {c.id for c in CASES[release.profile]}
    assert sorted(set(table) - ids) == []
    assert [k for k, v in table.items() if not v.get("reason", "").strip()] == []


@pytest.mark.parametrize("release,case", PARAMS)
def test_case(release: harness.Release, case: harness.Case):
    golden = GOLDENS[release.profile][case.group].get(case.name)
    if golden is None:
        pytest.fail(f"{case.id} has no golden")
    want, got = comparable(golden), comparable(run_case(case, release))
    table = release.differences_file.name
    listed = TABLES[release.profile].get(case.id)
    if got == want:
        assert listed is None, f"{case.id} matches Claude Code {release.version} now: remove it from {table}"
        return
    shown = "\n".join(describe(case, want, got))
    assert listed is not None, f"{case.id} differs from Claude Code {release.version} and is not listed in {table}:\n{shown}"
    assert got == listed["codebelt"], (
        f"{case.id}: codebelt's result is no longer the one listed in {table} "
        f"(python -m tests.compat.report --profile {release.profile} --update to review it):\n"
        + json.dumps(listed["codebelt"], indent=1, ensure_ascii=False)[:3000] + "\n--- now:\n"
        + json.dumps(got, indent=1, ensure_ascii=False)[:3000]
    )
