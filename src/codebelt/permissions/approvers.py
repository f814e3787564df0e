"""Approvers answer `ask` decisions: a callback, an interactive terminal prompt, or nobody."""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, TextIO

from ..errors import ApprovalRefused
from .decision import Decision
from .question import Preview, render_question

__all__ = ["ApprovalRequest", "ApprovalRefused", "Approver", "Preview", "TerminalApprover",
           "terminal_approver_if_interactive"]


@dataclass(frozen=True)
class ApprovalRequest:
    tool: str
    input: dict[str, Any]
    decision: Decision
    # One line saying what the call would do, from the tool (`Tool.summarize`): the command of a
    # Bash call, the path of an Edit. Without it the input is shown.
    detail: str | None = None
    # What the call would do beyond that line (ApplyPatch: every file, its operation, a diff).
    preview: Preview | None = None
    # Why it asks, per part of the call that asks (each file of a patch), when there are several.
    reasons: tuple[str, ...] = ()
    # Asked while the call runs (a running command wants a new domain), not before it: an
    # interface that can only ask before a call (and retry it with the answer) cannot ask this.
    while_running: bool = False

    def question(self) -> str:
        """The question to show a person: untrusted text quoted so no line of it can be forged."""
        return render_question(self)

    def summary(self, limit: int = 400) -> str:
        detail = self.detail if self.detail is not None else json.dumps(self.input, ensure_ascii=False)
        if len(detail) > limit:
            detail = detail[:limit] + "…"
        return f"{self.tool}: {detail}"


Approver = Callable[[ApprovalRequest], bool]


class TerminalApprover:
    """Asks on the controlling terminal (y/N). Used by the CLI when stdin is a TTY."""

    def __init__(self, stream_in: TextIO | None = None, stream_out: TextIO | None = None):
        self._in = stream_in or sys.stdin
        self._out = stream_out or sys.stderr
        self._lock = threading.Lock()  # one question at a time

    def __call__(self, request: ApprovalRequest) -> bool:
        with self._lock:
            self._out.write(f"\n{request.question()} [y/N] ")
            self._out.flush()
            answer = self._in.readline()
            return answer.strip().lower() in ("y", "yes")


def terminal_approver_if_interactive() -> Approver | None:
    try:
        return TerminalApprover() if sys.stdin.isatty() and sys.stderr.isatty() else None
    except (AttributeError, ValueError):
        return None
