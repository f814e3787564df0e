"""Settings that a plain check settles are read without pydantic (`settings/plain.py`), from the
schema written out as data (`settings/plain_schema.py`). These tests hold the two readings to
each other: the data is what the schema generates now; for every field and a pool of values the
plain check accepts only what pydantic accepts, with the same values; whole settings (user files,
rules, workspace files, trust) come out the same either way; and a stale schema turns the plain
check off."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from codebelt.errors import SettingsError
from codebelt.settings import load_settings, plain
from codebelt.settings.loader import _validate
from codebelt.settings.plain_schema import FIELDS

from .test_plain_params import _typed

POOL = [None, True, False, 0, 1, -1, 2, 7, 0.5, 1.0, 7.0, -1.0, math.nan, math.inf, 2**63, "", "x", "1", "true",
        "default", "auto", "\ud800", [], ["a"], ["a", 1], [None], "*.py", {}, {"a": 1}, ("a",)]


def _leaves(fields, path=()):
    for key, (attr, kind, default) in fields.items():
        if kind[0] == "section":
            yield from _leaves(kind[1], (*path, key))
        else:
            yield (*path, key), kind, default


def _nested(path, value):
    data = value
    for key in reversed(path):
        data = {key: data}
    return data


def _values_for(kind, default):
    extra = [default]
    if kind[0] == "literal":
        extra += list(kind[2])
    if kind[0] in ("int", "float"):
        for bound in kind[2:]:
            if bound is not None:
                extra += [bound - 1, bound, bound + 1, float(bound), bound + 0.5]
    return POOL + extra


def _agree(data):
    """Run `data` through both readings; the plain one's answer (None: declined)."""
    checked = plain.check(data)
    try:
        expected = _validate(data, "test")
    except SettingsError:
        assert checked is None, f"the plain check took {data!r}, which pydantic refuses"
        return None
    if checked is not None:
        assert _typed(checked.dump()) == _typed(expected.model_dump()), data
    return checked


def test_the_schema_data_is_what_the_schema_generates():
    with open(Path(plain.__file__).with_name("plain_schema.py")) as f:
        assert f.read() == plain.render(), (
            "settings/plain_schema.py is stale: run `python -m codebelt.settings.plain --write`")
    assert plain.usable()


@pytest.mark.parametrize("path,kind,default", list(_leaves(FIELDS)), ids=lambda v: ".".join(v) if isinstance(v, tuple) and all(isinstance(p, str) for p in v) else None)
def test_each_field_accepts_only_what_pydantic_accepts(path, kind, default):
    settled = 0
    for value in _values_for(kind, default):
        if _agree(_nested(path, value)) is not None:
            settled += 1
    if kind[0] != "other":
        assert settled >= 2, f"{'.'.join(path)}: the plain check settled only {settled} values"
    # the Python attribute name is not a key of a settings file
    attr = FIELDS
    for key in path[:-1]:
        attr = attr[key][1][1]
    name = attr[path[-1]][0]
    if name != path[-1]:
        assert plain.check(_nested((*path[:-1], name), default)) is None


@pytest.mark.parametrize("data", [
    {}, [], "x", None, {"unknown": 1}, {"permissions": []}, {"permissions": None}, {"permissions": {"allow": "Bash"}},
    {"permissions": {"defaultMode": "bypassPermissions", "deny": ["Read(./.env)"], "allow": ["Bash(ls)"]}},
    {"sandbox": {"network": True}}, {"sandbox": {"network": {"allowedDomains": ["x.org"]}}},
    {"sandbox": {"limits": {"memoryMB": None, "processes": 0}}}, {"hooks": {}}, {"hooks": []},
    {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}},
    {"lsp": {"servers": {}}}, {"lsp": {"servers": {"x": {"command": "y", "extensions": [".x"]}}}},
    {"$schema": "https://x"}, {"checkpoints": {"exclude": "node_modules", "maxAgeDays": 1}},
    {"trustedWorkspaces": ["/a"]}, {"search": {"exclude": ["a", "b"]}, "grep": {"timeoutMs": None}},
])
def test_whole_files_agree(data):
    _agree(data)


