"""Interactive processes: a command on a pseudo-terminal (or on pipes), kept alive across calls.

A `ShellProcess` (runner.py) given one of these as its `stdio` runs like any command — its own
session and process group, the same sandbox wrapper, timeout, kill ladder and spool file — but
its standard streams are not /dev/null and a file:

- `Pty`: stdin, stdout and stderr are the slave side of a new pseudo-terminal, which becomes the
  process's controlling terminal (so Ctrl-C written as `\\x03` interrupts the foreground job,
  `getpass` can open /dev/tty, and `less` or `vim` draw a screen). Under a wrapper that starts
  the command in a session of its own (bwrap `--new-session`, which keeps a sandboxed process
  from injecting keystrokes into a terminal outside), util-linux `setsid --ctty --wait` takes
  the terminal inside the sandbox; otherwise the child takes it itself before exec.
- `Pipes`: stdin is a pipe the caller writes to; stdout and stderr share a pipe.

Either way a pump thread copies the output into the spool file (so spooling, budgets and
incremental reads are the same as for any command) and wakes whoever waits for output.
`wait_for_output` waits up to a deadline and returns early when the process exits, when it is
blocked reading its terminal (its turn is over: a prompt), or when output went quiet while every
thread of the program slept.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import shutil
import struct
import termios
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import ShellError
from .runner import ShellProcess, Stdio

READ_CHUNK = 1 << 16
WRITE_DEADLINE_S = 5.0  # a program that stops reading its input cannot hold a write longer
DRAIN_S = 0.5  # how long output still arriving after the process exited is waited for, at most
STOP_QUIET_S = 0.02  # … the pump stops sooner once nothing arrived for this long
CONFIRM_S = 0.001  # "waiting for input" must still hold this much later, with no new output
# … and this much when nothing at all came back after a write (a margin: what the program wrote
# before going to sleep is made visible exactly by Pty._copied)
CONFIRM_SILENT_S = 0.02
# Quiet also needs every thread of the program asleep throughout this long, with nothing of it
# run in between (sleep counts as quiet; a computation that naps shorter than this does not)
STILL_S = 0.01
STILL_THREADS = 256  # threads looked at, at most; a program with more is never seen still
# Syscalls a process is blocked in when it waits for input (x86-64 and aarch64 numbers):
# read/readv/pread on the terminal, or one of the poll/select family.
_READS = {"x86_64": {0, 17, 19}, "aarch64": {63, 65, 67}}
_POLLS = {"x86_64": {7, 23, 232, 270, 271, 281, 441}, "aarch64": {22, 72, 73, 441}}
_ARCH = os.uname().machine


def _setsid_path() -> str | None:
    found = shutil.which("setsid") or next(
        (p for p in ("/usr/bin/setsid", "/bin/setsid") if os.access(p, os.X_OK)), None)
    return os.path.realpath(found) if found else None


class _Output:
    """The pump: copies a descriptor into the spool file, counting bytes and waking waiters."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.size = 0  # bytes written to the spool so far
        self.last_output = 0.0  # monotonic time of the last byte
        self.closed = False  # the pump has stopped (EOF, or told to)
        # held from a read of the descriptor until its bytes are counted in `size`
        self.copying = threading.Lock()
        self._fd = -1
        self._spool = -1
        self._wake_r, self._wake_w = -1, -1
        self._thread: threading.Thread | None = None
        self._stop_at: float | None = None
        self.transcript: _Transcript | None = None  # also kept as plain text

    def start(self, fd: int, spool_path: Path, name: str) -> None:
        self._fd = fd
        os.set_blocking(fd, False)
        self._spool = os.open(spool_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while True:
                timeout = None
                if self._stop_at is not None:  # stopping: until the output pauses, bounded
                    timeout = min(STOP_QUIET_S, max(0.0, self._stop_at - time.monotonic()))
                ready, _, _ = select.select([self._fd, self._wake_r], [], [], timeout)
                if not ready and self._stop_at is not None:
                    break
                if self._fd in ready:
                    with self.copying:
                        try:
                            data = os.read(self._fd, READ_CHUNK)
                        except BlockingIOError:
                            data = None
                        except OSError as e:  # EIO: every slave descriptor is closed
                            if e.errno not in (errno.EIO, errno.EBADF):
                                raise
                            data = b""
                        if data:
                            self._write(data)
                    if data == b"":
                        break
                    if data:
                        continue
                if self._wake_r in ready:
                    try:
                        os.read(self._wake_r, 64)
                    except OSError:
                        pass
                if self._stop_at is not None and time.monotonic() >= self._stop_at:
                    break
        except OSError:
            pass
        finally:
            with self.cond:
                self.closed = True
                self.cond.notify_all()

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self._spool, view)
            except OSError:
                return  # the disk is full or the file is gone: the output is lost, the process is not held up
            view = view[n:]
        if self.transcript is not None:
            self.transcript.write(data)
        with self.cond:
            self.size += len(data)
            self.last_output = time.monotonic()
            self.cond.notify_all()

    def stop(self, within: float) -> None:
        """Stop once nothing more is readable, or after `within` seconds."""
        self._stop_at = time.monotonic() + within
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def close(self) -> None:
        if self.transcript is not None:
            self.transcript.close()
        for fd in (self._spool, self._wake_r, self._wake_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._spool = self._wake_r = self._wake_w = -1


class _Transcript:
    """A terminal's output as plain text (terminal.PipeText) in a file of its own, written as
    the output arrives."""

    def __init__(self, path: Path):
        from .terminal import PipeText  # pyte: imported with the first terminal that needs it

        self.path = path
        self._text = PipeText()
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o600)

    def write(self, data: bytes) -> None:
        self._put(self._text.feed(data))

    def _put(self, text: str) -> None:
        view = memoryview(text.encode("utf-8", "surrogateescape"))
        while view and self._fd >= 0:
            try:
                n = os.write(self._fd, view)
            except OSError:
                return  # the disk is full or the file is gone: the copy is lost, the program is not held up
            view = view[n:]

    def close(self) -> None:
        if self._fd >= 0:
            self._put(self._text.end())
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = -1


