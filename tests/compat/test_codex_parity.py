"""The codex profile is a face on the same guards as Bash: what an exec_command session does is
decided, confined and undone exactly as a Bash command would be. Verified by effect with real
sandboxed commands: the path does not exist on the host afterwards."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from codebelt import Session

SETTINGS = {"sandbox": {"mode": "bwrap", "autoAllowBash": True}}


def py(path: str, text: str = "x") -> str:
    return (f"python3 -c \"import os; p = '{path}'; os.makedirs(os.path.dirname(p) or '.', exist_ok=True); "
            f"open(p, 'w').write('{text}')\"")


@pytest.fixture
def repo(ws: Path) -> Path:
    (ws / "a.txt").write_text("alpha\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def codex_sandboxed(repo: Path) -> Session:
    s = Session(repo, settings=SETTINGS, load_user_settings=False, audit=False, profile="codex")
    if not s.sandbox().status.protected_paths:
        s.close()
        pytest.skip(f"no bwrap sandbox here: {s.sandbox().status.reason}")
    return s


@pytest.mark.parametrize("tty", [False, True])
@pytest.mark.parametrize("command,path", [
    ("cp a.txt .envrc", ".envrc"),
    (py(".git/commondir", "/tmp/evil"), ".git/commondir"),
    (py("web/.vscode/tasks.json", "{}"), "web/.vscode"),
])
def test_exec_command_creations_are_undone_as_bash_ones(repo, command, path, tty):
    with codex_sandboxed(repo) as s:
        r = s.call("exec_command", {"cmd": command, "tty": tty, "yield_time_ms": 10_000})
    assert "Process exited with code 0" in r.text, r.text  # it ran, unasked
    assert not os.path.lexists(repo / path), r.text
    assert "Removed" in r.text and Path(path).parts[0] in r.text, r.text


def test_a_session_still_running_is_undone_when_it_ends(repo):
    with codex_sandboxed(repo) as s:
        r = s.call("exec_command", {"cmd": "read line; " + py(".git/commondir", "/tmp/evil"), "tty": True,
                                    "yield_time_ms": 500})
        assert r.data["session_id"] is not None, r.text
        seen = s.call("write_stdin", {"session_id": r.data["session_id"], "chars": "go\n", "yield_time_ms": 10_000}).text
        deadline = time.monotonic() + 10
        while os.path.lexists(repo / ".git" / "commondir") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.lexists(repo / ".git" / "commondir")
        seen += s.call("write_stdin", {"session_id": 1, "chars": ""}).text  # the next result says so, if none did
    assert "Removed .git/commondir" in seen, seen


# -- confinement: the codex tools and TaskInput are confined as Bash is --------------------------
def test_exec_command_obeys_the_decisions_confinement(ws, tmp_path):
    from codebelt.permissions.decision import Decision
    from codebelt.tools.exec_command import ExecCommand, ExecCommandInput

    outside = tmp_path / "outside.txt"
    outside.write_text("visible outside the jail\n")
    with Session(ws, profile="codex", load_user_settings=False, audit=False) as s:
        if s.sandbox().jail.backend is None:
            pytest.skip(f"no read-only jail here: {s.sandbox().jail.reason}")
        for confinement, visible in (("sandbox", True), ("jail", False)):
            ctx = s.context("exec_command")
            ctx.decision = Decision("allow", "x", "rule", confinement=confinement)
            text = ExecCommand().run(ExecCommandInput(cmd=f"cat {outside}", login=False), ctx).text
            assert ("visible outside the jail" in text) is visible, (confinement, text)


@pytest.mark.parametrize("login", [False, True])
@pytest.mark.parametrize("long", [False, True], ids=["short", "long"])
def test_a_jailed_exec_command_without_a_terminal_runs_in_the_resident_jail(ws, monkeypatch, login, long):
    """As a jailed Bash command does (a one-shot jail costs ~30 ms more); a command too long for
    one argument is read by the shell from its script file, also after `-l`."""
    from codebelt.permissions.decision import Decision
    from codebelt.sandbox import residency
    from codebelt.sandbox.manager import TRUE
    from codebelt.shell.execution.runner import MAX_ARGV_SCRIPT
    from codebelt.tools.exec_command import ExecCommand, ExecCommandInput

    taken = []
    started = residency.JailedProcess.started.__func__
    monkeypatch.setattr(residency.JailedProcess, "started",
                        classmethod(lambda cls, *a: taken.append(a[0]) or started(cls, *a)))
    with Session(ws, profile="codex", load_user_settings=False, audit=False) as s:
        sb = s.sandbox()
        if sb.jail.backend != "bwrap" or not sb._stage_abi:
            pytest.skip(f"no resident jail here: {sb.jail.reason}")
        ctx = s.context("exec_command")
        ctx.decision = Decision("allow", "x", "read-only", confinement="jail")
        cmd = "echo ran in $(cat /proc/1/comm)" + (f" # {'x' * MAX_ARGV_SCRIPT}" if long else "")
        text = ExecCommand().run(ExecCommandInput(cmd=cmd, login=login), ctx).text
    assert "ran in" in text, text
    if sb._resident_failed:
        pytest.skip(f"no resident jail here: {sb._resident_failed}")
    commands = [argv for argv in taken if argv != [TRUE]]  # not the resident's start-up probe
    # a long command's script directory is not in the resident's view: a one-shot jail reads it
    assert bool(commands) is not long, taken
    assert ("ran in python" in text) is not long, text  # pid 1 is the resident's init, or bwrap


def test_exec_command_confined_to_a_jail_that_does_not_work_is_refused(ws, tmp_path):
    from codebelt.permissions.decision import Decision
    from codebelt.tool import ToolError
    from codebelt.tools.exec_command import ExecCommand, ExecCommandInput

    marker = tmp_path / "ran"
    with Session(ws, profile="codex", settings={"sandbox": {"jail": False}}, load_user_settings=False,
                 audit=False) as s:
        ctx = s.context("exec_command")
        ctx.decision = Decision("allow", "x", "read-only", confinement="jail")
        with pytest.raises(ToolError) as info:
            ExecCommand().run(ExecCommandInput(cmd=f"touch {marker}"), ctx)
    assert "read-only jail" in str(info.value) and not marker.exists()


def test_the_audit_log_records_codex_calls_confined_as_bash_ones(ws, tmp_path):
    import sqlite3

    (ws / "a.txt").write_text("alpha\n")
    rows = {}
    for profile, calls in (("claude-code", [("Bash", {"command": "cat a.txt"}),
                                           ("Bash", {"command": "touch b.txt"}),
                                           ("ApplyPatch", {"input": "*** Begin Patch\n*** Add File: c.txt\n+c\n*** End Patch"})]),
                           ("codex", [("exec_command", {"cmd": "cat a.txt", "login": False}),
                                      ("exec_command", {"cmd": "touch b2.txt", "login": False}),
                                      ("apply_patch", {"input": "*** Begin Patch\n*** Add File: c2.txt\n+c\n*** End Patch"})])):
        db = tmp_path / f"{profile}.db"
        with Session(ws, profile=profile, audit=db, mode="bypassPermissions", load_user_settings=False) as s:
            for name, args in calls:
                s.call(name, args)
        rows[profile] = [r[0] for r in sqlite3.connect(db).execute("SELECT confinement FROM calls ORDER BY rowid")]
    assert rows["codex"] == rows["claude-code"], rows


def test_task_input_and_write_stdin_are_listed_as_starting_programs(ws):
    with Session(ws, load_user_settings=False, audit=False) as s:
        assert {"Bash", "TaskInput"} <= s._tools.starting_programs()
    with Session(ws, profile="codex", load_user_settings=False, audit=False) as s:
        assert {"exec_command", "write_stdin", "apply_patch", "Bash", "ApplyPatch"} <= s._tools.starting_programs()


# -- credentials: masked for an exec_command auto-allowed in the sandbox, as for Bash -------------
from tests.security.test_credential_masks import _leaks, home  # noqa: E402,F401 - the planted home fixture


@pytest.mark.parametrize("tty", [False, True])
def test_exec_command_auto_allowed_in_the_sandbox_sees_no_credential(home, make_session, tty):  # noqa: F811
    from tests.sandbox.conftest import backend_unusable

    if backend_unusable("bwrap"):
        pytest.skip("bwrap cannot work here (sandboxed auto-allow needs it)")
    s = make_session(home / "project", profile="codex", settings={"sandbox": {"mode": "bwrap", "autoAllowBash": True}})
    command = ("touch made.txt && python3 -c \"import os; h=os.path.expanduser('~')\n"
               "for p in ('.git-'+'credentials', '.ne'+'trc', '.ss'+'h/secret'):\n"
               "  try: print(open(os.path.join(h, p)).read())\n"
               "  except OSError as e: print(e)\"")
    result = s.call("exec_command", {"cmd": command, "tty": tty, "login": False, "yield_time_ms": 20_000})
    assert "Process exited with code 0" in result.text, result.text  # it ran, unasked
    assert (home / "project" / "made.txt").exists()
    assert not _leaks(result.text), result.text
