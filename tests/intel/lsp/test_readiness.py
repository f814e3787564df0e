"""A language server is asked only once its own reports say its answers are whole; until then,
and whenever it misbehaves, the index answers at once and says why. Servers start at session
start for the languages the workspace holds; a server that stops reading its input is killed
rather than written to for ever."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from pathlib import Path

from codebelt import Session
from codebelt.tools._services import lsp_manager

from .test_bad_servers import SERVERS, SOURCE, processes_with, wait_gone


def settings(script: str, marker: str, *args: str, timeout_ms: int = 1500) -> dict:
    return {"lsp": {"autoDetect": False, "requestTimeoutMs": timeout_ms, "startTimeoutMs": 10_000,
                    "servers": {"bad": {"command": sys.executable, "args": [str(SERVERS / script), marker, *args],
                                        "extensions": [".py"]}}}}


def manager_of(s: Session, seconds: float = 30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        m = s._services.peek(lsp_manager)
        if m is not None:
            return m
        time.sleep(0.05)
    raise AssertionError("the session did not make its language servers at start")


def wait_state(s: Session, name: str, state: str, seconds: float = 30) -> None:
    m = manager_of(s, seconds)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if m.status().get(name, {}).get("state") == state:
            return
        time.sleep(0.05)
    raise AssertionError(f"{name} never became {state}: {m.status()}")


def methods_received(s: Session) -> list[str]:
    """What loads_forever.py was sent (it says so on its stderr)."""
    slot = manager_of(s)._slots["bad"]
    client = slot.starting or slot.client
    return client.stderr_tail(100_000).split() if client else []


def was_sent(s: Session, method: str, seconds: float = 30) -> bool:
    """Whether loads_forever.py says it was sent `method`: its stderr is read by a thread of its
    own, which may come to a line after the answer that followed it was handled."""
    deadline = time.monotonic() + seconds
    while method not in methods_received(s):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_server_still_loading_is_not_asked_and_the_index_answers(ws):
    (ws / "m.py").write_text(SOURCE)
    marker = f"codebelt-lsp-test-{uuid.uuid4().hex[:8]}"
    with Session(ws, settings=settings("loads_forever.py", marker)) as s:
        wait_state(s, "bad", "loading")  # started at session start: no call was made
        assert was_sent(s, "initialize"), methods_received(s)
        texts = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(texts) < 3:
            r = s.call("LSP", {"operation": "goToDefinition", "filePath": "m.py", "line": 5, "character": 7})
            assert r.data["backend"] == "tree-sitter", r.text
            assert "m.py:1:5" in r.text, r.text  # not the server's wrong answer (line 3)
            assert "the bad language server is loading the project" in r.text, r.text
            if "(Loading the universe)" in r.text:  # once its report came, the note names it
                texts.append(r.text)
        assert len(texts) == 3
        assert was_sent(s, "textDocument/documentSymbol"), methods_received(s)  # the warm-up question
        assert "textDocument/definition" not in methods_received(s)
    assert wait_gone(marker) == []


def test_no_server_starts_for_a_language_the_workspace_lacks_or_when_told_not_to(ws):
    (ws / "notes.txt").write_text("def helper(): pass\n")
    (ws / "secret.py").write_text(SOURCE)
    marker = f"codebelt-lsp-test-{uuid.uuid4().hex[:8]}"
    # the only Python file is one the session may not read: nothing is opened or started for it
    denied = {**settings("loads_forever.py", marker), "permissions": {"deny": ["Read(secret.py)"]}}
    with Session(ws, settings=denied) as s:
        assert manager_of(s).status() == {}
    (ws / "secret.py").unlink()
    (ws / "m.py").write_text(SOURCE)
    off = {**settings("loads_forever.py", marker), "intel": {"startWithSession": False}}
    with Session(ws, settings=off) as s:
        time.sleep(0.5)
        assert s._services.peek(lsp_manager) is None
        assert processes_with(marker) == []


def test_a_server_that_stops_reading_its_input_is_killed_and_the_call_falls_back(ws):
    # larger than a pipe's buffer: a blocking write of it to this server never returns. One long
    # string, not thousands of lines: the fallback's own parse of the file stays cheap under load
    (ws / "m.py").write_text(SOURCE + 'padding = "' + "padding " * 55_000 + '"\n')
    marker = f"codebelt-lsp-test-{uuid.uuid4().hex[:8]}"
    with Session(ws, settings=settings("never_reads.py", marker)) as s:
        wait_state(s, "bad", "ready")
        results = []
        call = threading.Thread(target=lambda: results.append(s.call(
            "LSP", {"operation": "goToDefinition", "filePath": "m.py", "line": 5, "character": 7})), daemon=True)
        call.start()
        call.join(120)  # not a speed bound: a blocked write would never return
        assert results, "the call blocked writing to a server that does not read"
        r = results[0]
        assert not r.is_error, r.text
        assert r.data["backend"] == "tree-sitter", r.text
        assert "m.py:1:5" in r.text
        assert "did not read its input" in r.text, r.text
        assert wait_gone(marker) == [], "the stuck server was not killed"
