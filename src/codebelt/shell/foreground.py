"""Waiting for a foreground command: progress once a second, cancellation, the blocking budget.

The caller's thread waits here while the process's own watcher thread enforces the timeout.
Cancellation (the session's cancel_event, set when an `acall` is cancelled or an MCP client
cancels) stops the whole process group. When the blocking budget runs out the command is
left running and the caller turns it into a background task (seed 000: a `npm install` must
not hold up the agent loop for minutes).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from .runner import ShellProcess
from .spool import Progress, SpoolTail

CANCEL_POLL_S = 0.05  # how quickly a cancel is noticed
PROGRESS_EVERY_S = 1.0  # SPEC §5: at most once a second

ProgressSink = Callable[[Progress, float], None]  # (progress, elapsed seconds)


def wait_foreground(
    proc: ShellProcess,
    *,
    budget_s: float | None,
    cancel_event: threading.Event | None,
    on_progress: ProgressSink | None = None,
) -> bool:
    """Wait until the command exits (True) or the budget is spent (False: still running).

    Cancelling stops the group and then waits for it to exit (bounded by the kill ladder).
    """
    started = time.monotonic()
    tail = SpoolTail(proc.spool_path) if on_progress is not None else None
    next_report = started + PROGRESS_EVERY_S
    while True:
        if proc.wait(CANCEL_POLL_S):
            return True
        now = time.monotonic()
        if cancel_event is not None and cancel_event.is_set():
            proc.stop("cancelled")
            proc.wait()
            return True
        if budget_s is not None and now - started >= budget_s:
            return False
        if tail is not None and now >= next_report:
            next_report = now + PROGRESS_EVERY_S
            try:
                on_progress(tail.update(), now - started)  # type: ignore[misc]
            except Exception:  # a broken progress sink never fails the command
                pass
