"""`codebelt serve --http` bounds what clients can make it keep: a cap on open MCP sessions,
idle sessions ended, and a clean exit (temp directory removed) on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .helpers import CODEBELT, http_server

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-11-25"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def post(url: str, body: dict, session: str | None = None) -> tuple[int, str | None]:
    headers = dict(HEADERS)
    if session:
        headers["Mcp-Session-Id"] = session
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            r.read()
            return r.status, r.headers.get("mcp-session-id")
    except urllib.error.HTTPError as e:
        return e.code, None


def open_session(url: str) -> tuple[int, str | None]:
    status, sid = post(url, INIT)
    if status == 200 and sid:
        post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    return status, sid


def test_open_sessions_are_capped(project):
    with http_server(project, "--max-sessions", "2") as url:
        assert open_session(url)[0] == 200
        assert open_session(url)[0] == 200
        status, _ = open_session(url)
        assert status == 503  # refused until one ends; existing ones still work


def test_idle_sessions_are_ended(project):
    with http_server(project, "--max-sessions", "1", "--session-idle-timeout", "1") as url:
        status, sid = open_session(url)
        assert status == 200 and sid
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the idle session is reaped: room for a new one
            time.sleep(0.5)
            status, _ = open_session(url)
            if status == 200:
                break
        assert status == 200
        assert post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid)[0] == 404


class _StdioClient:
    """Newline-delimited JSON-RPC over a server's stdin/stdout, answers read by a thread."""

    def __init__(self, proc: subprocess.Popen):
        import queue
        import threading

        self.proc = proc
        self.lines: "queue.Queue[dict]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                pass

    def send(self, body: dict) -> None:
        self.proc.stdin.write(json.dumps(body).encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self, request_id: int) -> dict:
        while True:
            msg = self.lines.get(timeout=30)
            if msg.get("id") == request_id:
                return msg


def _background_call(marker: str) -> dict:
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "Bash", "arguments": {"command": f"sleep {marker}", "run_in_background": True}}}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("how", ["http", "stdio"])
def test_a_signal_ends_the_server_quietly_after_closing_its_sessions(project, tmp_path, how, signum):
    # A client is connected and has a background task running: the server still exits 0, says
    # nothing (no traceback, no "never awaited"), and leaves no process and no temp directory.
    import random

    from .helpers import processes_with

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    marker = f"1000.{random.randrange(10**8):08d}"
    extra = ["--http", "127.0.0.1:0"] if how == "http" else []
    log = tmp_path / "err.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [CODEBELT, *project.serve_args(*extra)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=err, env={**os.environ, **project.env(), "TMPDIR": str(tmp)}, start_new_session=True)
    try:
        if how == "http":
            deadline = time.monotonic() + 30
            while "listening on " not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.05)
            url = log.read_text().split("listening on ", 1)[1].split()[0]
            status, sid = open_session(url)
            assert status == 200 and post(url, _background_call(marker), sid)[0] == 200
        else:
            client = _StdioClient(proc)
            client.send(INIT)
            assert "result" in client.answer(1)
            client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            client.send(_background_call(marker))
            assert "result" in client.answer(2)
        assert processes_with(marker)
        proc.send_signal(signum)
        assert proc.wait(timeout=60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = log.read_text()
    assert "Traceback" not in err and "never awaited" not in err and "Error" not in err, err
    if how == "http":
        assert err.strip().splitlines() == [f"codebelt MCP server listening on {url}"], err
    assert list(tmp.glob("codebelt-*")) == [], err
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_with(marker)


def test_temp_dirs_of_dead_processes_are_swept(tmp_path, monkeypatch):
    import codebelt.session as session_mod
    from codebelt import Session

    dead = subprocess.Popen(["true"])
    dead.wait()
    orphan = tmp_path / f"codebelt-0123abcd-p{dead.pid}-xyz"
    (orphan / "results").mkdir(parents=True)
    alive = tmp_path / f"codebelt-0123abce-p{os.getpid() if False else 1}-xyz"  # pid 1 is alive
    alive.mkdir()
    unrelated = tmp_path / "codebelt-notours"
    unrelated.mkdir()
    monkeypatch.setattr(session_mod.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(session_mod.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(session_mod, "_swept", False)
    ws = tmp_path / "ws"
    ws.mkdir()
    with Session(ws, audit=False, load_user_settings=False) as s:
        own = s.results_dir.parent
        assert own.exists() and own.parent == tmp_path
    assert not orphan.exists() and alive.exists() and unrelated.exists() and not own.exists()


def test_a_live_sessions_dir_survives_whatever_pid_its_name_holds(tmp_path, monkeypatch):
    """A session in another pid namespace (a container sharing /tmp) has a pid that names no
    process here: its directory is kept as long as its owner holds the directory's lock."""
    import sys

    import codebelt.session as session_mod

    dead = subprocess.Popen(["true"])
    dead.wait()
    held = tmp_path / f"codebelt-0123abcd-p{dead.pid}-held"
    held.mkdir()
    owner = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)", str(held)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "held"
        monkeypatch.setattr(session_mod.tempfile, "gettempdir", lambda: str(tmp_path))
        monkeypatch.setattr(session_mod, "_swept", False)
        session_mod._sweep_orphaned_temp_dirs()
        assert held.exists()
    finally:
        owner.kill()
        owner.wait()
    monkeypatch.setattr(session_mod, "_swept", False)
    session_mod._sweep_orphaned_temp_dirs()
    assert not held.exists()  # its owner is gone now


@pytest.mark.parametrize("bad", [{"permissions": {"allow": ["Bash(unclosed"]}}, {"permissions": {"deny": ["(x)"]}}])
def test_a_session_that_fails_to_start_leaves_no_temp_dir(tmp_path, monkeypatch, bad):
    import codebelt.session as session_mod
    from codebelt import CodebeltError, Session

    monkeypatch.setattr(session_mod.tempfile, "tempdir", str(tmp_path))
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(CodebeltError):  # the rule is parsed after the temp dir exists
        Session(ws, load_user_settings=False, audit=False, settings=bad)
    assert [p.name for p in tmp_path.iterdir()] == ["ws"]


async def test_mcp_client_hears_when_a_task_ends(project):
    import asyncio

    from .helpers import connect

    got: list = []

    async def on_log(params) -> None:
        got.append(params)

    async with connect("stdio", "legacy", project, logging_callback=on_log) as client:
        r = await client.call_tool("Bash", {"command": "echo hi", "run_in_background": True})
        tid = r.structured_content["backgroundTaskId"]
        for _ in range(200):
            if any(isinstance(p.data, dict) and p.data.get("id") == tid for p in got):
                break
            await asyncio.sleep(0.05)
    notes = [p for p in got if isinstance(p.data, dict) and p.data.get("id") == tid]
    assert notes and notes[0].data["event"] == "task_end" and notes[0].data["status"] == "completed"
    assert notes[0].logger == "codebelt.tasks"
