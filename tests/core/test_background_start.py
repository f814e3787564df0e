"""What a session begins in the background for later calls (the code index's build, the language
servers, the checkpoint baseline) waits while a call runs: observed through the session's
`CallsRunning` (who is held now, who ever was) and the index's own state, never by timing."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.intel.index import CodeIndex
from codebelt.tool import CallsRunning
from codebelt.tools._services import checkpoints, code_index

WAIT = 60  # seconds: a bound on waiting for a state, never a speed assertion

# Warm start on (tests' sessions turn it off by default), no language server found on the
# machine (each would be a node process): the index and the baseline are what start.
WARM = {"intel": {"startWithSession": True}, "lsp": {"autoDetect": False}}


def project(root: Path, n: int = 6) -> None:
    for i in range(n):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n\n\nvalue{i} = f{i}()\n")


def open_session(root: Path, **settings) -> Session:
    return Session(root, mode="bypassPermissions", audit=False, load_user_settings=False,
                   settings={**WARM, **settings})


@pytest.fixture
def first_call_held(monkeypatch):
    """The start threads wait for a first call however late it comes (a test's own set-up may
    take longer than the quiet moment they wait for); the call lets them go (`release`)."""
    monkeypatch.setattr(CallsRunning, "QUIET", 3600.0)

    def release(calls: CallsRunning) -> None:
        calls.quiet = 0.0  # they go once the call running now ends
    return release


def holding(*who: str):
    return lambda calls: all(w in calls.holding for w in who)


def eventually(predicate, timeout: float = WAIT) -> bool:
    """Whether `predicate()` comes true within `timeout` (looked at every 20 ms)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        threading.Event().wait(0.02)
    return True


def test_a_call_holds_the_warm_up_and_the_baseline_which_go_on_after_it(ws, first_call_held):
    project(ws)
    s = open_session(ws)
    calls = s._services.calls
    seen: dict[str, object] = {}

    def inside_the_call(payload):
        # the call is running: both wait for it, and neither has begun anything yet
        seen["held"] = calls.wait_for(holding("code index", "checkpoint baseline"), WAIT)
        seen["index"] = s._services.peek(code_index)
        seen["book"] = s._services.peek(checkpoints)
        first_call_held(calls)
        return None

    s.add_hook("PreToolUse", inside_the_call)
    try:
        r = s.call("Read", {"file_path": "m0.py"})
        assert not r.is_error, r.text
        assert seen == {"held": True, "index": None, "book": None}
        # after the call: both resume by themselves (nobody asks the index or runs a command)
        assert eventually(lambda: s._services.peek(code_index) is not None)
        index = s._services.peek(code_index)
        index._thread.join(WAIT)  # joined directly: waiting through `index.wait` would release a hold
        assert index.has_earlier_build() and index.complete()
        assert eventually(lambda: getattr(s._services.peek(checkpoints), "tracker", None) is not None)
        book = s._services.peek(checkpoints)
        assert book.tracker.filled.wait(WAIT)
        assert book.tracker.entries[str(ws / "m1.py")].hash  # kept before any command asked
    finally:
        s.close()


def index_during_a_call(tmp_path: Path) -> tuple[CallsRunning, CodeIndex]:
    """A small project's index, not started, whose build gives way to a call now running."""
    root = tmp_path / "ws"
    root.mkdir()
    project(root)
    calls = CallsRunning(quiet=0.0)
    calls.begin()
    return calls, CodeIndex(root, tmp_path / "cache", workers=1, pause=calls)


@pytest.mark.parametrize("workers,files", [(1, 8), (2, 120)], ids=["in-thread", "parse-workers"])
def test_a_build_under_way_pauses_between_files_while_a_call_runs(tmp_path, workers, files):
    """Held between two files (parsed in the build's thread) or two chunks (in worker
    processes): nothing new begins while the call runs; the build completes after it."""
    root = tmp_path / "ws"
    root.mkdir()
    project(root, files)
    calls = CallsRunning(quiet=0.0)
    marks: list[int] = []

    def progress(done: int, total: int) -> None:
        if done == 1:
            calls.begin()  # a call begins once the build is under way
            marks.append(done)

    index = CodeIndex(root, tmp_path / "cache", workers=workers, progress=progress, pause=calls)
    try:
        index.start()
        assert calls.wait_for(holding("code index"), WAIT)
        done_when_held = index._progress[0]
        assert index.building and done_when_held < files
        assert calls.wait_for(holding("code index"), 0.5)  # still held: nobody ended the call
        assert index._progress[0] == done_when_held  # no file began meanwhile
        calls.end()
        index._thread.join(WAIT)
        assert not index._thread.is_alive() and index._progress == (files, files)
        assert [s.name for s in index.definitions(f"f{files - 1}").symbols] == [f"f{files - 1}"]
        assert calls.held == {"code index"} and marks == [1]
    finally:
        index.close()


