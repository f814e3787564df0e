"""TaskStop: Claude Code's current name for stopping a background task (KillShell's successor)."""

from __future__ import annotations

from pydantic import Field

from ..tool import Tool, ToolContext, ToolError, ToolInput, ToolResult
from ._tasks import TaskStopResult, stop_task

DESCRIPTION = """- Stops a running background task by its ID (the id Bash returned, e.g. "bash_1")
- Stops the task's whole process group: SIGTERM first, SIGKILL after a short grace period
- Returns a success or failure status
- Use this tool when you need to terminate a long-running task
"""


class TaskStopInput(ToolInput):
    task_id: str | None = Field(None, description="The ID of the background task to stop.")
    shell_id: str | None = Field(None, description="Deprecated: use task_id instead")


class TaskStop(Tool):
    name = "TaskStop"
    description = DESCRIPTION
    Input = TaskStopInput
    Output = TaskStopResult
    destructive = True
    idempotent = True
    max_result_chars = None  # one short sentence
    search_hint = "stop a background task"

    def summarize(self, params: TaskStopInput) -> str:
        return str(params.task_id or params.shell_id)

    def validate(self, params: TaskStopInput, ctx: ToolContext) -> None:
        if not (params.task_id or params.shell_id):
            raise ToolError(ctx.texts("TaskStop.missing_id"))

    def run(self, params: TaskStopInput, ctx: ToolContext) -> ToolResult:
        return stop_task(ctx, params.task_id or params.shell_id or "")
