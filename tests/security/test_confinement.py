"""`Decision.confinement` says where what a call starts runs, the permission engine sets it for
every call, the audit log records it, and the Bash tool obeys it — not `decided_by`, which is a
label: a decision labelled "read-only" that is not confined to the jail runs outside it, and
one confined to the jail never runs anywhere else."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.permissions.decision import Decision
from codebelt.permissions.engine import PermissionEngine
from codebelt.permissions.requests import CommandRequest, PathRequest
from codebelt.settings import Settings
from codebelt.tool import ToolError
from codebelt.tools.bash import Bash, BashInput
from codebelt.workspace import Workspace


def engine(root: Path, jail: bool, mode: str = "auto", rules: dict | None = None) -> PermissionEngine:
    data = {"sandbox": {"mode": mode}, **({"permissions": rules} if rules else {})}
    return PermissionEngine(Settings([("test", data)]), Workspace(root), "default",
                            jail_available=lambda: jail, helper_tools={"Bash", "Grep", "Glob", "LSP", "Edit"})


# (tool, what it asks for, jail works, sandbox.mode, rules, expected confinement)
CASES = [
    ("Bash", "ls -la", True, "auto", None, "jail"),
    ("Bash", "git status && cat a.txt", True, "off", None, "jail"),  # the jail whatever the mode
    ("Bash", "ls -la", False, "auto", None, "sandbox"),  # exact programs run unjailed, sandboxed
    ("Bash", "ls -la", False, "off", None, "none"),
    ("Bash", "touch x", True, "auto", None, "sandbox"),  # asks; approved, it runs sandboxed
    ("Bash", "ls && touch x", True, "auto", None, "sandbox"),  # one part is not read-only
    ("Bash", "git status", True, "auto", {"allow": ["Bash(git status)"]}, "sandbox"),  # a rule, not the verdict
    ("Bash", "touch x", True, "off", None, "none"),
    ("Grep", "a.txt", True, "auto", None, "jail"),
    ("Grep", "a.txt", False, "auto", None, "none"),
    ("LSP", "a.txt", True, "off", None, "jail"),
    ("Edit", "a.txt", True, "auto", None, "jail"),  # its diagnostics may start a language server
    ("Read", "a.txt", True, "auto", None, "none"),  # starts nothing
]


@pytest.mark.parametrize("tool,what,jail,mode,rules,expected", CASES,
                         ids=[f"{t}-{w}-{'jail' if j else 'nojail'}-{m}" for t, w, j, m, _, _ in CASES])
def test_every_decision_says_how_the_call_is_confined(tool, what, jail, mode, rules, expected, ws):
    (ws / "a.txt").write_text("alpha\n")
    e = engine(ws, jail, mode, rules)
    if tool == "Bash":
        requests = [CommandRequest(what, ws)]
    else:
        requests = [PathRequest("write" if tool == "Edit" else "read", ws / what)]
    assert e.decide(tool, requests).confinement == expected


def _run_bash(ws: Path, decision: Decision, command: str) -> str:
    with Session(ws) as s:
        if s.sandbox().jail.backend is None:
            pytest.skip(f"no read-only jail here: {s.sandbox().jail.reason}")
        ctx = s.context("Bash")
        ctx.decision = decision
        return Bash().run(BashInput(command=command), ctx).text


def test_the_bash_tool_obeys_the_field_not_the_label(ws, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("visible outside the jail\n")
    # labelled read-only, confined to the sandbox: runs outside the jail (it sees the file)
    text = _run_bash(ws, Decision("allow", "x", "read-only", confinement="sandbox"), f"cat {outside}")
    assert "visible outside the jail" in text, text
    # labelled as a rule's, confined to the jail: runs in the jail (the file is not there)
    text = _run_bash(ws, Decision("allow", "x", "rule", confinement="jail"), f"cat {outside}")
    assert "visible outside the jail" not in text, text


def test_a_call_confined_to_the_jail_is_refused_when_no_jail_works(ws, tmp_path):
    marker = tmp_path / "ran"
    with Session(ws, settings={"sandbox": {"jail": False}}) as s:
        ctx = s.context("Bash")
        ctx.decision = Decision("allow", "x", "read-only", confinement="jail")
        with pytest.raises(ToolError) as info:
            Bash().run(BashInput(command=f"touch {marker}"), ctx)
    assert "read-only jail" in str(info.value)
    assert not marker.exists()


def test_the_audit_log_records_the_confinement(ws, tmp_path):
    db = tmp_path / "audit.db"
    (ws / "a.txt").write_text("alpha\n")
    with Session(ws, audit=db) as s:
        jail = s.sandbox().jail.backend is not None
        s.call("Bash", {"command": "cat a.txt"})
        s.call("Read", {"file_path": "a.txt"})
    rows = dict(sqlite3.connect(db).execute("SELECT tool, confinement FROM calls").fetchall())
    assert rows == {"Bash": "jail" if jail else "sandbox", "Read": "none"}
