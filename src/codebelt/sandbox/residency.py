"""codebelt's side of the resident jail (resident.py): start it once, hand it commands, and give
the runner a process object for each that behaves like `subprocess.Popen` where the runner uses
one (`pid`, `poll`, `wait`, `returncode`, `send_signal`), plus `exit_fd`, readable once the
command's init has sent the command's status (after killing and reaping everything else in the
command's namespace) or has ended without one: the command is not codebelt's child, so its
status is the one its init sent.

`pid` is the host pid of the command's init (pid 1 of its namespace), the leader of the process
group the command runs in: `killpg(pid, …)` reaches the command and what it started, as in any
process group (the init itself receives only SIGKILL, which ends the namespace); when the init
ends, the kernel ends the rest.
"""

from __future__ import annotations

import array
import json
import marshal
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

START_TIMEOUT = 10.0  # the resident's start, and each command's start inside it
MAX_REQUEST = 1 << 20  # larger requests (a huge environment or mask list) use a one-shot jail
KILLED_NAMESPACE_WAIT = 5.0  # a killed init's namespace ending (a process in a disk wait delays it)


def resident_source() -> str:
    from .write_layer import with_write_layer

    return with_write_layer("resident.py")


class ResidentUnavailable(OSError):
    """The resident jail cannot take this command (not started, gone, request too large)."""


