"""Waiting for a foreground command: progress once a second, cancellation, the blocking budget.

The caller's thread waits here while the process's own watcher thread enforces the timeout.
Cancellation (the session's cancel_event, set when an `acall` is cancelled or an MCP client
cancels) stops the whole process group. When the blocking budget runs out the command is
left running and the caller turns it into a background task (a `npm install` must
not hold up the agent loop for minutes).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from .runner import ShellProcess
from .spool import Progress, SpoolTail

CANCEL_POLL_S = 0.05  # how quickly a cancel is noticed
PROGRESS_EVERY_S = 1.0  # at most once a second: enough to show life, little enough to not flood a client

ProgressSink = Callable[[Progress, float], None]  # (progress, elapsed seconds)


def wait_foreground(
    proc: ShellProcess,
    *,
    budget_s: float | None,
    cancel_event: threading.Event | None,
    on_progress: ProgressSink | None = None,
) -> bool:
    """Watch a process started with `start(watch=False)` from the caller's thread until it
    exits (True) or the budget is spent (False: still running, now watched by a thread).

    Cancelling stops the group and keeps watching until it has exited (bounded by the kill
    ladder). Whatever happens here, the process never ends up unwatched.
    """
    started = time.monotonic()
    tail = SpoolTail(proc.spool_path) if on_progress is not None else None
    state = {"next_report": started + PROGRESS_EVERY_S, "over_budget": False}

    def until() -> bool:
        now = time.monotonic()
        if cancel_event is not None and cancel_event.is_set():
            proc.stop("cancelled")  # keep watching: the kill ladder runs here
            return False
        if budget_s is not None and now - started >= budget_s:
            state["over_budget"] = True
            return True
        if tail is not None and now >= state["next_report"]:
            state["next_report"] = now + PROGRESS_EVERY_S
            try:
                on_progress(tail.update(), now - started)  # type: ignore[misc]
            except Exception:  # a broken progress sink never fails the command
                pass
        return False

    finished = False
    try:
        finished = proc.watch(until, CANCEL_POLL_S)
    finally:
        if not finished and proc.running:
            proc.watch_in_background()
    return finished
