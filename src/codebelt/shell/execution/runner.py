"""Running one shell command: `bash -c` in its own session, output spooled to a file.

- argv list with an absolute bash path (found once); never `shell=True`.
- start_new_session=True: the command leads a new session and process group, so a timeout,
  a cancel or KillShell can signal the whole tree at once (procs.py).
- stdin is /dev/null: a command that reads stdin gets EOF at once instead of hanging.
- stdout and stderr share one file descriptor opened on the spool file, so their interleaving
  is kept exactly and memory stays flat whatever the command prints.
- the working directory the command ends in is recorded by an EXIT trap (see `wrap_script`).
- a watcher thread per process waits on a pidfd (no polling), enforces the timeout and output
  cap (SIGTERM to the group, SIGKILL after a grace period) and, once bash has exited, stops
  whatever it left running in its group.
"""

from __future__ import annotations

import fcntl
import fnmatch
import os
import select
import shlex
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from ...errors import ShellError
from . import procs
from .environment import scrubbed_environ
from .quota import OutputQuota

# (argv, cwd, env) → (argv, env, preexec_fn[, cleanup[, pass_fds]]): how the sandbox wraps a
# command; the optional cleanup runs once bash has exited (the read-only jail removes its scratch
# directory), and pass_fds are descriptors the child inherits (the network proxy's channel). The
# tuple's optional `launch({fd in the command: fd here})` starts the command in the session's
# resident jail instead of spawning argv, returning a Popen-like process, or None when it cannot.
Wrap = Callable[[list[str], Path, dict], tuple]

# bash -c takes the script as one argv string; Linux caps one string at 128 KiB
# (MAX_ARG_STRLEN). Longer commands go through a script file instead.
MAX_ARGV_SCRIPT = 100_000

class Stdio:
    """How a process's standard streams are connected, when not the default (stdin /dev/null,
    stdout and stderr straight into the spool file): the interactive kinds of pty_session.py
    (a pseudo-terminal, or pipes) implement it. Methods are called in this order by
    `ShellProcess`: `child_fds` before spawning, `argv` and `preexec` to build the spawn,
    `started` once the child exists, `finished` after it has exited."""

    def child_fds(self, spool_path: Path) -> tuple[int, int, int]:
        raise NotImplementedError

    def argv(self, wrapped: list[str], original: list[str]) -> list[str]:
        return wrapped

    def preexec(self, wrapped: bool) -> Callable[[], None] | None:
        return None

    def started(self, process: "ShellProcess") -> None:
        """The child exists: close the parent's copies of its ends, start copying output."""

    def failed(self) -> None:
        """The spawn failed: release everything `child_fds` opened."""

    def finished(self) -> None:
        """The process has exited (its group may linger): stop once its output is drained."""


# Variables kept by the "clean" environment policy (plus `bash.envAllow`).
CLEAN_ENV_KEEP = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM",
                  "TZ", "PWD")

_bash_path: str | None = None


def find_bash() -> str:
    """Absolute path of bash, looked up once per process: `/bin/bash` where there is one, as
    Claude Code runs it. bash names itself by that path in its own messages (`/bin/bash: line 1:
    x: command not found`), which models read; a merged /usr would otherwise make it
    `/usr/bin/bash`. Elsewhere the bash on PATH, by its real path."""
    global _bash_path
    if _bash_path is None:
        if os.path.isfile("/bin/bash") and os.access("/bin/bash", os.X_OK):
            _bash_path = "/bin/bash"
            return _bash_path
        found = shutil.which("bash") or next(
            (p for p in ("/usr/bin/bash", "/usr/local/bin/bash") if os.access(p, os.X_OK)),
            None,
        )
        if found is None:
            raise ShellError("bash was not found on PATH; the Bash tool needs bash installed.")
        _bash_path = os.path.realpath(found)
    return _bash_path