class Interactive(Stdio):
    """What `Pty` and `Pipes` share: the output pump, bounded writes, and waiting."""

    tty = False

    def __init__(self) -> None:
        self.output = _Output()
        self.process: ShellProcess | None = None
        self._write_fd = -1
        self._write_lock = threading.Lock()

    # -- the Stdio seam ----------------------------------------------------------------------
    def started(self, process: ShellProcess) -> None:
        self.process = process
        process.on_exit.append(self._exited)

    def _exited(self, _process: ShellProcess) -> None:
        with self.output.cond:
            self.output.cond.notify_all()

    def finished(self) -> None:
        # Whatever is still readable is copied; a descendant that keeps the terminal or the
        # pipe open (a daemon) cannot keep the pump alive past the drain time.
        self.output.stop(DRAIN_S)
        self.output.join(DRAIN_S + 1)

    def close(self) -> None:
        """Release the descriptors (the process has exited, or is being killed)."""
        self.output.stop(0)
        self.output.join(2)
        self.output.close()
        with self._write_lock:
            if self._write_fd >= 0:
                try:
                    os.close(self._write_fd)
                except OSError:
                    pass
                self._write_fd = -1

    # -- writing -----------------------------------------------------------------------------
    def write(self, data: bytes, deadline_s: float = WRITE_DEADLINE_S) -> int:
        """Write `data` to the process's input; returns the bytes written (fewer when the
        program stopped reading and the input buffer stayed full until the deadline)."""
        if self.process is not None:
            self.process.touch()
        with self._write_lock:
            if self._write_fd < 0:
                raise ShellError("the process's input is closed.")
            view = memoryview(data)
            written = 0
            end = time.monotonic() + deadline_s
            while view:
                try:
                    n = os.write(self._write_fd, view)
                except BlockingIOError:
                    left = end - time.monotonic()
                    if left <= 0:
                        break
                    select.select([], [self._write_fd], [], min(left, 0.05))
                    continue
                except OSError as e:
                    if written:
                        break
                    raise ShellError(f"the process no longer reads its input ({os.strerror(e.errno or 0)}).") from None
                written += n
                view = view[n:]
            return written

    def waiting_for_input(self) -> bool:
        """Whether the program is blocked reading its input (only a terminal can tell)."""
        return False

    def stillness(self) -> object | None:
        """A picture of the program while all of it sleeps, equal to another only if nothing of
        the program ran between the two; None while some of it runs (only a terminal can tell:
        elsewhere the program always counts as asleep)."""
        return ()

    def output_pending(self) -> bool:
        """Whether output the program wrote is still on its way to the spool (only a terminal
        can tell)."""
        return False

    def progress_mark(self) -> int:
        """A number that changes when the program that reads the input runs (context switches)."""
        return 0


