"""Checkpoints' watches kept between `codebelt call` processes by the resident helper: real
processes, real inotify. Whatever happens between two calls — another process's writes, a
directory moved in, a concurrent call, a call killed holding the state, the kernel's queue
overflowing — the next call's checkpoint is what a fresh walk of the tree would give, and the
helper's log ($CODEBELT_HELPER_LOG) says whether the call began from the kept state or walked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from codebelt.checkpoints import keeping
from codebelt.checkpoints.entries import Entry
from codebelt.checkpoints.journal import Journal
from codebelt.cli import helper

from ..core.test_cli_helper import Helper, needs_pidfd

pytestmark = [needs_pidfd, pytest.mark.skipif(not helper.unconfined_self(), reason="no_new_privs set")]


class Calls(Helper):
    def bash(self, command: str, **kw) -> subprocess.CompletedProcess:
        return self.codebelt("call", "--mode", "bypassPermissions", "--sandbox", "off", "Bash",
                             json.dumps({"command": command}), **kw)

    def watches(self) -> list[tuple[int, str]]:
        """(call's pid, what it did with the kept state), in order."""
        out = []
        for line in self.log.read_text().splitlines() if self.log.exists() else []:
            event, pid, *rest = line.split(" ", 2)
            if event == "watches":
                out.append((int(pid), rest[0] if rest else ""))
        return out

    def last_start(self) -> str:
        return [w for _, w in self.watches() if not w.startswith("given")][-1]

    def checkpoints(self) -> list[dict]:
        r = self.codebelt("checkpoints", "--json", "--root", str(self.ws))
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def rewind(self, cid: int) -> subprocess.CompletedProcess:
        return self.codebelt("rewind", str(cid), "--root", str(self.ws))


@pytest.fixture
def calls(tmp_path: Path, ws: Path):
    (ws / "a.txt").write_text("a0\n")
    (ws / "b.txt").write_text("b0\n")
    h = Calls(tmp_path, ws)
    h.start()
    yield h
    h.stop()


def outside(cwd: Path, script: str) -> None:
    """A change made by another process, as a person's editor or another tool would."""
    subprocess.run(["bash", "-c", script], cwd=cwd, check=True, timeout=120)


@pytest.mark.parametrize("keep", [True, False], ids=["kept", "each call walks"])
def test_a_change_between_calls_is_seen(calls: Calls, tmp_path: Path, keep: bool):
    """The same calls with the watches kept and with each call walking afresh give the same
    checkpoints; the kept one drained what changed between the calls."""
    if not keep:
        calls.env["CODEBELT_HELPER_WATCHES"] = "0"
    assert calls.bash("echo a1 >> a.txt").returncode == 0
    moved = tmp_path / "elsewhere"
    (moved / "deep").mkdir(parents=True)
    (moved / "deep" / "x.txt").write_text("x0\n")
    outside(calls.ws, f"echo outside > b.txt && rm a.txt && mv {moved} moved_in")
    r = calls.bash("echo b2 >> b.txt && echo x1 >> moved_in/deep/x.txt && echo a2 > a.txt")
    assert r.returncode == 0, r.stderr
    if keep:
        assert calls.last_start() == "kept"
    else:
        assert not calls.watches()

    last = calls.checkpoints()[-1]
    assert sorted(last["paths"]) == ["a.txt", "b.txt", "moved_in/deep/x.txt"]
    done = calls.rewind(last["id"])
    assert done.returncode == 0, done.stdout + done.stderr
    # back to what was there when the call began: the other process's changes stay
    assert (calls.ws / "b.txt").read_text() == "outside\n"
    assert (calls.ws / "moved_in" / "deep" / "x.txt").read_text() == "x0\n"
    assert not (calls.ws / "a.txt").exists()


def test_calls_after_calls_keep_seeing_changes(calls: Calls):
    """Five calls in turn, another process changing a file before each: every call after the
    first begins from the kept state, and every checkpoint's earlier content is the other
    process's."""
    assert calls.bash("echo a1 >> a.txt").returncode == 0
    for i in range(1, 5):
        outside(calls.ws, f"echo outside{i} > b.txt")
        assert calls.bash(f"echo call{i} >> b.txt").returncode == 0
        assert calls.last_start() == "kept"
        cp = calls.checkpoints()[-1]
        assert cp["paths"] == ["b.txt"]
        preview = calls.codebelt("rewind", str(cp["id"]), "--dry-run", "--root", str(calls.ws))
        assert f"@@ -1,2 +1 @@\n outside{i}\n-call{i}\n" in preview.stdout, preview.stdout
    assert calls.rewind(calls.checkpoints()[-1]["id"]).returncode == 0
    assert (calls.ws / "b.txt").read_text() == "outside4\n"


def test_two_concurrent_calls_on_one_workspace(calls: Calls):
    """One call holds the kept state; a second one meanwhile walks afresh; both checkpoints are
    right, and the next call begins from a kept state again."""
    assert calls.bash("echo a1 >> a.txt").returncode == 0
    first = subprocess.Popen(
        [*_argv(calls, "while [ ! -e go ]; do sleep 0.05; done; echo a2 >> a.txt")],
        cwd=calls.ws, env=calls.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: len(calls.watches()) >= 3, "the first call took the kept state")
        assert calls.watches()[-1][1] == "kept"
        second = calls.bash("echo b1 >> b.txt && touch go")
        assert second.returncode == 0, second.stderr
        assert calls.last_start() == "fresh: in use or changed"
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
    finally:
        first.kill()
        first.wait()
    outside(calls.ws, "echo outside > b.txt")
    assert calls.bash("echo b2 >> b.txt").returncode == 0
    assert calls.last_start() == "kept"
    preview = calls.codebelt("rewind", str(calls.checkpoints()[-1]["id"]), "--dry-run", "--root", str(calls.ws))
    assert "@@ -1,2 +1 @@\n outside\n-b2\n" in preview.stdout, preview.stdout

    listed = calls.checkpoints()
    by_label = {c["label"]: c for c in listed}
    assert {"b.txt", "go"} <= set(by_label["echo b1 >> b.txt && touch go"]["paths"])
    assert "a.txt" in by_label[_label_of(listed, "echo a2")]["paths"]
    # everything since the two concurrent calls, undone
    earliest = min(c["id"] for c in listed if "go" in c["paths"] or "echo a2" in c["label"])
    done = calls.codebelt("rewind", str(earliest), "--force", "--root", str(calls.ws))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (calls.ws / "a.txt").read_text() == "a0\na1\n"
    assert (calls.ws / "b.txt").read_text() == "b0\n"
    assert not (calls.ws / "go").exists()


def test_a_call_killed_holding_the_state(calls: Calls):
    """The call that holds the kept state dies (SIGKILL, no clean-up): its state is dropped,
    the next call walks afresh and is right, and the one after begins from a kept state."""
    assert calls.bash("echo a1 >> a.txt").returncode == 0
    caller = subprocess.Popen(_argv(calls, "echo $$ > pid; sleep 60"), cwd=calls.ws, env=calls.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: (calls.ws / "pid").exists() and (calls.ws / "pid").read_text().strip(),
                  "the command started")
        holder, took = calls.watches()[-1]
        assert took == "kept"
        os.kill(holder, signal.SIGKILL)
        try:
            os.killpg(int((calls.ws / "pid").read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass
        caller.communicate(timeout=60)
    finally:
        caller.kill()
        caller.wait()
    _wait_for(lambda: "dropped: its call ended without handing it back" in calls.log.read_text(),
              "the helper dropped the state")
    outside(calls.ws, "echo outside > a.txt")
    pid = (calls.ws / "pid").read_text()  # written by the killed call: its events died with it
    assert calls.bash("echo a2 >> a.txt && echo more >> pid").returncode == 0
    cp = calls.checkpoints()[-1]
    assert sorted(cp["paths"]) == ["a.txt", "pid"]
    assert calls.rewind(cp["id"]).returncode == 0
    assert (calls.ws / "a.txt").read_text() == "outside\n"
    assert (calls.ws / "pid").read_text() == pid
    assert calls.last_start() == "fresh: none kept"

    outside(calls.ws, "echo again > b.txt")
    assert calls.bash("echo b1 >> b.txt").returncode == 0
    assert calls.last_start() == "kept"
    cp = calls.checkpoints()[-1]
    assert cp["paths"] == ["b.txt"]
    assert calls.rewind(cp["id"]).returncode == 0
    assert (calls.ws / "b.txt").read_text() == "again\n"


def test_an_overflowed_queue_falls_back_to_a_rescan(calls: Calls):
    """More events between two calls than the kernel queues (fs.inotify.max_queued_events): the
    queue says it overflowed, and the next call rescans the tree against the kept state."""
    (calls.ws / "flood").mkdir()  # watched from the first call on: every file made in it is an event
    assert calls.bash("echo a1 >> a.txt").returncode == 0
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    n = limit // 3 + 1000  # each file: created, modified, closed after writing
    if n > 60_000:
        pytest.skip(f"max_queued_events is {limit}: too many files to flood it in a test")
    outside(calls.ws, f"cd flood && python3 -c 'for i in range({n}): open(f\"f{{i}}\", \"w\").write(\"x\")'"
                      " && cd .. && echo outside > a.txt")
    assert calls.bash("echo a2 >> a.txt").returncode == 0
    assert calls.last_start() == "kept"
    assert calls.watches()[-1][1] == "given: part overflows=1"
    cp = calls.checkpoints()[-1]
    assert cp["paths"] == ["a.txt"]  # the flood was someone else's: a new baseline, not this call's
    assert calls.rewind(cp["id"]).returncode == 0
    assert (calls.ws / "a.txt").read_text() == "outside\n"
    # the state after the rescan is kept and right
    outside(calls.ws, "rm flood/f1 && echo changed > flood/f2")
    assert calls.bash("echo f > flood/f3").returncode == 0
    assert calls.last_start() == "kept"
    assert calls.checkpoints()[-1]["paths"] == ["flood/f3"]


def test_the_helper_keeps_a_bounded_number_of_states(monkeypatch):
    """Least recently used states go first, past KEPT_STATES workspaces or KEPT_ENTRIES
    entries, their descriptors closed; a state lent to a call is never the one dropped."""
    monkeypatch.setattr(helper, "_log", lambda *a: None)
    monkeypatch.setattr(helper, "KEPT_ENTRIES", 50)
    kept = helper.Kept()
    journals = []

    def give(key: str, entries: int) -> int:
        j = Journal()
        journals.append(j)
        d = j.detach()
        state = keeping.KeptState(d, {f"/w/{key}/{i}": Entry("dir") for i in range(entries)}, {}, 0, {})
        kept._given(key, None, keeping.to_wire(state), d.fd)  # type: ignore[arg-type]
        return d.fd

    fds = [give(f"w{i}", 1) for i in range(helper.KEPT_STATES)]
    kept.states["w0"][2] = "a call"  # lent
    give("new", 1)
    assert list(kept.states) == [f"w{i}" for i in [0, *range(2, helper.KEPT_STATES)]] + ["new"]
    with pytest.raises(OSError):
        os.fstat(fds[1])  # w1, the least recently used not lent: dropped, its descriptor closed
    give("big", helper.KEPT_ENTRIES - 5)
    assert "big" in kept.states and "w0" in kept.states
    assert sum(r[0].size() for r in kept.states.values()) <= helper.KEPT_ENTRIES
    kept.close()
    assert not kept.states


def _argv(calls: Calls, command: str) -> list[str]:
    from ..core.test_cli_helper import CODEBELT

    return [CODEBELT, "call", "--mode", "bypassPermissions", "--sandbox", "off", "Bash", json.dumps({"command": command})]


def _label_of(listed: list[dict], start: str) -> str:
    return next(c["label"] for c in listed if c["label"].startswith(start) or start in c["label"])


def _wait_for(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting: {what}"
        time.sleep(0.05)
