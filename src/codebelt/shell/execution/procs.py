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
"""

from __future__ import annotations

import os
import signal
import time
from typing import Iterator

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


def find_marked(marker: str, prefix: bool = False) -> list[int]:
    """Pids whose environment holds CODEBELT_SHELL_ID=`marker` (or any value starting with it)."""
    needle = f"{MARKER_VAR}={marker}".encode() + (b"" if prefix else b"\0")
    me = os.getpid()
    return [pid for pid, env in _proc_files("environ")
            if pid != me and (env.startswith(needle) or b"\0" + needle in env)]


def sweep_marked(marker: str, prefix: bool = False) -> int:
    """SIGKILL every process carrying the marker (the escapees of killed commands)."""
    killed = 0
    for pid in find_marked(marker, prefix):
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    return killed