class Pty(Interactive):
    """A pseudo-terminal of `rows` x `columns` as the process's controlling terminal."""

    tty = True

    def __init__(self, rows: int = 24, columns: int = 80, transcript: bool = False):
        """`transcript`: also keep the output as plain text (terminal.PipeText) in a file beside
        the spool, `transcript_path`, for a reader who expects a pipe's output (a log file)."""
        super().__init__()
        self.rows, self.columns = rows, columns
        self._transcript = transcript
        self.transcript_path: Path | None = None
        self._master, self._slave = os.openpty()  # both close-on-exec; the child gets dup2 copies
        self.slave_rdev = os.fstat(self._slave).st_rdev
        self.resize(rows, columns)
        self._setsid = _setsid_path()

    def resize(self, rows: int, columns: int) -> None:
        self.rows, self.columns = rows, columns
        fcntl.ioctl(self._master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def child_fds(self, spool_path: Path) -> tuple[int, int, int]:
        self._spool_path = spool_path
        if self._transcript:
            self.transcript_path = spool_path.with_suffix(".output")
        return self._slave, self._slave, self._slave

    def argv(self, wrapped: list[str], original: list[str]) -> list[str]:
        if wrapped == original:
            return wrapped
        # A wrapper put a launcher in front (bwrap): the command may start in a session of its
        # own, without a controlling terminal; setsid --ctty takes ours there, --wait keeps the
        # launcher's child alive as long as the command (its exit status is the command's).
        if self._setsid is None or wrapped[-len(original):] != original:
            return wrapped
        return [*wrapped[:-len(original)], self._setsid, "--ctty", "--wait", *original]

    def preexec(self, wrapped: bool) -> Callable[[], None] | None:
        if wrapped:
            return None

        def take_terminal() -> None:  # in the child, a session leader already (start_new_session)
            try:
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            except OSError:
                pass  # no controlling terminal: Ctrl-C then reaches nobody, the rest still works

        return take_terminal

    def started(self, process: ShellProcess) -> None:
        super().started(process)
        # The parent keeps its slave descriptor: it asks how much input is still unread
        # (waiting_for_input). So the pump never sees EIO; it stops when the process has exited.
        self._write_fd = self._master
        if self.transcript_path is not None:
            try:
                self.output.transcript = _Transcript(self.transcript_path)
            except OSError:
                self.transcript_path = None  # no copy: readers get the terminal's own bytes
        self.output.start(self._master, self._spool_path, f"codebelt-pty-{process.pid}")

    def failed(self) -> None:
        for fd in (self._master, self._slave):
            if fd >= 0:
                os.close(fd)
        self._master = self._slave = -1

    def close(self) -> None:
        super().close()  # closes the master: the terminal hangs up (SIGHUP to its session)
        self._master = -1
        if self._slave >= 0:
            os.close(self._slave)
            self._slave = -1

    # -- is it our turn? ---------------------------------------------------------------------
    def foreground(self) -> int | None:
        """The terminal's foreground process group (as this process sees pids), if any."""
        try:
            pgrp = os.tcgetpgrp(self._master)
        except OSError:
            return None
        return pgrp if pgrp > 0 else None

    def _turn_holder(self) -> tuple[int, tuple[int, int] | None] | None:
        """(pid, what it is blocked in) of the program whose turn it is: the foreground group's
        leader or, while the leader waits for its only child (git for the editor it started, a
        shell for its command), that child, followed down the group. None when it cannot tell."""
        pid = self.foreground()
        if pid is None:
            return None
        call = _blocked_in(pid)
        for _ in range(6):
            if call is None or call[0] not in _WAITS.get(_ARCH, ()):
                break
            child = _only_child(pid)
            if child is None:
                return None
            pid, call = child, _blocked_in(child)
        return pid, call

    def waiting_for_input(self) -> bool:
        """The program whose turn it is (_turn_holder) sleeps in a read of this terminal, or in
        a poll/select while its standard input is this terminal — and the output written so
        far has been copied. Read from /proc; False whenever it cannot tell."""
        holder = self._turn_holder()
        if holder is None or holder[1] is None:
            return False
        pid, call = holder
        number = call[0]
        if number in _READS.get(_ARCH, ()):
            fd = call[1]
        elif number in _POLLS.get(_ARCH, ()):
            fd = 0
        else:
            return False
        try:
            if os.stat(f"/proc/{pid}/fd/{fd}").st_rdev not in (self.slave_rdev, _DEV_TTY):
                return False
        except OSError:
            return False
        # nothing we wrote is still unread, and nothing it wrote is still uncopied
        return _queued(self._slave) == 0 and self._copied()

    def _copied(self) -> bool:
        """Everything the program wrote so far is in the spool. What a program writes reaches
        our side asynchronously (the terminal layer's flip buffer is pushed by a kernel worker,
        which lags under load); a poll of our side first completes that push when it finds
        nothing to read (n_tty's poll), so after it "nothing readable" is exact. Then a copy
        the pump has begun is waited for."""
        poller = select.poll()
        poller.register(self._master, select.POLLIN)
        try:
            if poller.poll(0):
                return False
        except OSError:
            return False
        with self.output.copying:
            return True

    def output_pending(self) -> bool:
        return not self._copied()

    def stillness(self) -> object | None:
        """The foreground group's leader and everything below it (_sleeping_tree): a shell's
        command, a wrapper's `$(…)` (a pyenv shim working out which python to start) compute
        while the leader sleeps in a wait or in a pipe's read."""
        pid = self.foreground()
        if pid is None:
            return ()
        return _sleeping_tree(pid)

    def progress_mark(self) -> int:
        """Changes once the program whose turn it is (_turn_holder: the one that reads the
        input, not a shell waiting for it) has gone to sleep again (a voluntary context switch)
        — or another program took its place. Taken before a write: a program that sleeps
        again after it has run since is done with what it was given, whereas one still asleep
        may not have been woken yet (input reaches it asynchronously)."""
        holder = self._turn_holder()
        pid = holder[0] if holder is not None else self.foreground()
        if pid is None:
            return 0
        return pid * 1_000_003 + _switches(pid)


_DEV_TTY = os.makedev(5, 0)  # /dev/tty: the controlling terminal, whichever it is
_WAITS = {"x86_64": {61, 247}, "aarch64": {260, 95}}  # wait4, waitid


def _blocked_in(pid: int) -> tuple[int, int] | None:
    """(syscall number, first argument) of a process asleep in a system call, else None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        if stat[stat.rfind(b")") + 2:].split()[0] != b"S":
            return None
        with open(f"/proc/{pid}/syscall", "rb") as f:
            call = f.read().split()
    except OSError:
        return None
    if len(call) < 2 or not call[0].isdigit():
        return None
    try:
        return int(call[0]), int(call[1], 16)
    except ValueError:
        return None


def _sleeping_tree(pid: int, limit: int = STILL_THREADS) -> tuple | None:
    """Every thread of `pid` and of the processes below it, each with its context switches and
    its children, while none of them runs or waits on the disk; None as soon as one does, or
    past `limit` threads (then it cannot tell).

    One walk is not a picture of one moment: work passes from a child to its parent (the child
    writes its answer and exits, which wakes the parent) between reading the parent asleep and
    reading the child gone. So two walks are compared (wait_for_output, STILL_S apart): a
    thread asleep in both with the same number of context switches did not run in between
    (running again and going back to sleep counts a switch), and the same children everywhere
    means nothing was started or reaped. Equal walks therefore saw every thread asleep at
    once, throughout the time between them."""
    found: list = []
    todo, looked = [pid], 0
    while todo:
        proc = todo.pop()
        try:
            threads = sorted(os.listdir(f"/proc/{proc}/task"))
        except OSError:
            found.append((proc, None))  # gone since its parent listed it: the next walk differs
            continue
        for tid in threads:
            looked += 1
            if looked > limit:
                return None
            try:
                with open(f"/proc/{proc}/task/{tid}/status", "rb") as f:
                    status = f.read()
                with open(f"/proc/{proc}/task/{tid}/children", "rb") as f:
                    children = tuple(int(c) for c in f.read().split())
            except (OSError, ValueError):
                found.append((proc, tid, None))
                continue
            state, switches = _state_and_switches(status)
            if state in (b"R", b"D"):
                return None
            found.append((proc, tid, state, switches, children))
            todo.extend(children)
    return tuple(found)


def _state_and_switches(status: bytes) -> tuple[bytes, int]:
    """A thread's state letter and its voluntary plus involuntary context switches, from its
    /proc status."""
    state, switches = b"?", 0
    for line in status.splitlines():
        if line.startswith(b"State:"):
            state = line.split()[1][:1] if len(line.split()) > 1 else b"?"
        elif line.startswith((b"voluntary_ctxt_switches:", b"nonvoluntary_ctxt_switches:")):
            try:
                switches += int(line.split()[1])
            except (IndexError, ValueError):
                pass
    return state, switches


def _only_child(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
            children = f.read().split()
    except OSError:
        return None
    return int(children[0]) if len(children) == 1 else None


def _queued(fd: int) -> int:
    """Bytes readable on `fd` (on the slave: input the program has not read yet; on the
    master: output not yet copied). -1 when it cannot tell."""
    try:
        return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    except OSError:
        return -1


def _switches(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            total = 0
            for line in f:
                if line.startswith(b"voluntary_ctxt_switches"):
                    total += int(line.split()[1])
            return total
    except (OSError, ValueError):
        return 0


class Pipes(Interactive):
    """stdin a pipe the caller writes to; stdout and stderr one pipe copied into the spool."""

    def __init__(self) -> None:
        super().__init__()
        self._in_r, self._in_w = os.pipe2(os.O_CLOEXEC)
        self._out_r, self._out_w = os.pipe2(os.O_CLOEXEC)

    def child_fds(self, spool_path: Path) -> tuple[int, int, int]:
        self._spool_path = spool_path
        return self._in_r, self._out_w, self._out_w

    def started(self, process: ShellProcess) -> None:
        super().started(process)
        os.close(self._in_r)
        os.close(self._out_w)
        self._in_r = self._out_w = -1
        os.set_blocking(self._in_w, False)
        self._write_fd = self._in_w
        self.output.start(self._out_r, self._spool_path, f"codebelt-pipes-{process.pid}")

    def failed(self) -> None:
        for fd in (self._in_r, self._in_w, self._out_r, self._out_w):
            if fd >= 0:
                os.close(fd)

    def close_input(self) -> None:
        """End of input: the program reading stdin sees EOF."""
        with self._write_lock:
            if self._write_fd >= 0:
                os.close(self._write_fd)
                self._write_fd = -1

    def close(self) -> None:
        super().close()
        if self._out_r >= 0:
            try:
                os.close(self._out_r)
            except OSError:
                pass
            self._out_r = -1


@dataclass
class WaitResult:
    reason: str  # "exited" | "waiting" (for input) | "quiet" | "timeout" | "cancelled"
    size: int  # bytes of output in the spool when the wait ended


def wait_for_output(io: Interactive, *, since: int, timeout_s: float, quiet_s: float | None = None,
                    cancel_event: threading.Event | None = None, mark: int | None = None) -> WaitResult:
    """Wait up to `timeout_s` for what the process does next; return early when it exits, when
    it is blocked reading its terminal (its turn is over), or — with `quiet_s` — when output
    arrived after byte `since`, nothing more came for `quiet_s` seconds and nothing of the
    program ran for `STILL_S` (Interactive.stillness), all of it asleep at once.

    `mark`: `io.progress_mark()` taken just before the caller wrote input; the program counts
    as waiting again only once it has run since (so the echo of our own write, which arrives
    before the program has even woken, is not mistaken for its answer)."""
    process = io.process
    assert process is not None
    start = time.monotonic()
    deadline = start + max(0.0, timeout_s)
    poll = 0.0005  # the waiting-for-input check backs off to 20 ms
    out = io.output
    seen_waiting: tuple[int, float] | None = None  # (output size, since when) it has been seen waiting
    still: tuple[object, float] | None = None  # (picture, since when) the program has been seen still
    while True:
        if cancel_event is not None and cancel_event.is_set():
            return WaitResult("cancelled", out.size)
        if not process.running:
            # the exit is known; wait (bounded) for the pump to copy what was left
            out_deadline = time.monotonic() + DRAIN_S + 0.5
            with out.cond:
                while not out.closed and time.monotonic() < out_deadline:
                    out.cond.wait(0.05)
            return WaitResult("exited", out.size)
        now = time.monotonic()
        if io.tty and (mark is None or io.progress_mark() != mark) and io.waiting_for_input():
            # Output on its way through the terminal layer is not yet visible on our side:
            # the state must hold a moment, with nothing new arriving meanwhile.
            if seen_waiting is None or seen_waiting[0] != out.size:
                seen_waiting = (out.size, now)
            confirm = CONFIRM_SILENT_S if mark is not None and out.size <= since else CONFIRM_S
            if now - seen_waiting[1] >= confirm:
                return WaitResult("waiting", out.size)
            poll = CONFIRM_S / 2
        else:
            seen_waiting = None
        if quiet_s is not None and out.size > since and seen_waiting is None and now - out.last_output >= quiet_s:
            # A program still computing is not quiet: it is quiet once nothing of it ran for a
            # while, every thread asleep (a sleep counts), and nothing it wrote is still on its
            # way to our side (the terminal layer's kernel worker lags under load: the program
            # may have answered and be asleep again while our side has seen nothing for 0.5 s;
            # the quiet is measured again once what was pending is copied). One it is about to
            # be seen waiting for input (the check above, confirming) is left to that check.
            picture = io.stillness()
            if picture is None:
                still = None
            elif still is None or still[0] != picture:
                still = (picture, time.monotonic())  # after the walk: the next starts STILL_S later
            elif (now - still[1] >= STILL_S and not io.output_pending()
                  and time.monotonic() - out.last_output >= quiet_s):
                return WaitResult("quiet", out.size)
        else:
            still = None
        if now >= deadline:
            return WaitResult("timeout", out.size)
        wait = deadline - now
        if quiet_s is not None and out.size > since:
            until_quiet = out.last_output + quiet_s - now
            if until_quiet > 0:
                wait = min(wait, until_quiet)
            elif still is not None:  # the stillness is looked at again when it would be long enough
                wait = min(wait, max(still[1] + STILL_S - now, CONFIRM_S))
            # otherwise the program is running: looked at again at the poll's pace (below),
            # not in a loop that takes a CPU from the program it waits for
        if io.tty:
            wait = min(wait, poll)
            poll = min(poll * 2, 0.02) if seen_waiting is None else CONFIRM_S / 2
        else:
            wait = min(wait, 0.05)  # the exit is noticed within this
        size_before = out.size
        with out.cond:
            if out.size == size_before and not out.closed:
                out.cond.wait(max(0.0, wait))
        if out.size != size_before:
            poll = 0.0005  # output arrived: look again soon
        process.touch()
