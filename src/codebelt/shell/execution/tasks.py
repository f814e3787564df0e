"""Shell tasks of one session: every command it starts, and the ones running in the background.

`TaskManager` is a per-session service. It starts every Bash
command (so it can stop every one of them at session end), hands out task ids for
background ones (`bash_1`, `bash_2`, …, in Claude Code's style), serves BashOutput's
incremental reads and KillShell. Tools call it from worker threads: all state sits behind
one lock, and the processes themselves are watched by their own threads (runner.py).

Background tasks have no timeout unless the call gave one (as in Claude Code), or the caller's
default does; every task is killed when the session closes.
Finished tasks keep their output file (in the session's results directory, readable with
Read/Grep) until the session ends.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ...errors import ShellError
from . import procs
from .environment import for_terminal
from .pty_session import Interactive, WaitResult, wait_for_output
from .runner import ShellProcess, Wrap
from .quota import OutputQuota
from .spool import IncrementalReader, SpoolDir
from .terminal import TerminalReader

if TYPE_CHECKING:
    from ...linear_regex import LinearPattern

DEFAULT_GRACE_S = 2.0
DEFAULT_MAX_OUTPUT_BYTES = 4 << 30  # a runaway `yes` stops before it fills the disk
DEFAULT_MAX_SESSION_OUTPUT_BYTES = 8 << 30  # … and ten of them in the background too
DEFAULT_MAX_INTERACTIVE = 64  # live processes with an input at once (Codex keeps as many)


@dataclass
class Task:
    """A command running (or finished) in the background."""

    id: str
    command: str
    description: str | None
    process: ShellProcess
    # "requested" (run_in_background) | "auto" (moved after the blocking budget) | "session" (an
    # exec_command session, read through write_stdin rather than its output file)
    how: str
    reader: IncrementalReader | TerminalReader
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The caller saw how it ended (a read after the end, or a stop): no notice is needed.
    reported: bool = False
    _announced: bool = False
    # set once the end was handled (the end callback ran): what it adds to the output is there
    settled: threading.Event = field(default_factory=threading.Event)

    @property
    def output_path(self) -> Path:
        """The file a reader is pointed to: the output as a pipe would have carried it (for a
        terminal, its plain-text transcript when one is kept)."""
        return getattr(self.process.stdio, "transcript_path", None) or self.process.spool_path

    @property
    def io(self) -> Interactive | None:
        """The process's input (a terminal or a pipe), None when its stdin is /dev/null."""
        stdio = self.process.stdio
        return stdio if isinstance(stdio, Interactive) else None

    def status(self) -> str:
        """running | completed | failed | killed | timed_out (+ exit code in `status_text`)."""
        out = self.process.outcome
        if out is None:
            return "running"
        if out.timed_out:
            return "timed_out"
        if out.stop_reason in ("killed", "cancelled", "session_end", "idle"):
            return "killed"
        if out.stop_reason in ("output_limit", "session_output_limit"):
            return "killed"
        return "completed" if out.exit_code == 0 else "failed"

    def status_text(self) -> str:
        out = self.process.outcome
        if out is None:
            return f"running (for {self.process.elapsed_ms() / 1000:.0f}s)"
        if out.timed_out:
            return f"timed out after {out.duration_ms / 1000:.1f}s and was killed"
        if out.stop_reason == "output_limit":
            return "killed: its output exceeded the per-command output limit (bash.maxOutputBytes)"
        if out.stop_reason == "session_output_limit":
            return ("killed: the session's command output on disk exceeded its limit "
                    "(bash.maxSessionOutputBytes)")
        if out.stop_reason == "idle":
            idle = self.process.idle_timeout_s or 0
            return f"killed: nothing was written to it or read from it for {idle:g}s (its idle timeout)"
        if out.stop_reason in ("killed", "cancelled", "session_end"):
            return "killed"
        return f"exited with code {out.exit_code}"


