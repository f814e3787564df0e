"""Language servers that misbehave — crash at start, never answer, print garbage, hang after
`initialize` — get a fast, clear fallback to tree-sitter, a restart where it helps, and leave no
process behind when the session ends."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import pytest

from codebelt import Session

SERVERS = Path(__file__).parents[2] / "fixtures" / "lsp" / "servers"
SOURCE = "def helper(x):\n    return x + 1\n\n\nprint(helper(2))\n"


def settings(script: str, marker: str, timeout_ms: int = 1500) -> dict:
    return {"lsp": {"autoDetect": False, "requestTimeoutMs": timeout_ms, "startTimeoutMs": 3000,
                    "servers": {"bad": {"command": sys.executable, "args": [str(SERVERS / script), marker],
                                        "extensions": [".py"]}}}}


def processes_with(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(pid))
    return found


def wait_gone(marker: str, seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = processes_with(marker)
        if not left:
            return []
        time.sleep(0.1)
    return processes_with(marker)


# (server script, what the fallback note says, most seconds a call may take)
CASES = {
    "crash_at_start.py": ("not available", 6.0),
    "never_answers.py": ("not available", 6.0),
    "garbage.py": ("not available", 6.0),
    "stuck_after_init.py": ("did not answer", 4.0),
}


@pytest.mark.parametrize("script", sorted(CASES))
def test_bad_server_falls_back_to_tree_sitter(script, ws):
    note, most = CASES[script]
    (ws / "m.py").write_text(SOURCE)
    marker = f"codebelt-lsp-test-{uuid.uuid4().hex[:8]}"
    with Session(ws, settings=settings(script, marker)) as s:
        answers = []
        deadline = time.monotonic() + 10  # past the 3 s start timeout: the state has settled
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            r = s.call("LSP", {"operation": "goToDefinition", "filePath": "m.py", "line": 5, "character": 7})
            answers.append((time.monotonic() - t0, r))
            if note in r.text:
                break
            time.sleep(0.3)
        for took, r in answers:
            assert not r.is_error, r.text
            assert r.data["backend"] == "tree-sitter", r.text
            assert "m.py:1:5" in r.text, r.text  # tree-sitter still finds the definition
            assert took < most, (took, r.text)
        assert any(note in r.text for _, r in answers), [r.text for _, r in answers]
        if script == "crash_at_start.py":
            assert "cannot load the grammar" in answers[-1][1].text  # the server's stderr, in the reason
    assert wait_gone(marker) == [], "a language server process outlived the session"


def test_stuck_server_is_restarted_then_given_up(ws):
    (ws / "m.py").write_text(SOURCE)
    marker = f"codebelt-lsp-test-{uuid.uuid4().hex[:8]}"
    with Session(ws, settings=settings("stuck_after_init.py", marker, timeout_ms=300)) as s:
        texts = []
        deadline = time.monotonic() + 60  # each start is a jail's start: a loaded machine takes longer
        while time.monotonic() < deadline and not any("gave up after 3 restarts" in t for t in texts):
            r = s.call("LSP", {"operation": "hover", "filePath": "m.py", "line": 1, "character": 5})
            texts.append(r.text)
            time.sleep(0.2)
        assert all("(backend: tree-sitter)" in t for t in texts)
        assert any("gave up after 3 restarts" in t for t in texts), texts[-1]
    assert wait_gone(marker) == []


def test_edit_diagnostics_survive_a_bad_server(ws):
    (ws / "m.py").write_text(SOURCE)
    marker = f"codebelt-lsp-test-{uuid.uuid4().hex[:8]}"
    with Session(ws, mode="acceptEdits", settings=settings("stuck_after_init.py", marker, 300)) as s:
        s.call("Read", {"file_path": "m.py"})
        time.sleep(1.0)  # let it start
        t0 = time.monotonic()
        r = s.call("Edit", {"file_path": "m.py", "old_string": "return x + 1", "new_string": "return (x +"})
        took = time.monotonic() - t0
        assert not r.is_error, r.text
        assert (ws / "m.py").read_text().count("return (x +") == 1  # the write happened
        assert "syntax" in r.text.lower() or "error" in r.text.lower(), r.text  # tree-sitter's answer
        assert took < 5, took
    assert wait_gone(marker) == []


def test_a_request_of_the_server_after_the_client_ended_ends_the_reader_quietly(ws, monkeypatch):
    """The reader answers the server's requests; once the client has ended, the answer cannot be
    sent, and the reader stops as for any other end (it died with a traceback on stderr)."""
    import sys
    import threading

    from codebelt.intel.lsp.client import LspClient
    from codebelt.intel.lsp.transport import encode

    raised: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    request = encode({"jsonrpc": "2.0", "id": 1, "method": "workspace/configuration", "params": {"items": []}})
    server = ws / "asks_late.py"
    server.write_text("import sys, time\nsys.stdin.buffer.readline()\n"
                      f"sys.stdout.buffer.write({request!r}); sys.stdout.flush(); time.sleep(30)\n")
    client = LspClient("late", [sys.executable, str(server)], ws)
    try:
        client._die("closed by the test")  # the client ends: its writer stops and closes the server's input
        deadline = time.monotonic() + 20
        while client.proc.poll() is None and not raised and time.monotonic() < deadline:
            reader = [t for t in threading.enumerate() if t.name == "lsp-late-out"]
            if not reader:
                break
            time.sleep(0.05)
        assert not [t for t in threading.enumerate() if t.name == "lsp-late-out"], "the reader did not stop"
    finally:
        client.close(0.0)
    assert raised == [], raised
