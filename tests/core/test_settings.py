"""Settings files: where they are read from, precedence, Claude Code's permissions block, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codebelt.errors import SettingsError
from codebelt.settings import load_settings


def write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def test_precedence_of_scalars(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    write(tmp_path / "cfg/codebelt/settings.json", {"grep": {"timeoutMs": 10, "headLimit": 7}, "permissions": {"defaultMode": "plan"}})
    write(ws / ".codebelt/settings.json", {"grep": {"timeoutMs": 2}})
    write(ws / ".codebelt/settings.local.json", {"grep": {"timeoutMs": 3}})
    extra = tmp_path / "extra.json"
    write(extra, {"grep": {"timeoutMs": 4}})
    s = load_settings(ws, explicit={"grep": {"timeoutMs": 5}}, settings_file=extra)
    assert s.get("grep.timeoutMs") == 5
    assert s.get("grep.headLimit") == 7  # deep merge keeps lower keys
    assert s.get("permissions.defaultMode") == "plan"
    assert load_settings(ws, settings_file=extra).get("grep.timeoutMs") == 4
    assert load_settings(ws).get("grep.timeoutMs") == 3
    assert load_settings(ws, load_user=False).get("grep.headLimit") == 250  # the default


def test_rules_from_every_file_with_their_sources(ws):
    write(ws / ".codebelt/settings.json", {"permissions": {"allow": ["Bash(make *)"]}})
    write(ws / ".claude/settings.json", {"permissions": {"deny": ["Read(./.env)"]}, "model": "ignored"})
    write(ws / ".claude/settings.local.json", {"permissions": {"ask": ["Bash(git push *)"]}})
    s = load_settings(ws, explicit={"permissions": {"allow": ["Edit(src/**)"]}}, load_user=False, trust_workspace=True)
    got = {(r.behavior, r.text, r.source) for r in s.rules}
    assert got == {
        ("allow", "Edit(src/**)", "session settings"),
        ("allow", "Bash(make *)", ".codebelt/settings.json"),
        ("deny", "Read(./.env)", ".claude/settings.json"),
        ("ask", "Bash(git push *)", ".claude/settings.local.json"),
    }
    assert s.get("model") is None  # only Claude Code's permissions block is taken
    # untrusted, the workspace's allow rule is left out; its deny and ask rules stay
    untrusted = {(r.behavior, r.text) for r in load_settings(ws, load_user=False).rules}
    assert untrusted == {("deny", "Read(./.env)"), ("ask", "Bash(git push *)")}


def test_claude_code_policy_applies_unchanged(make_session, ws):
    from .tools_for_tests import ALL

    write(ws / ".claude/settings.json", {"permissions": {"deny": ["Read(./secret.txt)"]}})
    (ws / "secret.txt").write_text("x")
    s = make_session(tools=ALL)
    r = s.call("Peek", {"file_path": "secret.txt"})
    assert r.is_error and "denied by rule Read(./secret.txt) in .claude/settings.json" in r.text


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"permissions": {"deny": "Bash(ls)"}}', "must be a list of strings"),
        ('{"edit": {"maxFileMB": 0}}', "edit.maxFileMB must be > 0"),
        ('{"permissions": []}', "'permissions' must be an object"),
    ],
)
def test_bad_settings_files_are_named(ws, content, message):
    write(ws / ".codebelt/settings.json", content)
    with pytest.raises(SettingsError, match=message) as e:
        load_settings(ws, load_user=False)
    assert ".codebelt/settings.json" in str(e.value)


def test_missing_explicit_settings_file(ws, tmp_path):
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(ws, settings_file=tmp_path / "nope.json")


def test_mode_from_settings_and_override(make_session, ws):
    write(ws / ".codebelt/settings.json", {"permissions": {"defaultMode": "plan"}})
    assert make_session().mode == "plan"
    assert make_session(mode="acceptEdits").mode == "acceptEdits"  # the caller's choice wins
    write(ws / ".codebelt/settings.json", {"permissions": {"defaultMode": "acceptEdits"}})
    assert make_session().mode == "default"  # a wider mode needs a trusted workspace
    assert make_session(trust_workspace=True).mode == "acceptEdits"


# A repository's own settings files cannot name programs to run or switch every check off.
@pytest.mark.parametrize(
    "rel,data,dotted",
    [
        (".codebelt/settings.json", {"search": {"ripgrepPath": "./evil"}}, "search.ripgrepPath"),
        (".codebelt/settings.local.json", {"search": {"useSystemRipgrep": True}}, "search.useSystemRipgrep"),
        (".codebelt/settings.json", {"permissions": {"defaultMode": "bypassPermissions"}}, "permissions.defaultMode"),
        (".claude/settings.json", {"permissions": {"defaultMode": "bypassPermissions"}}, "permissions.defaultMode"),
    ],
)
def test_workspace_cannot_set_trust_keys(ws, tmp_path, rel, data, dotted):
    write(ws / rel, data)
    s = load_settings(ws, load_user=False)
    assert s.source_of(dotted) == "default"  # the workspace's value was not taken
    assert any(dotted in w and rel in w for w in s.warnings)
    # The same values are honoured from an explicit settings file or the API.
    extra = tmp_path / "explicit.json"
    write(extra, data)
    assert load_settings(ws, settings_file=extra, load_user=False).source_of(dotted) == str(extra)
    assert load_settings(ws, explicit=data, load_user=False).source_of(dotted) == "session settings"


def test_workspace_keeps_what_narrows(ws):
    write(ws / ".codebelt/settings.json", {"permissions": {"defaultMode": "dontAsk", "deny": ["Bash(make *)"]},
                                           "grep": {"timeoutMs": 5}})
    s = load_settings(ws, load_user=False)
    assert s.get("permissions.defaultMode") == "dontAsk" and s.get("grep.timeoutMs") == 5
    assert [r.text for r in s.rules] == ["Bash(make *)"] and s.warnings == [] and s.ignored == []


def test_a_repository_cannot_make_grep_run_its_own_program(make_session, ws):
    evil = ws / "evil.sh"
    evil.write_text("#!/bin/sh\ntouch pwned\n")
    evil.chmod(0o755)
    write(ws / ".codebelt/settings.json", {"search": {"ripgrepPath": str(evil)}})
    (ws / "a.txt").write_text("hello\n")
    s = make_session()
    r = s.call("Grep", {"pattern": "hello"})
    assert not r.is_error and "a.txt" in r.text
    assert not (ws / "pwned").exists()