def test_plain_values_are_taken_by_the_plain_check():
    """The usual settings never need pydantic: the check must not quietly decline them."""
    for data in ({}, {"permissions": {"deny": ["Read(./.env)"], "defaultMode": "acceptEdits"}, "hooks": {}},
                 {"bash": {"backgroundTasks": False, "autoBackground": False}, "intel": {"startWithSession": False},
                  "checkpoints": {"baselineAtStart": False}, "sandbox": {"mode": "off", "jail": False}}):
        assert _agree(data) is not None, data


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


SCENARIOS = {
    "user rules": ({"permissions": {"deny": ["Read(./secret/**)"], "allow": ["Bash(ls *)"],
                                    "additionalDirectories": ["../other"]}, "sandbox": {"filesystem": {"denyRead": ["~/.aws"]}}},
                   None, None),
    "user and claude": ({"read": {"maxTokens": 100}}, {"permissions": {"ask": ["Bash(git push *)"]}}, None),
    "untrusted workspace file": ({"permissions": {"deny": ["Bash(rm *)"]}}, None,
                                 {"permissions": {"allow": ["Bash(*)"], "deny": ["Read(./x)"], "defaultMode": "plan"},
                                  "bash": {"defaultTimeoutMs": 999_999_999}, "read": {"maxTokens": 10}}),
    "trusted workspace file": ({"trustedWorkspaces": ["<ws>"]}, None,
                               {"permissions": {"allow": ["Bash(*)"], "defaultMode": "acceptEdits"}}),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_settings_come_out_the_same_with_and_without_the_plain_check(name, ws, tmp_path, monkeypatch):
    user, claude, workspace = SCENARIOS[name]
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    _write(Path(str(tmp_path / "state" / "config")) / "codebelt" / "settings.json",
           json.loads(json.dumps(user).replace("<ws>", str(ws))))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "state" / "config"))
    if claude:
        _write(home / ".claude" / "settings.json", claude)
    if workspace:
        _write(ws / ".codebelt" / "settings.json", workspace)
    args = dict(explicit={"bash": {"backgroundTasks": False}}, overrides={"permissions": {"defaultMode": "default"}})

    fast = load_settings(ws, **args)
    monkeypatch.setattr(plain, "check", lambda data: None)
    slow = load_settings(ws, **args)
    assert slow._plain is None
    if not workspace:
        assert fast._plain is not None, "these settings should not have needed pydantic"
    assert _typed(fast.model.model_dump()) == _typed(slow.model.model_dump())
    for section in slow.model.model_dump():
        got = getattr(fast, section)
        assert _typed(got.dump() if isinstance(got, plain.Section) else got) == _typed(
            slow.model.model_dump()[section]), section
    assert fast.rules == slow.rules and fast.narrowing_sources == slow.narrowing_sources
    assert fast.trust == slow.trust and fast.warnings == slow.warnings and fast.ignored == slow.ignored
    for key, value in slow.leaves():
        assert _typed(fast.get(key)) == _typed(value), key
        assert fast.source_of(key) == slow.source_of(key)


def test_a_stale_schema_turns_the_plain_check_off(monkeypatch):
    monkeypatch.setattr(plain, "SCHEMA_CRC", plain.SCHEMA_CRC ^ 1)
    monkeypatch.setattr(plain, "_usable", None)
    assert plain.check({}) is None
    monkeypatch.undo()
    monkeypatch.setattr(plain, "_usable", None)
    assert plain.check({}) is not None


def test_a_bad_file_is_still_named_with_its_key(ws, tmp_path):
    bad = tmp_path / "s.json"
    bad.write_text(json.dumps({"bash": {"defaultTimeoutMs": 0}}))
    with pytest.raises(SettingsError, match=r"s\.json: bash\.defaultTimeoutMs must be > 0, got 0"):
        load_settings(ws, settings_file=bad, load_user=False)
    bad.write_text(json.dumps({"permissions": {"deny": "Read(x)"}}))
    with pytest.raises(SettingsError, match=r"permissions\.deny must be a list of strings"):
        load_settings(ws, settings_file=bad, load_user=False)
