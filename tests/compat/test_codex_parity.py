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