def test_a_caller_waiting_for_the_build_releases_the_hold(tmp_path):
    """A call that needs the index (the LSP tool waiting for a first build, RepoMap) gets it
    while it runs: the build does not wait for the very call that waits for it."""
    calls, index = index_during_a_call(tmp_path)
    try:
        index.start()
        assert calls.wait_for(holding("code index"), WAIT)
        assert index.wait(WAIT)  # as a call does: the build goes on though the call still runs
        assert index.complete() and calls._running == 1
        assert [s.name for s in index.definitions("f3").symbols] == ["f3"]
    finally:
        calls.end()
        index.close()


def test_a_callers_own_refresh_is_not_stuck_behind_a_paused_build(tmp_path):
    """A build paused mid-way holds the build's lock: a caller's refresh (made while the call
    that paused it still runs) lets it finish, then runs, rather than waiting for the call."""
    root = tmp_path / "ws"
    root.mkdir()
    project(root, 8)
    calls = CallsRunning(quiet=0.0)

    def progress(done: int, total: int) -> None:
        if done == 1 and not calls.held:
            calls.begin()

    index = CodeIndex(root, tmp_path / "cache", workers=1, progress=progress, pause=calls)
    try:
        index.start()
        assert calls.wait_for(holding("code index"), WAIT)
        build = index._thread
        stats = []
        caller = threading.Thread(target=lambda: stats.append(index.refresh()), daemon=True)
        caller.start()
        caller.join(WAIT)
        assert stats, "the refresh waited for the paused build, which waited for the call"
        assert not build.is_alive() and calls._running == 1
        assert stats[0].listed == 8 and stats[0].unchanged == 8  # the paused build had parsed them all
    finally:
        calls.end()
        index.close()


def test_the_first_lsp_call_answers_from_the_index_while_the_warm_up_waits(ws, first_call_held):
    project(ws)
    (ws / "use.py").write_text("from m2 import f2\n\nprint(f2())\n")
    with open_session(ws) as s:
        r = s.call("LSP", {"operation": "goToDefinition", "filePath": "use.py", "line": 3, "character": 7})
        assert not r.is_error, r.text
        assert r.data["backend"] == "tree-sitter", r.text
        assert "m2.py:1:5" in r.text, r.text
        # the warm-up's own start waited for that call (the call built what it needed itself)
        assert "code index" in s._services.calls.held


def test_close_while_the_warm_up_is_held_ends_every_start_thread(ws, first_call_held):
    project(ws)
    s = open_session(ws)
    calls = s._services.calls
    in_call, leave = threading.Event(), threading.Event()

    def blocking(payload):
        in_call.set()
        leave.wait(WAIT)
        return None

    s.add_hook("PreToolUse", blocking)
    results = []
    caller = threading.Thread(target=lambda: results.append(s.call("Read", {"file_path": "m0.py"})), daemon=True)
    caller.start()
    try:
        assert in_call.wait(WAIT)
        assert calls.wait_for(holding("code index", "checkpoint baseline"), WAIT)
        index_threads = {t for t in threading.enumerate() if t.name == "codebelt-intel-index"}
        s.close()  # the call is still inside its hook
        assert len(s._starting) == 2 and not any(t.is_alive() for t in s._starting)
        # no index thread of its own was begun (others may be another test's, ending)
        assert {t for t in threading.enumerate() if t.name == "codebelt-intel-index"} <= index_threads
        assert calls.holding == {}
        assert s._services.peek(code_index) is None and s._services.peek(checkpoints) is None
    finally:
        leave.set()
        caller.join(WAIT)
    assert results  # the call itself ended too


def test_close_while_a_build_is_held_stops_it(tmp_path):
    calls, index = index_during_a_call(tmp_path)
    index.start()
    assert calls.wait_for(holding("code index"), WAIT)
    build = index._thread
    assert index.close() is None  # the held build stopped within close's wait
    assert not build.is_alive() and calls.holding == {}
    calls.end()


def test_a_writing_command_that_comes_first_still_gets_its_pre_images(ws, first_call_held):
    """The baseline's start waits for a quiet moment, but a command that needs it does not wait
    for that moment: it begins the baseline itself, as the session's start would have, and runs
    once every directory is watched — its changes are all recorded, and each file's earlier
    content is given back by a rewind or, if the background fill had not reached it yet, said
    not kept (the rule for any command at a session's start: docs/checkpoints.md)."""
    (ws / "notes.txt").write_text("before\n")
    project(ws)
    with open_session(ws) as s:
        r = s.call("Bash", {"command": "echo after > notes.txt && rm m1.py"})
        assert not r.is_error, r.text
        assert (ws / "notes.txt").read_text() == "after\n" and not (ws / "m1.py").exists()
        assert "checkpoint baseline" in s._services.calls.holding  # the session's own start still waits
        [cp] = s.checkpoints()
        book = s._checkpoints()
        changed = {Path(c.path).name for c in book.get(cp["id"]).changes}
        assert changed == {"notes.txt", "m1.py"}, cp  # every directory was watched before it ran
        book.tracker.filled.wait(WAIT)
        s.rewind(cp["id"], force=True)
        kept = changed - {Path(p).name for p in cp["notKept"]}
        if "notes.txt" in kept:
            assert (ws / "notes.txt").read_text() == "before\n"
        if "m1.py" in kept:
            assert (ws / "m1.py").read_text().startswith("def f1():")