class TaskManager:
    """Starts and tracks a session's shell commands; closes them all at session end."""

    def __init__(
        self,
        spool_dir: Path,
        marker_prefix: str,
        env: dict[str, str],
        *,
        grace_s: float = DEFAULT_GRACE_S,
        max_output_bytes: int | None = DEFAULT_MAX_OUTPUT_BYTES,
        max_session_output_bytes: int | None = DEFAULT_MAX_SESSION_OUTPUT_BYTES,
        wrapper: Callable[[], Wrap | None] | None = None,
        on_task_end: Callable[[Task], None] | None = None,
        max_interactive: int = DEFAULT_MAX_INTERACTIVE,
    ):
        """`env` is the environment every command starts from (nothing a command exports
        carries over); `marker_prefix` tags every process so escapees can be found at close;
        `wrapper` is asked once, on the first spawn, for the sandbox's argv wrapper — a sandbox
        that is required but unavailable raises there, and that refusal is passed on: running
        unsandboxed instead would be the wrong answer. `on_task_end(task)` is called once when a
        background task ends (from the thread that watched it)."""
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._task_seq = itertools.count(1)
        self._tasks: dict[str, Task] = {}
        self._live: set[ShellProcess] = set()
        self._closed = False
        self._wrapper_factory = wrapper
        self._wrap: Wrap | None = None
        self._wrap_loaded = False
        self.grace_s = grace_s
        self.max_output_bytes = max_output_bytes
        self.quota = OutputQuota(max_session_output_bytes)
        self.spool_dir = Path(spool_dir)
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        self.marker_prefix = marker_prefix
        self._spools = SpoolDir(self.spool_dir)
        self._env = dict(env)
        self._on_task_end = on_task_end
        self.max_interactive = max_interactive

    def wrapper(self) -> Wrap | None:
        if not self._wrap_loaded:
            self._wrap = self._wrapper_factory() if self._wrapper_factory is not None else None
            self._wrap_loaded = True
        return self._wrap

    # -- starting ------------------------------------------------------------------------------
    def spawn(self, command: str, cwd: Path, timeout_s: float | None,
              record_cwd: bool = True, watch: bool = True, wrap: Wrap | None = None,
              record_status: bool = False, stdio: Interactive | None = None,
              idle_timeout_s: float | None = None, env: dict[str, str] | None = None,
              shell: list[str] | None = None) -> ShellProcess:
        """Start `command` in `cwd`. Raises ShellError if it cannot start. `watch=False`:
        the caller watches it (runner.ShellProcess.watch). `wrap`: run it in this wrapper
        (the read-only jail) instead of the session's sandbox. `stdio`: an input to write to
        (pty_session.Pty or Pipes) instead of /dev/null, with `idle_timeout_s`; `env`:
        variables set on top of the session's (a tool set's own, such as Codex's)."""
        wrap = wrap or self.wrapper()
        with self._lock:
            self._refuse_if_closed()
            if stdio is not None and self._interactive_count() >= self.max_interactive:
                stdio.failed()
                raise ShellError(
                    f"{self.max_interactive} processes that take input are already running in this session, "
                    "the most it keeps. Stop one you no longer need first.")
            n = next(self._seq)
        marker = f"{self.marker_prefix}{n}"
        env = {**for_terminal(self._env, stdio is not None and stdio.tty), **(env or {})}
        env[procs.MARKER_VAR] = marker
        proc = ShellProcess(
            command=command,
            cwd=cwd,
            env=env,
            spool_path=self._spools.take(),
            timeout_s=timeout_s,
            grace_s=self.grace_s,
            max_output_bytes=self.max_output_bytes,
            quota=self.quota,
            record_cwd=record_cwd,
            record_status=record_status,
            script_dir=self.spool_dir,
            wrap=wrap,
            marker=marker,
            stdio=stdio,
            idle_timeout_s=idle_timeout_s,
            shell=shell,
        )
        if stdio is not None:
            proc.on_exit.append(lambda p: stdio.close())
        with self._lock:  # checked again with the add: close() must see every process it has to stop
            self._refuse_if_closed()
            self._live.add(proc)
        proc.on_exit.append(self._forget)
        try:
            # In the calling thread: a command the resident jail takes is no child of ours, and
            # whatever is forked goes through procs.spawn, whose thread lives as long as the
            # process (bwrap --die-with-parent sets PR_SET_PDEATHSIG, which fires when the
            # *thread* that forked it exits: a short-lived caller thread must not be that one).
            # A hand-off to a thread of this manager's would cost two wake-ups per command.
            proc.start(watch)
        except BaseException:
            self._forget(proc)
            raise
        with self._lock:
            closed_meanwhile = self._closed
        if closed_meanwhile:  # close() ran while this one was starting and may have missed it
            proc.stop("session_end")
        return proc

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise ShellError("the session is closed; no new commands can start.")

    def release_spool(self, proc: ShellProcess) -> None:
        """The output of a finished foreground command was shown inline: delete it."""
        self._spools.discard(proc.spool_path)
        self.quota.release(proc)

    def _forget(self, proc: ShellProcess) -> None:
        with self._lock:
            self._live.discard(proc)

    def _interactive_count(self) -> int:
        """Processes with an input still running (called with the lock held)."""
        return sum(1 for p in self._live if p.stdio is not None and p.running)

    # -- background tasks ----------------------------------------------------------------------
    def adopt(self, proc: ShellProcess, command: str, description: str | None, how: str,
              task_id: str | None = None) -> Task:
        """Make a started process a background task with an id (`bash_N`, or the caller's)."""
        stdio = proc.stdio
        if isinstance(stdio, Interactive) and stdio.tty:
            reader: IncrementalReader | TerminalReader = TerminalReader(  # type: ignore[attr-defined]
                proc.spool_path, stdio.columns, stdio.rows, getattr(stdio, "transcript_path", None))
        else:
            reader = IncrementalReader(proc.spool_path)
        with self._lock:
            task_id = task_id or f"bash_{next(self._task_seq)}"
            if task_id in self._tasks:
                raise ShellError(f"a task with id {task_id} exists already")
            task = Task(task_id, command, description, proc, how, reader)
            self._tasks[task_id] = task
        proc.on_exit.append(lambda _p: self._ended(task))
        if not proc.running:  # it ended before the callback was in place
            self._ended(task)
        return task

    def _ended(self, task: Task) -> None:
        with self._lock:
            if task._announced or self._closed:
                task.settled.set()
                return
            task._announced = True
        try:
            if self._on_task_end is not None:
                try:
                    self._on_task_end(task)
                except Exception:  # noqa: BLE001 - a listener never breaks the watcher thread
                    pass
        finally:
            task.settled.set()

    def get(self, task_id: str) -> Task:
        with self._lock:
            task = self._tasks.get(task_id.strip())
            known = list(self._tasks)
        if task is None:
            listing = ", ".join(f"{t}" for t in known) if known else "none"
            raise KeyError(
                f"No background shell with id {task_id!r}. Known shell ids: {listing}."
                + (" Start one with Bash and run_in_background: true." if not known else "")
            )
        return task

    def tasks(self) -> list[Task]:
        with self._lock:
            return list(self._tasks.values())

    def read(self, task_id: str, pattern: "LinearPattern | None", max_bytes: int) -> tuple[Task, str, bool]:
        """New output of a task since the last read: (task, text, truncated)."""
        task = self.get(task_id)
        task.process.touch()
        with task.lock:
            finished = not task.process.running
            size = self.output_size(task)
            text, _, truncated = task.reader.read(size, finished, max_bytes, pattern)
        return task, text, truncated

    def read_to(self, task: Task, size: int, max_bytes: int) -> tuple[str, bool]:
        """A task's output up to byte `size` (what a wait saw), rendered: (text, truncated)."""
        task.process.touch()
        with task.lock:
            text, _, truncated = task.reader.read(size, not task.process.running, max_bytes, None)
        return text, truncated

    def output_size(self, task: Task) -> int:
        io = task.io
        if io is None:
            return task.process.output_size()
        size = io.output.size  # what the pump copied (counted as it is copied, for waits)
        if not task.process.running and io.output.closed:
            try:  # and, once it stopped, what was added to the file after (the end line)
                size = max(size, os.path.getsize(task.process.spool_path))
            except OSError:
                pass
        return size

    def write(self, task_id: str, data: bytes) -> tuple[Task, int, int | None]:
        """Write `data` to a task's input: (task, bytes written, the progress mark taken just
        before, for `wait`). Raises KeyError for an unknown task, ShellError when it takes no
        input."""
        task = self.get(task_id)
        io = task.io
        if io is None:
            raise ShellError(
                f"{task.id} takes no input: it was started as a foreground command (moved to the "
                "background later), so its input is /dev/null.")
        if not task.process.running:
            raise ShellError(f"{task.id} is not running (it {task.status_text()}); nothing can be written to it.")
        mark = io.progress_mark() if io.tty else None
        written = io.write(data) if data else 0
        task.process.touch()
        return task, written, mark

    def wait(self, task: Task, since: int, timeout_s: float, quiet_s: float | None,
             cancel_event: threading.Event | None = None, mark: int | None = None) -> WaitResult:
        """Wait for what a task does next (pty_session.wait_for_output)."""
        io = task.io
        if io is None:
            task.process.exited.wait(timeout_s)
            return WaitResult("exited" if not task.process.running else "timeout", task.process.output_size())
        return wait_for_output(io, since=since, timeout_s=timeout_s, quiet_s=quiet_s,
                               cancel_event=cancel_event, mark=mark)

    def forget(self, task_id: str) -> None:
        """Drop a finished task's record (its output file stays until the session ends)."""
        with self._lock:
            task = self._tasks.get(task_id)
            if task is not None and not task.process.running:
                del self._tasks[task_id]

    def kill(self, task_id: str) -> tuple[Task, bool]:
        """Stop a task and its group; (task, whether it was still running)."""
        task = self.get(task_id)
        was_running = task.process.stop("killed")
        if was_running:
            task.process.wait(task.process.grace_s + 5)
            # its end's listeners run after the exit (the line that ends its output file): the
            # caller's next Read of that file must find it
            task.settled.wait(2)
        return task, was_running

    # -- session end ---------------------------------------------------------------------------
    def close(self) -> None:
        """Kill every running command and its group, background or not. Nothing outlives
        the session: SIGTERM to all groups at once, SIGKILL after one shared grace period,
        then a sweep for escapees carrying the session's marker."""
        with self._lock:
            self._closed = True
            live = list(self._live)
            tasks = list(self._tasks.values())
        procs_all = {*live, *(t.process for t in tasks)}
        for p in procs_all:
            if p.running:
                p.stop("session_end")
        deadline = time.monotonic() + self.grace_s + 1
        for p in procs_all:
            p.exited.wait(max(0.0, deadline - time.monotonic()))
        for p in procs_all:
            if p.running:
                p.kill_now()
        for p in procs_all:
            p.cleaned.wait(max(0.1, deadline + self.grace_s + 1 - time.monotonic()))
        procs.sweep_marked(self.marker_prefix, prefix=True)
        self._spools.close()
