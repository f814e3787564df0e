"""A reaper between codebelt and a long-lived helper under Landlock, where there is no pid
namespace to end the helper's tree with it: a small process (reaper_program.py) that is the
helper's parent and subreaper, in a Landlock domain of its own that scopes signals, the helper in
a domain nested in it. Its `kill(-1, SIGKILL)` reaches exactly the helper and everything it
started — found by the kernel, not by a listing of /proc that a process forking and exiting every
few milliseconds outruns — and nothing the helper starts can signal or trace it.

`Reaper()` is prepared in codebelt before the spawn; its `split_in_child` runs first in the
spawned child (a preexec): that process becomes the reaper, and the child it forks goes on to
become the helper. `end(pid)` asks a reaper to end its tree and waits for it; `close()` (once the
helper is gone, or codebelt is) closes the control pipe, which ends the tree too if it still runs.
Needs Landlock ABI 6 (signal scoping); `available()` says whether this kernel has it.
"""

from __future__ import annotations

import os
import select
import signal
import threading
from functools import cache
from pathlib import Path

from . import landlock

PROGRAM = str(Path(__file__).with_name("reaper_program.py"))
CONTROL_FD = 3  # where the reaper program finds the control pipe's read end
PR_SET_CHILD_SUBREAPER = 36

# the reapers whose helper may still run, by their control pipe's inode: how `end` knows that a
# pid is one of them (its fd 3 is that pipe, which nothing but codebelt and that reaper holds)
_live: dict[int, "Reaper"] = {}
_live_lock = threading.Lock()


@cache
def _scope() -> "landlock.SignalScope | None":
    try:
        return landlock.SignalScope()
    except OSError:
        return None


def available() -> bool:
    """Whether helpers can be put below a reaper here (Landlock with signal scoping)."""
    return _scope() is not None


class Reaper:
    """One helper's reaper, prepared before its spawn. `python`: the interpreter that runs the
    reaper program (isolated mode, without site: it uses the standard library only)."""

    def __init__(self, python: str):
        scope = _scope()
        if scope is None:
            raise OSError("Landlock signal scoping is not available")
        self._scope = scope
        self._argv = [python, "-I", "-S", PROGRAM]
        self._libc = landlock._syscall()
        # the C library's fork, looked up now: os.fork() would run the at-fork callbacks that
        # modules registered (Python code that may import: a copy of a lock a vanished thread
        # held hangs it), and the child's code after a fork may run none
        self._fork = self._libc.fork
        self._read, self._write = os.pipe()  # both close-on-exec: the helper never holds them
        self._ino = os.fstat(self._write).st_ino
        self._lock = threading.Lock()
        with _live_lock:
            _live[self._ino] = self

    def split_in_child(self) -> None:
        """In the spawned child, before anything else of the helper's set-up: become the reaper
        (a subreaper in a domain of its own), fork its watcher, then the helper, and return in
        the helper. The watcher exists before the helper does, so the reaper's death never goes
        unnoticed. The other two never return: each executes the reaper program, or fails and
        kills its domain (only what was forked here)."""
        if self._libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError("prctl(PR_SET_CHILD_SUBREAPER) failed")
        self._scope.restrict_in_child()
        me = os.pidfd_open(os.getpid())
        try:
            # spawned (vfork-like, no copy of this process's memory map), in a session of its
            # own: out of the reaper's process group, which a kill of that group spares
            watcher = os.posix_spawn(self._argv[0], [*self._argv, "watch"], {}, setsid=True, file_actions=[
                (os.POSIX_SPAWN_DUP2, me, CONTROL_FD),
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0),
                (os.POSIX_SPAWN_DUP2, 0, 1),
                (os.POSIX_SPAWN_DUP2, 0, 2),
            ])
        finally:
            os.close(me)
        helper = self._fork()
        if helper < 0:
            raise OSError("fork failed")
        if helper == 0:
            # until its exec it holds copies of all codebelt's descriptors: not the control
            # pipe's, whose end must come when codebelt goes, whatever the helper's set-up does
            os.close(self._read)
            os.close(self._write)
            return
        # the helper's input and output are its own: the reaper holds neither (its errors go to
        # the helper's error output)
        self._become(self._read, f"reap {helper} {watcher}", (0, 1))

    def _become(self, fd: int, mode: str, null: tuple[int, ...]) -> None:
        """Execute the reaper program with `fd` as its fd 3 and `null` on /dev/null; on failure
        kill the domain."""
        try:
            if fd != CONTROL_FD:
                os.dup2(fd, CONTROL_FD)
            os.set_inheritable(CONTROL_FD, True)
            devnull = os.open(os.devnull, os.O_RDWR)
            for n in null:
                os.dup2(devnull, n)
            os.closerange(CONTROL_FD + 1, 1 << 20)
            os.execve(self._argv[0], [*self._argv, *mode.split()], {})  # codebelt's environment is none of its business
        except BaseException:  # noqa: BLE001 - nothing may return from here
            pass
        try:
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(127)

    def ask_end(self) -> None:
        with self._lock:
            if self._write is not None:
                try:
                    os.set_blocking(self._write, False)
                    os.write(self._write, b"e")
                except OSError:
                    pass  # full or gone: a byte is already there, or the reaper is

    def close(self) -> None:
        """Done with the helper: the control pipe closed, which ends the tree if it still runs."""
        with _live_lock:
            _live.pop(self._ino, None)
        with self._lock:
            for fd in (self._read, self._write):
                if fd is not None:
                    os.close(fd)
            self._read = self._write = None


def reaper_of(pid: int) -> Reaper | None:
    """The live reaper that `pid` (an unreaped child of codebelt's) is, or None."""
    try:
        link = os.readlink(f"/proc/{pid}/fd/{CONTROL_FD}")
    except OSError:
        return None
    if not (link.startswith("pipe:[") and link.endswith("]") and link[6:-1].isdigit()):
        return None
    with _live_lock:
        return _live.get(int(link[6:-1]))


def end(pid: int, timeout: float) -> bool:
    """If `pid` is a reaper: ask it to end its helper's tree and wait (at most `timeout`) until it
    has exited — it exits once nothing below it is left. True when it did."""
    reaper = reaper_of(pid)
    if reaper is None:
        return False
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        reaper.ask_end()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(max(0, int(timeout * 1000))))
    finally:
        os.close(fd)