def build_env(policy: str, allow: list[str], temp_dir: Path, marker: str,
              base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The command's environment. `inherit`: ours; `clean`: a short list plus `allow`. Either
    way, variables that look secret are left out unless `allow` (names or globs) names them
    (environment.py). Always: TMPDIR is the session's temp dir, and the process marker is set."""
    source = dict(os.environ if base is None else base)
    if policy == "clean":
        keep = (*CLEAN_ENV_KEEP, *allow)
        source = {k: v for k, v in source.items() if any(fnmatch.fnmatchcase(k, p) for p in keep)}
    env = scrubbed_environ(source, allow)
    env.setdefault("PATH", os.defpath)
    env.pop(procs.MARKER_VAR, None)
    env["TMPDIR"] = str(temp_dir)
    env[procs.MARKER_VAR] = marker
    return env


# The EXIT trap reports the final directory on an inherited pipe at a high descriptor number
# (scripts use 3-9, `exec {var}>…` starts at 10), so nothing is created on disk per command.
CWD_FD_MIN = 200


def wrap_script(command: str, cwd_fd: int | None, status: bool = False, cwd: bool = True) -> str:
    """The script bash runs: the command, with an EXIT trap that reports where it ended and,
    with `status`, how each part of its last pipeline ended.

    The trap shares the command's first line so bash's error messages keep the command's own
    line numbers. It runs on `exit N`, on errors and after the last command, keeps the exit
    status, and uses `builtin pwd -P` so a function named `pwd` cannot answer for it. Whatever
    it writes is only a hint: the caller resolves it and refuses anything outside the
    workspace. If the command replaces the trap, closes the descriptor or `exec`s, nothing is
    recorded and the directory stays as it was.

    A pipeline's exit status is its last part's (`curl URL | head` is 0 when curl could not
    connect). `PIPESTATUS`, read first thing in the trap, still holds every part's status; it
    is reported ("S 6 0") without touching what the command prints or returns.
    """
    if cwd_fd is None:
        return command
    actions = []
    if status:
        actions.append(f'builtin printf "S %s\\n" "${{PIPESTATUS[*]}}" >&{cwd_fd} 2>/dev/null')
    if cwd:
        actions.append(f"builtin pwd -P 2>/dev/null >&{cwd_fd}")
    return f"trap -- {shlex.quote('; '.join(actions))} EXIT; {command}"


@dataclass
class Outcome:
    """How a finished command ended."""

    exit_code: int | None  # 128+N when killed by signal N (shell convention)
    timed_out: bool
    interrupted: bool  # cancelled by the caller or killed (KillShell, session end)
    stop_reason: str | None  # "timeout" | "cancelled" | "killed" | "output_limit" | "session_output_limit" | "idle" | None
    duration_ms: float
    output_bytes: int
    final_cwd: str | None  # what the EXIT trap recorded, unvalidated
    pipe_status: tuple[int, ...] | None = None  # each part of the last pipeline (record_status)


@dataclass(eq=False)  # identity semantics: processes live in sets
class ShellProcess:
    """One running `bash -c COMMAND`, from spawn to the last member of its group."""

    command: str
    cwd: Path
    env: dict[str, str]
    spool_path: Path
    timeout_s: float | None = None
    grace_s: float = 2.0
    max_output_bytes: int | None = None
    quota: OutputQuota | None = None  # the session's output on disk, all commands together
    record_cwd: bool = False  # report the final directory (Outcome.final_cwd)
    record_status: bool = False  # report each part's exit status of the last pipeline
    script_dir: Path | None = None  # where a long command's script file goes
    # the interpreter and its options, when not `bash -c` (["/bin/bash", "-l"]: a login shell);
    # the script follows "-c"
    shell: list[str] | None = None
    wrap: Wrap | None = None
    marker: str = ""
    on_exit: list[Callable[["ShellProcess"], None]] = field(default_factory=list)
    stdio: Stdio | None = None  # None: stdin /dev/null, output straight into the spool
    idle_timeout_s: float | None = None  # stopped when nobody wrote to or read it this long

    def __post_init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.ended_at: float | None = None
        self.exited = threading.Event()  # bash itself has exited and the outcome is known
        self.cleaned = threading.Event()  # … and nothing of its group is left running
        self.outcome: Outcome | None = None
        self._lock = threading.Lock()
        self._stop_reason: str | None = None
        self._kill_at: float | None = None
        self._wake_r, self._wake_w = -1, -1
        self._script_file: Path | None = None
        self._cleanup: Callable[[], None] | None = None
        self._spool_fd = -1
        self._cwd_r = -1
        self._pidfd = -1
        self.last_used = 0.0  # monotonic time of the last write or read (the idle timeout)

    # -- start ---------------------------------------------------------------------------------
    def start(self, watch: bool = True) -> "ShellProcess":
        """Spawn the command. `watch=False`: the caller must call `watch()` (or
        `watch_in_background()`) itself, or nothing enforces the timeout."""
        cwd_w = -1
        if self.record_cwd or self.record_status:
            # Non-blocking: a child that fills the pipe cannot make the trap hang bash.
            self._cwd_r, w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
            cwd_w = fcntl.fcntl(w, fcntl.F_DUPFD_CLOEXEC, CWD_FD_MIN)
            os.close(w)
        script = wrap_script(self.command, cwd_w if cwd_w >= 0 else None, self.record_status, self.record_cwd)
        bash = find_bash()
        if len(script.encode("utf-8", "surrogateescape")) > MAX_ARGV_SCRIPT:
            # Too long for one argv string: bash reads it from a file (same semantics,
            # except that error messages name the file instead of "-c").
            folder = self.script_dir or self.spool_path.parent
            self._script_file = folder / f"{self.spool_path.stem}.sh"
            self._script_file.write_bytes(script.encode("utf-8", "surrogateescape"))
            argv = [*(self.shell or [bash]), str(self._script_file)]
        elif self.shell:
            argv = [*self.shell, "-c", script]
        else:
            argv = [bash, "-c", script]
        wrapped, inherited, launch = (argv, self.env, None), (), None
        original = argv
        if self.wrap is not None:
            wrapped = self.wrap(argv, self.cwd, self.env)
            self._cleanup = wrapped[3] if len(wrapped) > 3 else None
            inherited = tuple(wrapped[4]) if len(wrapped) > 4 else ()
            launch = getattr(wrapped, "launch", None) if not inherited else None
        stdio = self.stdio
        spool_fd = -1
        if stdio is not None:
            # A terminal or pipes of our own: the one-shot jail's arguments. A terminal must be
            # the command's controlling terminal, in a session of its own, which only a process
            # codebelt starts itself can be given; the resident's launch takes the spool.
            launch = None
        if stdio is not None:
            argv, env, preexec = wrapped[:3]
            argv = stdio.argv(list(argv), original)
            preexec = _chain(stdio.preexec(argv != original), preexec)
            wrapped = (argv, env, preexec)
            stdin, stdout, stderr = stdio.child_fds(self.spool_path)
        else:
            self._spool_fd = os.open(self.spool_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o600)
            spool_fd = self._spool_fd
            stdin, stdout, stderr = subprocess.DEVNULL, spool_fd, subprocess.STDOUT
        try:
            self.started_at = self.last_used = time.monotonic()
            # From a thread that outlives the command (procs.spawn): a sandbox that dies with
            # its parent would otherwise die with whichever worker thread started it.
            fds = {1: spool_fd, 2: spool_fd, **({cwd_w: cwd_w} if cwd_w >= 0 else {})}

            def one_shot() -> subprocess.Popen:
                # the wrapper's own argv (a one-shot sandbox, or none): read only when the
                # resident does not take the command, since working it out costs
                argv, env, preexec = wrapped[:3]
                return subprocess.Popen(argv, cwd=self.cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr,
                                        start_new_session=True, close_fds=True,
                                        pass_fds=((cwd_w,) if cwd_w >= 0 else ()) + inherited, preexec_fn=preexec)

            # the resident's launch starts no child of ours (it asks a process that runs): from
            # this thread, sparing two hand-offs to the spawning thread
            self.proc = (launch and launch(fds)) or procs.spawn(one_shot)
        except OSError as e:
            self._run_cleanup()
            if stdio is not None:
                stdio.failed()
            else:
                os.close(self._spool_fd)
            self._spool_fd = -1
            for fd in (cwd_w, self._cwd_r):
                if fd >= 0:
                    os.close(fd)
            self._cwd_r = -1
            raise ShellError(f"could not start bash in {self.cwd}: {e.strerror or e}") from e
        if stdio is not None:
            stdio.started(self)
        else:
            os.close(self._spool_fd)  # the child holds its own copies
        self._spool_fd = -1
        if cwd_w >= 0:
            os.close(cwd_w)
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            # a command the resident jail started is not our child: its own descriptor says
            # when it ended
            exit_fd = getattr(self.proc, "exit_fd", None)
            self._pidfd = os.dup(exit_fd) if exit_fd is not None else os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):
            self._pidfd = -1
        if watch:
            self.watch_in_background()
        return self

    def _run_cleanup(self) -> None:
        cleanup, self._cleanup = self._cleanup, None
        if cleanup is not None:
            try:
                cleanup()
            except OSError:
                pass  # a scratch directory that cannot be removed is swept at session end

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    # -- observing -------------------------------------------------------------------------------
    def output_size(self) -> int:
        try:
            return os.path.getsize(self.spool_path)
        except OSError:
            return 0

    def wait(self, timeout: float | None = None) -> bool:
        return self.exited.wait(timeout)

    @property
    def running(self) -> bool:
        return not self.exited.is_set()

    @property
    def reaped(self) -> bool:
        """bash (or its sandbox) has been waited for: its pid, the group's number, is free for
        anyone. From then on the group is reached member by member (procs.signal_members),
        never by number. Read under `_lock`, which the watcher holds while it reaps."""
        return self.proc is not None and self.proc.returncode is not None

    def touch(self) -> None:
        """Someone wrote to or read the process: its idle timeout starts again."""
        self.last_used = time.monotonic()

    def elapsed_ms(self) -> float:
        end = self.ended_at if self.ended_at is not None else time.monotonic()
        return (end - self.started_at) * 1000

    # -- stopping --------------------------------------------------------------------------------
    def stop(self, reason: str) -> bool:
        """Ask the group to end (SIGTERM now, SIGKILL after the grace period). Any thread.
        Returns False if the command had already exited."""
        with self._lock:
            if self.exited.is_set() or self.reaped:
                return False
            if self._stop_reason is None:
                self._stop_reason = reason
                self._kill_at = time.monotonic() + self.grace_s
                procs.signal_group(self.pid, signal.SIGTERM)
                procs.signal_group(self.pid, signal.SIGCONT)
            self._wake()
        return True

    def _wake(self) -> None:
        # Called with the lock held: the pipe is closed under the same lock, so a late
        # stop() can never write into a reused descriptor number.
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    # -- the watcher -----------------------------------------------------------------------------
    def watch_in_background(self) -> None:
        """Hand the watching to a daemon thread (background tasks, auto-background)."""
        threading.Thread(target=self.watch, name=f"codebelt-shell-{self.pid}", daemon=True).start()

    def watch(self, until: Callable[[], bool] | None = None, poll: float = 0.05) -> bool:
        """Watch the process until it exits: enforce the timeout, the output cap and the kill
        ladder. With `until`, it is called every `poll` seconds and watching stops (returning
        False, the process still running) when it returns True; a foreground caller watches
        in its own thread this way, which spares a thread and a hand-off per command.
        Returns True once the process has exited and its outcome is set."""
        assert self.proc is not None
        proc = self.proc
        deadline = self.started_at + self.timeout_s if self.timeout_s else None
        pidfd = self._pidfd
        while True:
            now = time.monotonic()
            waits = []
            if deadline is not None and self._stop_reason is None:
                waits.append(deadline - now)
            if self.idle_timeout_s is not None and self._stop_reason is None:
                waits.append(self.last_used + self.idle_timeout_s - now)
            if self._kill_at is not None:
                waits.append(self._kill_at - now)
            if (self.max_output_bytes is not None or self.quota is not None) and self._stop_reason is None:
                waits.append(0.25)
            if until is not None:
                waits.append(poll)
            wait = max(0.0, min(waits)) if waits else None
            if pidfd >= 0:
                ready, _, _ = select.select([pidfd, self._wake_r], [], [], wait)
                if self._wake_r in ready:
                    try:
                        os.read(self._wake_r, 4096)
                    except OSError:
                        pass
            else:  # no pidfd (old kernel): poll
                time.sleep(min(wait if wait is not None else 0.05, 0.05))
            with self._lock:  # reaping frees the pid: never while a signal to it is on its way
                if proc.poll() is not None:
                    break
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                self.stop("timeout")
            elif self.idle_timeout_s is not None and now >= self.last_used + self.idle_timeout_s:
                self.stop("idle")
            elif self._stop_reason is None and (self.max_output_bytes is not None or self.quota is not None):
                size = self.output_size()
                if self.max_output_bytes is not None and size > self.max_output_bytes:
                    self.stop("output_limit")
                elif self.quota is not None and self.quota.update(self, size):
                    self.stop("session_output_limit")
            with self._lock:
                if self._kill_at is not None and now >= self._kill_at and not self.reaped:
                    procs.signal_group(proc.pid, signal.SIGKILL)
                    self._kill_at = None
            if until is not None and until():
                return False
        self._finish()
        return True

    def _finish(self) -> None:
        assert self.proc is not None
        rc = self.proc.wait()
        self.ended_at = time.monotonic()
        if self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1
        size = self.output_size()
        if self.quota is not None:
            self.quota.update(self, size)
        final_cwd = None
        pipe_status = None
        if self._cwd_r >= 0:
            # Read what the trap wrote, without waiting for EOF (a child may still hold the
            # write end); the last line wins if a child wrote there too.
            try:
                data = os.read(self._cwd_r, 65536)
            except OSError:
                data = b""
            os.close(self._cwd_r)
            self._cwd_r = -1
            lines = data.decode("utf-8", "surrogateescape").rstrip("\n").split("\n")
            # The last line of each kind wins, if a child wrote there too.
            dirs = [x for x in lines if x.startswith("/")]
            final_cwd = dirs[-1] if dirs and self.record_cwd else None
            statuses = [x[2:].split() for x in lines if x.startswith("S ")]
            if statuses and all(v.isdigit() for v in statuses[-1]):
                pipe_status = tuple(int(v) for v in statuses[-1])
        if self.stdio is not None:
            self.stdio.finished()
        if self._script_file is not None:
            try:
                self._script_file.unlink()
            except OSError:
                pass
        self._run_cleanup()
        with self._lock:
            reason = self._stop_reason
            self._kill_at = None
        self.outcome = Outcome(
            exit_code=rc if rc >= 0 else 128 - rc,
            timed_out=reason == "timeout",
            interrupted=reason in ("cancelled", "killed", "session_end", "idle"),
            stop_reason=reason,
            duration_ms=(self.ended_at - self.started_at) * 1000,
            output_bytes=size,
            final_cwd=final_cwd,
            pipe_status=pipe_status,
        )
        # Whatever bash left behind in its group (`cmd &`, children ignoring SIGTERM) is
        # stopped: nothing outlives the command that started it. The common case (nothing
        # left) costs one killpg(0); otherwise a thread runs the kill ladder, so the result
        # does not wait for the grace period.
        leftovers = ((not getattr(self.proc, "leaves_nothing", False) and procs.group_alive(self.pid))
                     or (reason is not None and bool(self.marker)))
        self.exited.set()
        for callback in list(self.on_exit):
            try:
                callback(self)
            except Exception:
                pass
        if leftovers:
            threading.Thread(target=self._clean_up, args=(reason,), daemon=True,
                             name=f"codebelt-cleanup-{self.pid}").start()
        else:
            self._close_wake()
            self.cleaned.set()

    def _clean_up(self, reason: str | None) -> None:
        try:
            if procs.group_alive(self.pid):
                procs.kill_members(self.pid, self.grace_s)  # bash was reaped: never by number
            if reason is not None and self.marker:
                procs.sweep_marked(self.marker)
        finally:
            self._close_wake()
            self.cleaned.set()

    def _close_wake(self) -> None:
        with self._lock:
            for fd in (self._wake_r, self._wake_w):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self._wake_r = self._wake_w = -1

    def kill_now(self) -> None:
        """Session end: SIGKILL the group and its escapees at once, no grace."""
        if self.proc is None:
            return
        with self._lock:
            if not self.reaped:
                procs.signal_group(self.pid, signal.SIGKILL)
        procs.signal_members(self.pid, signal.SIGKILL)  # what is left once bash was reaped
        if self.marker:
            procs.sweep_marked(self.marker)


def _chain(first: Callable[[], None] | None, then: Callable[[], None] | None) -> Callable[[], None] | None:
    """One preexec function running `first`, then `then` (either may be None)."""
    if first is None or then is None:
        return first or then

    def both() -> None:
        first()
        then()

    return both
