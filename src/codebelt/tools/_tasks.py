"""What BashOutput/TaskOutput and KillShell/TaskStop share: one implementation behind Claude
Code's old and current names for the background-task tools."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

from pydantic import BaseModel, Field

from .. import linear_regex
from ..errors import RegexError, ShellError
from ..tool import ToolContext, ToolError, ToolResult
from ._services import task_manager

INLINE_BYTES = 26_000  # new output shown per read; more is summarised (head + tail + file path)


class TaskOutputResult(BaseModel):
    shellId: str
    command: str
    status: str = Field(description="running | completed | failed | killed | timed_out")
    exitCode: int | None = None
    stdout: str = Field(description="New output since the last read (filtered if a filter was given)")
    truncated: bool = False
    outputPath: str = Field(description="File with the shell's full output")


class TaskInputResult(TaskOutputResult):
    bytesWritten: int = Field(description="Bytes of input written")
    screen: bool = Field(False, description="stdout is the screen of a full-screen program, not new lines")
    waitingForInput: bool = Field(False, description="The program is blocked reading its terminal")


class TaskStopResult(BaseModel):
    shellId: str
    command: str
    wasRunning: bool
    status: str
    message: str


def compile_filter(pattern: str | None) -> linear_regex.LinearPattern | None:
    """The filter as a linear-time pattern: a model's regex runs in the server's process, where
    a backtracking one (`(a+)+$`) would freeze every client."""
    if pattern is None or pattern == "":
        return None
    try:
        return linear_regex.compile(pattern)
    except RegexError as e:
        raise ToolError(
            f"Invalid filter regex. {e} Pass a regular expression such as 'error|warning', or omit "
            "filter to get all new output."
        ) from None


def read_task(ctx: ToolContext, task_id: str, pattern: linear_regex.LinearPattern | None = None,
              wait_ms: float = 0) -> ToolResult:
    """New output of a background task since the last read, and its status; with `wait_ms`,
    first wait (cancellably) up to that long for the task to end."""
    manager = ctx.service(task_manager)
    try:
        task = manager.get(task_id)
    except KeyError as e:
        raise ToolError(ctx.texts.get("BashOutput.unknown", e.args[0], id=task_id)) from None
    deadline = time.monotonic() + wait_ms / 1000
    while task.process.running and time.monotonic() < deadline:
        ctx.check_cancelled()
        task.process.exited.wait(min(0.1, max(0.0, deadline - time.monotonic())))
    if not task.process.running:
        task.settled.wait(2)  # the end's line is in the output file
    task, text, truncated = manager.read(task.id, pattern, INLINE_BYTES)
    out = task.process.outcome
    status = task.status()
    if status != "running":
        task.reported = True
    t = ctx.texts  # BashOutput's texts (TaskOutput, codebelt's, shares them); "" leaves a part out
    parts = [t("BashOutput.status", status=status)]
    if out is not None and out.exit_code is not None:
        parts.append(t("BashOutput.exit_code", code=out.exit_code))
    if text:
        parts.append(t("BashOutput.output", text=text.rstrip("\n")))
    else:
        parts.append(t("BashOutput.no_output", filtered=" matching the filter" if pattern else ""))
    if status != "running":
        parts.append(t("BashOutput.ended", id=task.id, status=task.status_text()))
    elif wait_ms:
        parts.append(t("BashOutput.waited", id=task.id, seconds=f"{wait_ms / 1000:g}"))
    if t.has("BashOutput.timestamp"):
        now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        parts.append(t("BashOutput.timestamp", time=now))  # as JavaScript's toISOString()
    parts = [p for p in parts if p]
    data = TaskOutputResult(
        shellId=task.id, command=task.command, status=status,
        exitCode=out.exit_code if out is not None else None, stdout=text, truncated=truncated,
        outputPath=str(task.output_path),
    ).model_dump()
    return ToolResult(text=t("BashOutput.join").join(parts), data=data)


def kill_shell(ctx: ToolContext, task_id: str) -> ToolResult:
    """KillShell, the older name: a sentence, and stopping an ended task is no error."""
    manager = ctx.service(task_manager)
    try:
        task, was_running = manager.kill(task_id)
    except KeyError as e:
        raise ToolError(ctx.texts.get("KillShell.unknown", e.args[0], id=task_id)) from None
    task.reported = True
    if was_running:
        message = ctx.texts("KillShell.killed", id=task.id, command=task.command)
    else:
        message = ctx.texts("KillShell.not_running", id=task.id, status=task.status_text(), state=task.status())
        if ctx.texts.value("KillShell.not_running_is_error", False):  # older releases refused it
            raise ToolError(message)
    data = TaskStopResult(
        shellId=task.id, command=task.command, wasRunning=was_running,
        status=task.status(), message=message,
    ).model_dump()
    if ctx.texts.value("KillShell.as_json", False):  # older releases answered with the result object
        return ToolResult(text=json.dumps({"message": message, "shell_id": task.id}, ensure_ascii=False,
                                          separators=(",", ":")), data=data)
    return ToolResult(text=message, data=data)


def stop_task(ctx: ToolContext, task_id: str) -> ToolResult:
    """Stop a running task. As Claude Code: the answer is a JSON object, and an id that names no
    running task (unknown, ended, already stopped) is an error."""
    manager = ctx.service(task_manager)
    try:
        task = manager.get(task_id)
    except KeyError:
        raise ToolError(ctx.texts("TaskStop.unknown", id=task_id)) from None
    if not task.process.running:
        raise ToolError(ctx.texts("TaskStop.unknown", id=task_id))
    task, was_running = manager.kill(task.id)
    task.reported = True
    if not was_running:  # it ended while being stopped
        raise ToolError(ctx.texts("TaskStop.unknown", id=task_id))
    message = ctx.texts("TaskStop.stopped", id=task.id, command=task.command)
    data = TaskStopResult(
        shellId=task.id, command=task.command, wasRunning=was_running,
        status=task.status(), message=message,
    ).model_dump()
    text = json.dumps({"message": message, "task_id": task.id, "task_type": "local_bash",
                       "command": task.command}, ensure_ascii=False, separators=(",", ":"))
    return ToolResult(text=text, data=data)


def write_task(ctx: ToolContext, task_id: str, chars: str, wait_ms: float, quiet_ms: float | None) -> ToolResult:
    """Write characters to a background task's terminal, wait (cancellably) for what it does
    next — up to `wait_ms`, less when it exits, waits for input again or its output goes quiet
    for `quiet_ms` — and return what it printed since the last read."""
    manager = ctx.service(task_manager)
    try:
        task = manager.get(task_id)
        since = manager.output_size(task)
        data = chars.encode("utf-8", "surrogateescape")
        task, written, mark = manager.write(task.id, data)
    except KeyError as e:
        raise ToolError(e.args[0]) from None
    except ShellError as e:
        raise ToolError(f"Nothing was written: {e}") from None
    outcome = manager.wait(task, since, wait_ms / 1000, quiet_ms / 1000 if quiet_ms is not None else None,
                           ctx.cancel_event, mark)
    if outcome.reason == "cancelled":
        ctx.check_cancelled()
    task, text, truncated = manager.read(task.id, None, INLINE_BYTES)
    out = task.process.outcome
    status = task.status()
    if status != "running":
        task.reported = True
    parts = [f"<status>{status}</status>"]
    if out is not None and out.exit_code is not None:
        parts.append(f"<exit_code>{out.exit_code}</exit_code>")
    screen = bool(getattr(task.reader, "screen", False))
    tag = "screen" if screen else "stdout"
    body = text.rstrip("\n") if not screen else text
    parts.append(f"<{tag}>\n{body}\n</{tag}>" if body else "<stdout>(no new output)</stdout>")
    if written < len(data):
        parts.append(f"Only {written} of {len(data)} bytes were written: the program stopped reading its input.")
    if status != "running":
        parts.append(f"Shell {task.id} {task.status_text()}.")
    elif outcome.reason == "waiting":
        parts.append(f"Shell {task.id} is waiting for input.")
    elif outcome.reason == "timeout":
        parts.append(f"Shell {task.id} is still running after waiting {wait_ms / 1000:g}s.")
    data_out = TaskInputResult(
        shellId=task.id, command=task.command, status=status,
        exitCode=out.exit_code if out is not None else None, stdout=text, truncated=truncated,
        outputPath=str(task.output_path), bytesWritten=written, screen=screen,
        waitingForInput=outcome.reason == "waiting",
    ).model_dump()
    return ToolResult(text="\n".join(parts), data=data_out)
