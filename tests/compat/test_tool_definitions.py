"""The tool definitions a model reads — descriptions and input schemas — against the ones the
real Claude Code sends (recorded in tests/fixtures/claude_code/tools.json)."""

from __future__ import annotations

import json

import pytest

from codebelt.texts import load
from codebelt.tools import registry

from . import harness

RECORDED = json.loads(harness.TOOLS_FILE.read_text(encoding="utf-8"))
OURS = {t.name: t for t in registry()}
TEXTS = load()

# Where codebelt behaves otherwise, its description says so: (Claude Code's words, ours), applied to
# Claude Code's description in order.
DESCRIPTION_CHANGES = {
    "Bash": [
        ("`cd` carries to the next call only in the main session, if", "`cd` carries to the next call if"),
        (" Shell state (env vars, functions) does not persist; the shell is initialized from the user's profile.",
         " Shell state (env vars, functions) does not persist."),
        ("Foreground `sleep` is blocked; use Monitor with an until-loop to wait on a condition.",
         "To wait for a condition, run an until-loop with `run_in_background` and you are re-invoked when it exits."),
    ],
    "TaskStop": [  # no agents here
        ("- To stop an agent-team teammate, pass its agent ID or bare teammate name as task_id\n"
         "- To stop a background agent spawned with a name, pass that name as task_id\n", ""),
    ],
}
# Parameters codebelt adds (docs/compat.md says why) or leaves out.
EXTRA = {"Glob": {"include_ignored"}, "Grep": {"include_ignored", "fixed_strings"}}
MISSING = {"Bash": {"dangerouslyDisableSandbox"}}  # the sandbox is the user's setting, not the model's
# Parameter descriptions that would not be true here: (Claude Code's words, ours).
PARAMETER_CHANGES = {
    ("TaskStop", "task_id"): (" Agent-team teammates and named background agents are also accepted by agent ID or name.", ""),
}


@pytest.mark.parametrize("name", sorted(RECORDED["tools"]))
def test_description_is_claude_codes(name):
    expected = RECORDED["tools"][name]["description"]
    for theirs, mine in DESCRIPTION_CHANGES.get(name, []):
        assert theirs in expected
        expected = expected.replace(theirs, mine, 1)
    assert OURS[name].spec(TEXTS)["description"] == expected


@pytest.mark.parametrize("name", sorted(RECORDED["tools"]))
def test_input_schema_is_claude_codes(name):
    theirs = RECORDED["tools"][name]["input_schema"]
    ours = OURS[name].input_schema()
    assert ours["$schema"] == theirs["$schema"] and ours["additionalProperties"] is False
    assert sorted(ours.get("required", [])) == sorted(theirs.get("required", []))
    mine, recorded = ours["properties"], dict(theirs["properties"])
    assert set(mine) - set(recorded) == EXTRA.get(name, set())
    assert set(recorded) - set(mine) == MISSING.get(name, set())
    for prop in set(mine) & set(recorded):
        expected = dict(recorded[prop])
        if (name, prop) in PARAMETER_CHANGES:
            theirs, ours_text = PARAMETER_CHANGES[name, prop]
            expected["description"] = expected["description"].replace(theirs, ours_text)
        assert mine[prop] == expected, prop


def test_every_recorded_tool_is_one_of_ours():
    assert set(RECORDED["tools"]) <= set(OURS)


# -- older releases: their profile's descriptions are the ones that release sent ---------------
OLDER = [r for r in harness.releases() if not r.default]
OLDER_TOOLS = [(r, name) for r in OLDER
               for name in sorted(json.loads(r.tools_file.read_text(encoding="utf-8"))["tools"])]


@pytest.mark.parametrize("release,name", OLDER_TOOLS, ids=lambda v: getattr(v, "profile", v))
def test_an_older_profile_describes_its_tools_as_that_release(release, name):
    recorded = json.loads(release.tools_file.read_text(encoding="utf-8"))["tools"][name]
    texts = load(release.profile)
    spec = OURS[name].spec(texts)
    assert spec["description"] == recorded["description"]
    theirs, mine = recorded["input_schema"], spec["input_schema"]
    assert sorted(mine.get("required", [])) == sorted(theirs.get("required", []))
    for prop in set(mine["properties"]) & set(theirs["properties"]):
        assert mine["properties"][prop].get("description") == theirs["properties"][prop].get("description"), prop
