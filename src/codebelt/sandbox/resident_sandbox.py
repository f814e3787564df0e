"""The resident write sandbox (bwrap): one bwrap per session that starts each sandboxed command.

Why: a bwrap per command (namespaces, the view, a private /dev and /proc) costs tens of
milliseconds on a loaded machine; a clone from a process already inside the view costs a few.
The server is the read-only jail's (resident.py, residency.py); this module says what it is
built with and what each command is given.

Built once, at the first sandboxed command (`start_argv`): bwrap with the write sandbox's view
as the one-shot argv has it before any per-command part — `/` read-only, a private /dev, the
writable roots and the session's TMPDIR bound read-write, its own pid and IPC namespaces, an empty
network namespace when the network is off, no terminal — plus the session's limits, cgroups and
seccomp filter (inherited by every command), keeping only CAP_SYS_ADMIN and CAP_SETPCAP.

Per command, in a new pid, mount and IPC namespace of its own (and network namespace, with the
network off), the namespaces and a fresh /dev/shm made by its zygote before the request
(`prepared`), then as it starts (`command_request`), in bwrap's order: /dev read-only (the one-shot's /dev is a
tmpfs thrown away with it; here one /dev serves every command, so nothing may be left in it), a
pty instance of its own at /dev/pts, the protected paths as they are now (pinned, then
read-only: one made since the resident started is covered like any other), the Read-deny and
credential masks of this moment, git's filtered global configuration over its mask, its own
/proc; then no capability, no_new_privs, and the command. When it ends, its pid namespace ends
everything it left, and its mount and IPC namespaces (its /dev/shm, ptys, System V and POSIX
queues and segments) go with it.

What stays one-shot: a command whose network goes through codebelt's proxy (the proxy's
channel is a descriptor the stage reads at a fixed number, and the stage is an interpreter start
anyway), the PTY and Codex paths (the runner's choice), and a session whose process cap is an
RLIMIT_NPROC counted at each spawn (non-root without a pids cgroup: the resident would count it
once).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Callable

from . import bwrap as _bwrap
from .config import SandboxConfig
from .cover_checks import left_out, watched
from .jail import cover_where, mask_plan

MAX_STARTS = 8  # residents started per session (again after a root was replaced or it died); then one-shot


def start_argv(bwrap: str, config: SandboxConfig, python: str, source: str) -> list[str]:
    """bwrap and the resident inside it: the write sandbox's view without the per-command parts."""
    args = _bwrap.sandbox_args(config, Path("/"), protect=False)
    # it makes each command's namespaces and mounts: it keeps the capability to, and each command
    # drops every capability before it runs (resident.py)
    at = args.index("--cap-drop")
    args[at:at + 2] = ["--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP",
                       *(["--cap-add", "CAP_NET_ADMIN"] if not config.network else [])]
    return [bwrap, *args, "--", python, "-I", "-S", "-c", source]


def command_mounts(binds: list[tuple[Path, str]], masked: "list[Path] | tuple[Path, ...]",
                   overlays: "list[tuple[Path, Path]] | tuple[()]", writable: "tuple[Path, ...]" = (),
                   planned: "list[tuple[Path, bool]] | None" = None) -> list[list]:
    """The mount steps of one command (resident.apply_mount), in the one-shot argv's order; a
    mask in `writable` carries its directory's identity (jail.cover_where). `planned`:
    `mask_plan(masked)`, when the caller has it."""
    ops: list[list] = [["readonly", "/dev"], ["devpts", "/dev/pts"]]
    ops += [[kind, str(p)] for p, kind in binds]
    if planned is None:
        planned = mask_plan(masked)
    seen = watched(masked, writable)  # the walk's identities, where it found the path
    ops += [["mask", *(seen.get(str(p)) or cover_where(p, writable)), str(p)] for p, _ in planned]
    # a path under `writable` missing now: its directory moved away, or the file deleted (the
    # mask then refuses the command, or covers nothing, as the resident jail's does)
    ops += [["mask", *where, p] for p, where in left_out(seen, planned)]
    ops += [["show", str(src), str(dest)] for src, dest in overlays]
    return ops


def prepared(network: bool) -> dict:
    """What every command's request asks for besides its mounts (`command_request`), set up by
    each zygote before its request (resident.get_ready): its /dev/shm mounted, its IPC namespace
    and (network off) its network namespace made with it, the loopback up — an unshare of a
    network namespace on the request's path cost more than the rest of its set-up."""
    return {"tmpfs": ["/dev/shm"], "abi": 0, "writable": [], "ipc": True, "net": not network}


