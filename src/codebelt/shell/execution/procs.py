"""Process-group control: signal a command's whole group, tell when it is gone, sweep escapees.

Every command runs as the leader of its own session (start_new_session=True), so its pid is
also its process-group id and `killpg` reaches every descendant that did not move away. Two
things make "is the group empty?" harder than `killpg(pgid, 0)`:

- zombies: a member that died but was not yet reaped still answers signal 0. Orphans are
  reparented to init, and some container inits never reap, so we look at /proc and ignore
  members in state Z/X (they hold no resources but a pid slot).
- escapees: a descendant that calls setsid()/setpgid() leaves the group. Every command gets a
  marker in its environment (CODEBELT_SHELL_ID=…), which children inherit, so a /proc scan
  for the marker finds them. A process that both leaves the group and scrubs its environment
  escapes this net; the sandbox (bwrap --unshare-pid --die-with-parent) closes that gap.

Two things make a signal land on the wrong process, and both are avoided here:

- pid reuse: a number read from /proc (or a group whose leader was already reaped) may belong to
  someone else's brand-new command a moment later — on a busy machine pids wrap in seconds. A
  process found by a scan is signalled through a pidfd, after checking again through that pidfd
  that it is still the one the scan found (`signal_members`, `sweep_marked`).
- the spawning thread: bwrap's `--die-with-parent` (PR_SET_PDEATHSIG) fires when the *thread*
  that forked it exits, not the process. A command started from a worker thread that later
  ends (an asyncio executor at the end of `asyncio.run`, a pool that retires idle threads) was
  killed with SIGKILL at once — `exit code 137 after 0.0 s`. `spawn` starts every command from
  the main thread or from one thread that lives as long as the process.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from concurrent.futures import Future
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")

MARKER_VAR = "CODEBELT_SHELL_ID"
_PROC = "/proc"


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # a member changed credentials (setuid); nothing more we may do
        return True


def _proc_files(filename: str) -> Iterator[tuple[int, bytes]]:
    """(pid, contents of /proc/PID/filename) for every process we may read (Linux)."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/{filename}", "rb") as f:
                yield int(name), f.read()
        except OSError:
            continue


def _live_members(pgid: int) -> list[int]:
    """Pids of non-zombie processes in the group, from /proc (Linux)."""
    members = []
    for pid, stat in _proc_files("stat"):
        # "pid (comm) state ppid pgrp …" — comm may contain spaces and parens: split after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[0] not in (b"Z", b"X") and int(fields[2]) == pgid:
            members.append(pid)
    return members


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is still in the group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir(_PROC):
        return True
    return bool(_live_members(pgid))


def kill_group(pgid: int, grace: float, poll: float = 0.02) -> bool:
    """SIGTERM (and SIGCONT, so stopped members can act on it) to the group, SIGKILL after
    `grace` seconds if anything is left. Returns True if SIGKILL was needed."""
    if not signal_group(pgid, signal.SIGTERM):
        return False
    signal_group(pgid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return False
        time.sleep(poll)
    if group_alive(pgid):
        signal_group(pgid, signal.SIGKILL)
        return True
    return False


def _carries(env: bytes, needle: bytes) -> bool:
    return env.startswith(needle) or b"\0" + needle in env


def find_marked(marker: str, prefix: bool = False) -> list[int]:
    """Pids whose environment holds CODEBELT_SHELL_ID=`marker` (or any value starting with it)."""
    needle = f"{MARKER_VAR}={marker}".encode() + (b"" if prefix else b"\0")
    me = os.getpid()
    return [pid for pid, env in _proc_files("environ") if pid != me and _carries(env, needle)]


def _read(pid: int, name: str) -> bytes | None:
    try:
        with open(f"{_PROC}/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return None


def _pgrp(stat: bytes | None) -> int | None:
    if not stat:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    return int(fields[2]) if len(fields) > 2 and fields[0] not in (b"Z", b"X") else None


def signal_if(pid: int, sig: int, still: Callable[[int], bool]) -> bool:
    """Signal `pid` only if `still(pid)` holds for the process that has that pid once a pidfd pins
    it: a pid read a moment ago may already be someone else's. True if the signal was sent."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except (AttributeError, OSError):  # no pidfds (an old kernel): by number, as well as it goes
        try:
            if still(pid):
                os.kill(pid, sig)
                return True
        except OSError:
            pass
        return False
    try:
        if not still(pid):  # checked after pinning: this is the process the pidfd refers to
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def sweep_marked(marker: str, prefix: bool = False) -> int:
    """SIGKILL every process carrying the marker (the escapees of killed commands)."""
    needle = f"{MARKER_VAR}={marker}".encode() + (b"" if prefix else b"\0")
    return sum(signal_if(pid, signal.SIGKILL, lambda p: _carries(_read(p, "environ") or b"", needle))
               for pid in find_marked(marker, prefix))


def signal_members(pgid: int, sig: int) -> int:
    """Signal each live member of the group, found in /proc and pinned by a pidfd. For a group
    whose leader was reaped: `killpg` by number could reach a new group that took the number."""
    return sum(signal_if(pid, sig, lambda p: _pgrp(_read(p, "stat")) == pgid) for pid in _live_members(pgid))


def kill_members(pgid: int, grace: float, poll: float = 0.02) -> bool:
    """`kill_group` for a group whose leader was already reaped: SIGTERM (and SIGCONT) to each
    member, SIGKILL after `grace` seconds to what is left. Returns True if SIGKILL was needed."""
    if not signal_members(pgid, signal.SIGTERM):
        return False
    signal_members(pgid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _live_members(pgid):
            return False
        time.sleep(poll)
    return signal_members(pgid, signal.SIGKILL) > 0


# -- the spawning thread ---------------------------------------------------------------------------

_spawn_lock = threading.Lock()
_spawn_queue: "queue.SimpleQueue[tuple[Callable[[], object], Future]] | None" = None
_spawn_pid = -1


def _spawner(q: "queue.SimpleQueue[tuple[Callable[[], object], Future]]") -> None:
    while True:
        fn, fut = q.get()
        if fut.set_running_or_notify_cancel():
            try:
                fut.set_result(fn())
            except BaseException as e:  # handed to the caller, who raises it
                fut.set_exception(e)


def spawn(start: Callable[[], T]) -> T:
    """Run `start` (which starts a child process) on a thread that outlives every command: the
    calling thread when it is the main thread, else one daemon thread kept for the life of the
    process. A child that asked to die with its parent then dies with this process, not with a
    worker thread that happened to start it."""
    global _spawn_queue, _spawn_pid
    if threading.current_thread() is threading.main_thread():
        return start()
    with _spawn_lock:
        if _spawn_queue is None or _spawn_pid != os.getpid():  # none yet, or a forked child
            _spawn_queue, _spawn_pid = queue.SimpleQueue(), os.getpid()
            threading.Thread(target=_spawner, args=(_spawn_queue,), name="codebelt-spawner", daemon=True).start()
        q = _spawn_queue
    fut: Future = Future()
    q.put((start, fut))
    return fut.result()
