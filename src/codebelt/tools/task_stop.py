"""TaskStop: Claude Code's current name for stopping a background task (KillShell's successor)."""

from __future__ import annotations

from pydantic import Field, model_validator

from ..tool import Tool, ToolContext, ToolInput, ToolResult
from ._tasks import TaskStopResult, stop_task

DESCRIPTION = """- Stops a running background task by its ID (the id Bash returned, e.g. "bash_1")
- Stops the task's whole process group: SIGTERM first, SIGKILL after a short grace period
- Returns a success or failure status
- Use this tool when you need to terminate a long-running task
"""


class TaskStopInput(ToolInput):
    task_id: str | None = Field(None, description="The ID of the background task to stop")
    shell_id: str | None = Field(None, description="Deprecated: use task_id")

    @model_validator(mode="after")
    def _one_id(self) -> "TaskStopInput":
        if not (self.task_id or self.shell_id):
            raise ValueError("task_id is required: the id Bash returned, e.g. \"bash_1\"")
        return self


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

    def run(self, params: TaskStopInput, ctx: ToolContext) -> ToolResult:
        return stop_task(ctx, params.task_id or params.shell_id or "")
