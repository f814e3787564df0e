"""`codebelt call` keeps a session per workspace: Read then Edit across processes, the Bash
directory, `--session`, `--new-session`; one-shot Bash runs to its timeout, live on a terminal."""

from __future__ import annotations

import json
import os
import pty
import stat
import subprocess
import sys
import time
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


def _on_a_terminal(argv: list[str]) -> tuple[int, bytes]:
    """Run with stdout and stderr both on one pseudo-terminal; what the terminal showed."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    finally:
        os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return proc.wait(timeout=60), shown


def test_live_output_is_shown_once_on_a_terminal(ws):
    command = "for i in 1 2 3; do echo tick$i; sleep 1.1; done; echo last; exit 3"
    code, shown = _on_a_terminal([*CLI, "Bash", json.dumps({"command": command}), "--root", str(ws),
                                  "--mode", "bypassPermissions"])
    text = shown.decode().replace("\r\n", "\n")
    assert code == 1, text  # the command failed: an error result, as Claude Code reports it
    for line in ("tick1", "tick2", "tick3", "last"):
        assert text.count(line) == 1, text  # streamed while it ran, never printed again
    assert "Exit code 3" in text and text.index("last") < text.index("Exit code 3")


def test_one_audit_session_per_cli_session(ws, tmp_path):
    from codebelt import audit

    db = tmp_path / "audit.db"
    env = {**os.environ, "CODEBELT_AUDIT_DB": str(db)}

    def run(*extra: str) -> None:
        r = subprocess.run([*CLI, "Read", json.dumps({"file_path": "."}), "--root", str(ws), *extra],
                           capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode in (0, 1), r.stderr

    run()
    run()
    run("--session", "other")
    run("--new-session")
    ids = [row["session_id"] for row in sorted(audit.query(db, tail=10), key=lambda row: row["id"])]
    assert len(ids) == 4
    assert ids[0] == ids[1] and len({ids[0], ids[2], ids[3]}) == 3, ids


def test_what_a_result_points_to_is_readable_by_the_next_call(ws):
    # 200,000 characters of output: the result keeps the head and tail and names the file
    r = call(ws, "Bash", {"command": "seq 1 40000"}, "--mode", "bypassPermissions")
    assert r.returncode == 0, r.stderr
    saved = next(w.rstrip(".") for w in r.stdout.split() if w.rstrip(".").endswith(".log") and w.startswith("/"))
    state = Path(os.environ["XDG_STATE_HOME"]) / "codebelt" / "cli"
    assert Path(saved).is_file() and state in Path(saved).parents  # kept with the CLI session
    # the next call reads it without asking (no approver here: an ask would be refused)
    r = call(ws, "Read", {"file_path": saved, "offset": 39999, "limit": 2})
    assert r.returncode == 0 and "40000" in r.stdout, r.stdout + r.stderr
    # a new session starts without them
    assert call(ws, "Read", {"file_path": "."}, "--new-session").returncode in (0, 1)
    assert not Path(saved).exists()


def test_kept_results_are_bounded(tmp_path, monkeypatch):
    from codebelt.cli import session_state

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    st = session_state.SessionState(tmp_path, "default")
    now = time.time()
    for i in range(6):
        d = st.results / f"call-{i}"
        d.mkdir(parents=True)
        (d / "out.log").write_bytes(b"x" * 1000)
        os.utime(d, (now - 100 + i, now - 100 + i))
    old = st.results / "call-old"
    old.mkdir()
    os.utime(old, (now - session_state.RESULTS_MAX_AGE_S - 10,) * 2)
    monkeypatch.setattr(session_state, "RESULTS_MAX_BYTES", 3500)
    st.prune_results()
    assert sorted(p.name for p in st.results.iterdir()) == ["call-3", "call-4", "call-5"]
    monkeypatch.setattr(session_state, "RESULTS_MAX_CALLS", 1)
    st.prune_results()
    assert [p.name for p in st.results.iterdir()] == ["call-5"]
