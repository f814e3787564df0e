"""Permission decisions for path requests, as a table: settings + mode + call → decision."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codebelt.errors import RuleError
from codebelt.permissions.rules import Rule

from .tools_for_tests import ALL

# (settings permissions block, mode, tool, path, expected behavior, reason substring)
# Paths starting with "/" are absolute; "HOME" stands for the home directory.
CASES = [
    # Reads
    ({}, "default", "Peek", "a.txt", "allow", "reading inside the workspace"),
    ({}, "plan", "Peek", "a.txt", "allow", "reading inside"),
    ({}, "default", "Peek", "/etc/hostname", "ask", "outside the workspace"),
    ({}, "bypassPermissions", "Peek", "/etc/hostname", "allow", "bypassPermissions"),
    ({}, "dontAsk", "Peek", "/etc/hostname", "deny", "dontAsk"),
    ({"allow": ["Read(//etc/**)"]}, "default", "Peek", "/etc/hostname", "allow", "rule Read(//etc/**)"),
    ({"deny": ["Read(./.env)"]}, "default", "Peek", ".env", "deny", "denied by rule Read(./.env)"),
    ({"deny": ["Read(.env)"]}, "default", "Peek", "sub/.env", "deny", "Read(.env)"),
    ({"deny": ["Read(./.env)"]}, "default", "Peek", "sub/.env", "allow", "inside"),
    ({"deny": ["Read(secrets/**)"], "allow": ["Read(secrets/**)"]}, "default", "Peek", "secrets/k", "deny", "denied"),
    ({"ask": ["Read(*.pem)"]}, "default", "Peek", "keys/server.pem", "ask", "Read(*.pem)"),
    ({"deny": ["Peek"]}, "default", "Peek", "a.txt", "deny", "rule Peek"),
    # Writes
    ({}, "default", "Touch", "a.txt", "ask", "needs approval"),
    ({}, "acceptEdits", "Touch", "a.txt", "allow", "acceptEdits"),
    ({}, "plan", "Touch", "a.txt", "deny", "plan"),
    ({}, "dontAsk", "Touch", "a.txt", "deny", "dontAsk"),
    ({}, "bypassPermissions", "Touch", "a.txt", "allow", "bypassPermissions"),
    ({}, "acceptEdits", "Touch", "/tmp/outside.txt", "deny", "outside the workspace"),
    ({}, "bypassPermissions", "Touch", "/tmp/outside.txt", "deny", "outside the workspace"),
    ({"allow": ["Edit(//tmp/outside.txt)"]}, "default", "Touch", "/tmp/outside.txt", "allow", "rule Edit"),
    ({"allow": ["Edit(src/**)"]}, "default", "Touch", "src/pkg/mod.py", "allow", "Edit(src/**)"),
    ({"allow": ["Edit(src/**)"]}, "default", "Touch", "docs/x.md", "ask", "needs approval"),
    ({"allow": ["Write(src/**)"]}, "default", "Touch", "src/x.py", "allow", "Write(src/**)"),
    ({"deny": ["Read(./.env)"]}, "acceptEdits", "Touch", ".env", "deny", "Read(./.env)"),  # Read deny covers writes
    ({"ask": ["Edit(src/**)"], "allow": ["Edit(src/**)"]}, "acceptEdits", "Touch", "src/a", "ask", "Edit(src/**)"),
    ({"deny": ["Edit(/build)"]}, "bypassPermissions", "Touch", "build/out.o", "deny", "Edit(/build)"),
    # Protected paths need an explicit allow rule, even in acceptEdits
    ({}, "acceptEdits", "Touch", ".git/hooks/pre-commit", "ask", "protected"),
    ({}, "acceptEdits", "Touch", ".git/config", "ask", "protected"),
    ({}, "acceptEdits", "Touch", ".codebelt/settings.json", "ask", "protected"),
    ({}, "acceptEdits", "Touch", ".claude/settings.json", "ask", "protected"),
    ({}, "acceptEdits", "Touch", ".env.local", "ask", "secrets"),
    ({}, "bypassPermissions", "Touch", ".git/hooks/post-merge", "ask", "protected"),
    ({"allow": ["Edit(./.env.local)"]}, "acceptEdits", "Touch", ".env.local", "allow", "rule"),
    ({}, "acceptEdits", "Touch", "src/.envelope.py", "ask", "secrets"),  # `.env*` is a prefix match
    ({}, "acceptEdits", "Touch", "gitdir/.gitignore", "allow", "acceptEdits"),
]


@pytest.mark.parametrize("perms,mode,tool,path,expected,reason", CASES)
def test_path_decisions(make_session, ws, perms, mode, tool, path, expected, reason):
    s = make_session(tools=ALL, mode=mode, settings={"permissions": perms})
    target = path if path.startswith("/") else str(ws / path)
    requests = s.tool(tool).permission_requests(s.tool(tool).Input(file_path=target), _ctx(s, tool))
    d = s.engine.decide(tool, requests)
    assert (d.behavior, reason in d.reason) == (expected, True), d


def _ctx(s, tool):
    return s.context(tool)


def test_ask_without_approver_is_denied_with_a_way_to_allow_it(make_session, ws):
    s = make_session(tools=ALL)
    r = s.call("Touch", {"file_path": "new.txt"})
    assert r.is_error
    assert "no approver" in r.text and "acceptEdits" in r.text and "Edit(./new.txt)" in r.text
    assert not (ws / "new.txt").exists()


@pytest.mark.parametrize("answer,created", [(True, True), (False, False)])
def test_approver_answers_ask(make_session, ws, answer, created):
    seen = []

    def approver(req):
        seen.append(req)
        return answer

    s = make_session(tools=ALL, approver=approver)
    r = s.call("Touch", {"file_path": "new.txt"})
    assert (ws / "new.txt").exists() is created
    assert r.is_error is (not answer)
    assert seen[0].tool == "Touch" and "new.txt" in seen[0].summary()
    if not answer:
        assert "declined by the user" in r.text


def test_a_crashing_approver_is_a_refusal(make_session, ws):
    s = make_session(tools=ALL, approver=lambda req: 1 / 0)
    r = s.call("Touch", {"file_path": "new.txt"})
    assert r.is_error and "approver failed" in r.text and not (ws / "new.txt").exists()


def test_symlink_out_of_the_workspace_is_outside(make_session, ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    s = make_session(tools=ALL, mode="acceptEdits")
    r = s.call("Touch", {"file_path": "link/evil.txt"})
    assert r.is_error and "outside the workspace" in r.text
    assert not (outside / "evil.txt").exists()


def test_dotdot_escape_is_outside(make_session, ws):
    s = make_session(tools=ALL, mode="acceptEdits")
    r = s.call("Touch", {"file_path": "sub/../../escape.txt"})
    assert r.is_error and "outside the workspace" in r.text


@pytest.mark.parametrize("path", ["\\\\server\\share\\x", "//server/share/x", "a\x00b"])
def test_unc_and_nul_paths_are_refused(make_session, path):
    s = make_session(tools=ALL, mode="bypassPermissions")
    r = s.call("Touch", {"file_path": path})
    assert r.is_error and ("UNC" in r.text or "NUL" in r.text)


def test_additional_directories_are_inside(make_session, ws, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    s = make_session(tools=ALL, mode="acceptEdits", settings={"permissions": {"additionalDirectories": [str(lib)]}})
    assert not s.call("Touch", {"file_path": str(lib / "x.txt")}).is_error
    assert (lib / "x.txt").exists()


@pytest.mark.parametrize("bad", ["Bash(unclosed", "(nothing)", "Edit(x) trailing"])
def test_bad_rules_are_reported_with_their_source(make_session, bad):
    with pytest.raises(RuleError, match="settings"):
        make_session(tools=ALL, settings={"permissions": {"allow": [bad]}})


# Bash command patterns: (rule, command, matches)
COMMAND_PATTERNS = [
    ("Bash(ls *)", "ls", True),
    ("Bash(ls *)", "ls -la", True),
    ("Bash(ls *)", "lsof", False),
    ("Bash(npm run test:*)", "npm run test", True),
    ("Bash(npm run test:*)", "npm run test -- --watch", True),
    ("Bash(npm run test:*)", "npm run testx", False),
    ("Bash(git status)", "git status", True),
    ("Bash(git status)", "git status --short", False),
    ("Bash(git * main)", "git push origin main", True),
    ("Bash(git * main)", "git push origin mainline", False),
    ("Bash", "anything at all", True),
    ("Bash(*)", "anything at all", True),
    ("Bash(echo \\*)", "echo *", True),
    ("Bash(echo \\*)", "echo x", False),
]


@pytest.mark.parametrize("rule,command,matches", COMMAND_PATTERNS)
def test_command_patterns(rule, command, matches):
    assert Rule.parse(rule).matches_command(command) is matches
