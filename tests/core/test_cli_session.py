"""`codebelt call` keeps a session per workspace: Read then Edit across processes, the Bash
directory, `--session`, `--new-session`; one-shot Bash runs to its timeout, live on a terminal."""

from __future__ import annotations

import json
import os
import pty
import stat
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "codebelt.cli", "call"]


def call(ws: Path, tool: str, inp: dict, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, tool, json.dumps(inp), "--root", str(ws), *extra],
                          capture_output=True, text=True, timeout=60)


def test_read_then_edit_in_separate_calls(ws):
    (ws / "a.txt").write_text("hello world\n")
    assert call(ws, "Read", {"file_path": "a.txt"}).returncode == 0
    r = call(ws, "Edit", {"file_path": "a.txt", "old_string": "hello", "new_string": "bye"}, "--mode", "acceptEdits")
    assert r.returncode == 0, r.stderr
    assert (ws / "a.txt").read_text() == "bye world\n"
    # consecutive edits work without re-reading, as in one session
    r = call(ws, "Edit", {"file_path": "a.txt", "old_string": "bye", "new_string": "hi"}, "--mode", "acceptEdits")
    assert r.returncode == 0 and (ws / "a.txt").read_text() == "hi world\n"


def test_stale_reads_still_refused_and_unread_files_explained(ws):
    (ws / "a.txt").write_text("one\n")
    call(ws, "Read", {"file_path": "a.txt"})
    (ws / "a.txt").write_text("one\ntwo\n")  # changed by someone else since the Read
    r = call(ws, "Edit", {"file_path": "a.txt", "old_string": "one", "new_string": "1"}, "--mode", "acceptEdits")
    assert r.returncode == 1 and "modified since read" in r.stderr
    (ws / "b.txt").write_text("x\n")
    r = call(ws, "Write", {"file_path": "b.txt", "content": "y\n"}, "--mode", "acceptEdits")
    assert r.returncode == 1 and "has not been read yet" in r.stderr and "codebelt call Read" in r.stderr
    assert (ws / "b.txt").read_text() == "x\n"


def test_sessions_are_separate_and_can_start_afresh(ws):
    (ws / "a.txt").write_text("a\n")
    call(ws, "Read", {"file_path": "a.txt"}, "--session", "one")
    edit = {"file_path": "a.txt", "old_string": "a", "new_string": "b"}
    assert "not been read" in call(ws, "Edit", edit, "--session", "two", "--mode", "acceptEdits").stderr
    assert "not been read" in call(ws, "Edit", edit, "--session", "one", "--new-session", "--mode", "acceptEdits").stderr
    bad = call(ws, "Read", {"file_path": "a.txt"}, "--session", "../evil")
    assert bad.returncode == 2 and "--session" in bad.stderr


def test_the_shell_directory_carries_over(ws):
    (ws / "sub").mkdir()
    assert call(ws, "Bash", {"command": "cd sub"}).returncode == 0
    assert call(ws, "Bash", {"command": "pwd"}).stdout.strip() == str(ws.resolve() / "sub")


def test_state_is_private(ws):
    call(ws, "Read", {"file_path": "."})
    base = Path(os.environ["XDG_STATE_HOME"]) / "codebelt" / "cli"
    files = list(base.glob("*/default.json"))
    assert files and stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(files[0].parent.stat().st_mode) == 0o700


def test_one_shot_bash_runs_past_the_auto_background_budget(ws, tmp_path):
    settings = tmp_path / "s.json"
    settings.write_text(json.dumps({"bash": {"autoBackgroundMs": 200}}))
    r = call(ws, "Bash", {"command": "sleep 1; echo finished"}, "--settings", str(settings))
    assert r.returncode == 0 and r.stdout.strip() == "finished", r.stdout + r.stderr
    bg = call(ws, "Bash", {"command": "sleep 1", "run_in_background": True})
    assert bg.returncode == 1 and "Background commands are not available here" in bg.stderr


def test_live_output_on_a_terminal(ws):
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*CLI, "Bash", json.dumps({"command": "for i in 1 2 3; do echo tick$i; sleep 0.8; done"}), "--root", str(ws),
             "--mode", "bypassPermissions"],
            stdout=subprocess.PIPE, stderr=follower, text=True)
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(follower)
    live = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        live += chunk
    os.close(leader)
    assert out.split() == ["tick1", "tick2", "tick3"]
    assert b"tick1" in live and b"tick2" in live  # shown while it ran, on the terminal
