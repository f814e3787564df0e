"""write_stdin (Codex's profile): write characters to a running exec_command session (its
terminal, or — without one — only Ctrl-C, as an interrupt) and return what it printed since.
A write ends its wait early once the program waits for input again."""

from __future__ import annotations

import signal
import time
from typing import Any

from ..shell.execution import procs
from ..tool import ToolContext, ToolError, ToolResult
from ._codex import CodexTool, DEFAULT_MAX_OUTPUT_TOKENS, CodexInput, codex_texts, exec_sessions, finish
from ._services import task_manager

MIN_WRITE_YIELD_MS, MAX_WRITE_YIELD_MS, DEFAULT_WRITE_YIELD_MS = 250, 30_000, 250  # Codex clamps a write's wait
MIN_POLL_MS, MAX_POLL_MS = 5_000, 300_000

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "chars": {"type": "string", "description": "Bytes to write to stdin. Defaults to empty, which polls without writing."},
        "max_output_tokens": {"type": "number", "description": "Output token budget. Defaults to 10000 tokens; "
                              "larger requests may be capped by policy."},
        "session_id": {"type": "number", "description": "Identifier of the running unified exec session."},
        "yield_time_ms": {"type": "number", "description": "Wait before yielding output. Non-empty writes default to "
                          "250 ms and cap at 30000 ms; empty polls wait 5000-300000 ms by default."},
    },
    "required": ["session_id"],
    "additionalProperties": False,
}


class WriteStdinInput(CodexInput):
    chars: str = ""
    max_output_tokens: float = DEFAULT_MAX_OUTPUT_TOKENS
    session_id: int
    yield_time_ms: float | None = None


class WriteStdin(CodexTool):
    name = "write_stdin"
    description = codex_texts().description("write_stdin")
    Input = WriteStdinInput
    read_only = False
    destructive = True
    open_world = True
    max_result_chars = None
    search_hint = "type into a running exec_command session"
    schema = SCHEMA
    rules_as = "Bash"
    starts_programs = True  # confined as the tool it is decided as

    def hook_view(self, raw: dict[str, Any]) -> tuple[str, dict[str, Any], tuple[str, ...]]:
        # Typing into a program as TaskInput does in Claude Code-shaped sets: a hook written for
        # TaskInput reads `input`; one for write_stdin matches by its name.
        return "TaskInput", {"task_id": str(raw.get("session_id", "")), "input": raw.get("chars", "")}, ("write_stdin",)

    def from_hook_input(self, updated: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
        return {**{k: v for k, v in raw.items() if k != "chars"}, "chars": updated.get("input", "")}

    def summarize(self, params: WriteStdinInput) -> str:
        return f"session {params.session_id} <- {params.chars!r}"

    def run(self, params: WriteStdinInput, ctx: ToolContext) -> ToolResult:
        started = time.monotonic()
        manager = ctx.service(task_manager)
        sessions = ctx.service(exec_sessions)
        task = sessions.get(params.session_id)
        if task is None or (not task.process.running and task.reported):
            raise ToolError(codex_texts(ctx)("write_stdin.unknown_session", session=params.session_id))
        since = manager.output_size(task)
        mark = None
        if params.chars:
            if task.io is None:  # no terminal: stdin is closed; only an interrupt gets through
                if params.chars == "\u0003":
                    procs.signal_group(task.process.pid, signal.SIGINT)
                else:
                    raise ToolError(codex_texts(ctx)("write_stdin.stdin_closed"))
            else:
                try:
                    _, _, mark = manager.write(task.id, params.chars.encode("utf-8", "surrogateescape"))
                except Exception as e:  # noqa: BLE001 - the process ended meanwhile
                    raise ToolError(codex_texts(ctx)("write_stdin.failed", error=e)) from None
        if params.chars:
            asked = params.yield_time_ms if params.yield_time_ms is not None else DEFAULT_WRITE_YIELD_MS
            wait_ms = min(max(asked, MIN_WRITE_YIELD_MS), MAX_WRITE_YIELD_MS)
        else:
            wait_ms = min(max(params.yield_time_ms or 0, MIN_POLL_MS), MAX_POLL_MS)
        outcome = manager.wait(task, since, max(0.0, wait_ms) / 1000, None, ctx.cancel_event, mark)
        ctx.check_cancelled()
        text = finish(ctx, sessions, manager, task, params.session_id, started, outcome.size, int(params.max_output_tokens))
        return ToolResult(text=text, data={"session_id": params.session_id if task.process.running else None})