def command_request(argv: list[str], env: dict, cwd: Path, binds: list[tuple[Path, str]],
                    masked: "list[Path] | tuple[Path, ...]", overlays, network: bool,
                    writable: "tuple[Path, ...]" = (), planned: "list[tuple[Path, bool]] | None" = None) -> dict:
    return {
        "argv": argv, "env": env, "cwd": str(cwd), **prepared(network), "masks": [],
        "mounts": command_mounts(binds, masked, overlays, writable, planned),
    }


class Bound:
    """The directories a resident bound, held open from before it started: a directory removed
    and made again (the resident would still show the old, deleted one) is told apart by inode
    — which cannot be handed to the new one while this holds the old."""

    def __init__(self, paths: "tuple[Path, ...] | list[Path]"):
        self.paths = tuple(paths)
        self._fds = []
        for p in self.paths:
            try:
                self._fds.append(os.open(p, os.O_PATH | os.O_CLOEXEC))
            except OSError:
                self._fds.append(-1)

    def current(self) -> bool:
        for p, fd in zip(self.paths, self._fds):
            try:
                now = os.stat(p)
            except OSError:
                now = None
            if fd < 0 or now is None:
                if (fd < 0) != (now is None):
                    return False
                continue
            held = os.fstat(fd)
            if (held.st_dev, held.st_ino) != (now.st_dev, now.st_ino):
                return False
        return True

    def close(self) -> None:
        for fd in self._fds:
            if fd >= 0:
                os.close(fd)
        self._fds = [-1] * len(self._fds)


class ResidentSandbox:
    """The session's resident write sandbox: `start()` makes one (a residency.ResidentJail), at
    the first command, and again when a directory it bound was replaced or it died. Started in
    the background (`wait=False`): a start costs several one-shot commands, and a session that
    runs one command (`codebelt call Bash`) must not pay it — commands take the one-shot argv
    until it is ready. `wait=True` starts it in the caller and uses it at once (tests)."""

    def __init__(self, start: Callable[[], Any], paths: "tuple[Path, ...] | list[Path]", wait: bool = False):
        self._start = start
        self._paths = tuple(paths)
        self._wait = wait
        self._lock = threading.Lock()
        self._current: Any = None
        self._old: list[Any] = []  # replaced ones, ended at close (their commands may run)
        self._starting: threading.Thread | None = None
        self._starts = 0
        self._closed = False
        self.failed = ""  # why it does not work here ("" until it failed)

    def _resident(self):
        with self._lock:
            current = self._current
            if current is not None and (not current.bound.current() or not current.alive):
                self._old.append(current)
                self._current = current = None
            if current is not None or self._starting is not None or self._closed:
                return current
            if self.failed or self._starts >= MAX_STARTS:
                return None
            self._starts += 1
            self._starting = threading.Thread(target=self._start_one, name="codebelt-resident-sandbox-start",
                                              daemon=True)
            self._starting.start()
            starting = self._starting
        if not self._wait:
            return None
        starting.join()
        return self._current

    def _start_one(self) -> None:
        from .residency import ResidentUnavailable

        bound = Bound(self._paths)  # before the start: what it binds is at least this new
        resident, failed = None, ""
        try:
            resident = self._start()
            resident.bound = bound
        except (OSError, ResidentUnavailable) as e:
            bound.close()
            failed = str(e) or type(e).__name__
        with self._lock:
            self._starting = None
            self.failed = self.failed or failed
            if resident is not None and self._closed:
                self._old.append(resident)  # closed meanwhile: ended below, by close()
            elif resident is not None:
                self._current = resident

    def launcher(self, request: dict) -> "Callable[[dict[int, int]], Any] | None":
        """`launch(fds)` starting the command of `request` in the resident, or None when there
        is none (the caller spawns the one-shot argv)."""
        resident = self._resident()
        return None if resident is None else resident.launcher(request)

    @property
    def current(self):
        return self._current

    def wait_started(self, timeout: float) -> None:
        """Until a start under way has ended (made one, or failed)."""
        starting = self._starting
        if starting is not None:
            starting.join(timeout)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            starting = self._starting
        if starting is not None:
            starting.join()  # bounded: the start gives up after residency.START_TIMEOUT
        with self._lock:
            residents = [r for r in (self._current, *self._old) if r is not None]
            self._current, self._old = None, []
        for r in residents:
            r.close()
            r.bound.close()