class ResidentJail:
    """One resident jail: `argv` starts it (bwrap … -- python -I -S -c SOURCE), given the child
    end of the control socket as its last argument; `preexec` runs in bwrap's child (limits,
    cgroups, the seccomp filter — inherited by every command). `prepare`: what every request
    will ask for ({"tmpfs", "abi", "writable"}), set up before each command is asked for.
    `native`: a descriptor of the compiled request path (native.open_extension) for the resident
    to load, taken over (closed here); `self.native` says whether it did."""

    def __init__(self, argv: list[str], env: dict, preexec: Callable[[], None] | None, cwd: Path,
                 prepare: dict | None = None, native: int | None = None):
        self._lock = threading.Lock()
        self.view: tuple = ()  # what it was built for (the caller's key)
        self.stamps: tuple = ()
        self.masked_at_start: frozenset[str] = frozenset()
        self._ctl, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._ctl.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, MAX_REQUEST * 2)
        self._proc: subprocess.Popen | None = None
        self._error = ""
        self._gone = threading.Event()
        self.native = False
        self.native_failed = "" if native is not None else "not asked for"
        started = threading.Event()
        fd = child.fileno()
        if native is not None:
            prepare = {**(prepare or {}), "native": native}

        def run() -> None:
            # This thread lives as long as the resident: bwrap's --die-with-parent fires when the
            # thread that started it ends.
            try:
                self._proc = subprocess.Popen(
                    [*argv, *([json.dumps(prepare)] if prepare else []), str(fd)], cwd=cwd, env=env, preexec_fn=preexec,
                    pass_fds=(fd,) if native is None else (fd, native),
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                    start_new_session=True)
            except OSError as e:
                self._error = str(e)
                self._gone.set()
                return
            finally:
                child.close()
                if native is not None:
                    os.close(native)
                started.set()
            _, err = self._proc.communicate()
            self._error = err.decode(errors="replace").strip()[-300:] or f"exit status {self._proc.returncode}"
            self._gone.set()

        self._thread = threading.Thread(target=run, name="codebelt-resident-jail", daemon=True)
        self._thread.start()
        started.wait()
        ready, _, _ = select.select([self._ctl], [], [], START_TIMEOUT)
        reply = b""
        if ready:
            try:
                reply = self._ctl.recv(512)
            except OSError:
                pass
        # "ready", "ready native" (it loaded the compiled request path), "ready python: WHY"
        if reply == b"ready native":
            self.native = True
        elif reply.startswith(b"ready python: "):
            self.native_failed = reply[14:].decode(errors="replace")
        elif reply != b"ready":
            self.close()
            self._gone.wait(2.0)
            raise ResidentUnavailable(f"the resident jail did not start ({self._error or 'no answer'})")

    @property
    def alive(self) -> bool:
        return not self._gone.is_set()

    def launcher(self, request: dict):
        """`launch` bound to `request`, as a wrapper's launch: None where the resident cannot
        take it (gone, or the request too large), so the caller spawns the one-shot argv."""

        def launch(fds: dict[int, int]) -> "JailedProcess | None":
            try:
                return self.launch(request, fds)
            except ResidentUnavailable:
                return None

        return launch

    def launch(self, request: dict, fds: dict[int, int]) -> "JailedProcess":
        """Start a command: `request` (argv, env, cwd, scratch, masks, abi, writable) and `fds`
        (descriptor number in the command -> descriptor here). Returns once the command runs.
        ResidentUnavailable: the resident cannot take it (the caller starts a one-shot jail);
        OSError: the command could not be started in it (said on its stderr too)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        mine.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        try:
            payload = marshal.dumps({**request, "fds": list(fds)})  # resident.py: codebelt's own interpreter reads it
            if len(payload) > MAX_REQUEST:
                raise ResidentUnavailable("request too large")
            attached = array.array("i", [theirs.fileno(), *fds.values()])
            with self._lock:
                if not self.alive:
                    raise ResidentUnavailable(f"the resident jail is gone ({self._error})")
                try:
                    self._ctl.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, attached)])
                except OSError as e:
                    raise ResidentUnavailable(f"the resident jail does not answer ({e})") from None
            theirs.close()
            return JailedProcess.started(request["argv"], mine)
        except BaseException:
            mine.close()
            theirs.close()
            raise

    def close(self) -> None:
        """End the resident and everything still running in it."""
        try:
            self._ctl.close()  # its end of the channel: it exits
        except OSError:
            pass
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                proc.kill()  # bwrap: its pid namespace, and every command's below it, ends
            except OSError:
                pass
        self._gone.wait(5.0)


class JailedProcess:
    """A command started by the resident jail, seen from codebelt."""

    # once its returncode is known nothing it started runs any more (its init killed and reaped
    # the rest of its namespace first, or the namespace ended with the init): the runner need
    # not look for what is left in its group (a walk of /proc, ~2 ms), where only the init may
    # still be exiting
    leaves_nothing = True

    def __init__(self, args: list[str], sock: socket.socket, pidfd: int, pid: int):
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self._sock = sock
        self._pidfd = pidfd
        self._lock = threading.Lock()
        # readable when the init sends the status (nothing of the command runs any more: it killed
        # and reaped the rest first) or ends without one (killed, with its whole namespace)
        self.exit_fd = sock.fileno()

    @classmethod
    def started(cls, args: list[str], sock: socket.socket) -> "JailedProcess":
        """Wait for the command's init to say it took the command (its pidfd attached)."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise OSError("the jailed command did not start in time")
            msg, anc, _flags, _ = sock.recvmsg(512, socket.CMSG_SPACE(4) + socket.CMSG_SPACE(12))
            fds = [int.from_bytes(data[i:i + 4], sys.byteorder)
                   for level, kind, data in anc if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
                   for i in range(0, len(data) - len(data) % 4, 4)]
            creds = [struct.unpack("3i", data[:12])[0] for level, kind, data in anc
                     if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(data) >= 12]
            if msg in (b"pid", b"pid+cred") and fds:
                pidfd = fds[0]
                for fd in fds[1:]:
                    os.close(fd)
                os.set_inheritable(pidfd, False)
                sock.setblocking(False)
                # the resident's own credentials come with any message it did not give its own
                pid = creds[0] if msg == b"pid+cred" and creds and creds[0] > 0 else _pid_of(pidfd)
                return cls(args, sock, pidfd, pid)
            for fd in fds:
                os.close(fd)
            if msg.startswith(b"err "):
                raise OSError(msg[4:].decode(errors="replace"))
            if not msg or msg.startswith(b"status "):
                raise OSError("the jailed command ended before it started")

    def _drain(self, timeout: float | None) -> None:
        """Wait up to `timeout` for the command's init to send its status or end without one,
        and take it (never holding the lock while waiting: a signal may be on its way)."""
        with self._lock:
            if self.returncode is not None:
                return
            fd = self._sock.fileno()
        try:
            if not select.select([fd], [], [], timeout)[0]:
                return
        except (OSError, ValueError):
            return  # closed meanwhile by another waiter: the outcome is known
        with self._lock:
            if self.returncode is not None:
                return
            status = None
            while status is None:
                try:
                    msg = self._sock.recv(64)
                except BlockingIOError:
                    return  # read by another waiter: it sets the outcome
                except OSError:
                    break
                if not msg:
                    break
                if msg.startswith(b"status "):
                    try:
                        status = os.waitstatus_to_exitcode(int(msg[7:]))
                    except ValueError:
                        break  # not a wait status: as if the init had said nothing
            if status is None:
                # no word from it at all: it was killed, and its namespace ends with it — done
                # once its pidfd says it has exited (the kernel's ending of the rest comes first)
                try:
                    select.select([self._pidfd], [], [], KILLED_NAMESPACE_WAIT)
                except (OSError, ValueError):
                    pass
            self.returncode = status if status is not None else -signal.SIGKILL
            os.close(self._pidfd)
            self._sock.close()

    def poll(self) -> int | None:
        self._drain(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self._drain(left)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """Signal the command's process group (its init receives only SIGKILL, which ends the
        whole namespace). The group's number is the init's pid, which stays its own while the
        init is not reaped: checked through its pidfd first."""
        with self._lock:
            if self.returncode is None:
                try:
                    signal.pidfd_send_signal(self._pidfd, sig if sig == signal.SIGKILL else 0)
                    if sig != signal.SIGKILL:
                        os.killpg(self.pid, sig)
                except ProcessLookupError:
                    pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _pid_of(pidfd: int) -> int:
    """The pid, in codebelt's namespace, of the process a pidfd refers to."""
    with open(f"/proc/self/fdinfo/{pidfd}") as f:
        for line in f:
            if line.startswith("Pid:"):
                pid = int(line.split()[1])
                if pid > 0:
                    return pid
    raise OSError("the jailed command ended before it started")
