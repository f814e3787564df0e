"""TaskOutput: Claude Code's current name for reading a background task (BashOutput's
successor): new output since the last read and the status, waiting for the task to end first
unless `block` is false."""

from __future__ import annotations

from pydantic import Field

from ..tool import Tool, ToolContext, ToolInput, ToolResult
from ._tasks import TaskOutputResult, read_task

DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000

DESCRIPTION = """- Retrieves output from a running or completed background task (a shell started with Bash run_in_background, or moved to the background)
- Takes a task_id parameter identifying the task (the id Bash returned, e.g. "bash_1")
- Returns the new output since the last check along with the task's status: running, completed (exit code 0), failed (non-zero exit code), killed or timed_out
- Use block=true (default) to wait for the task to finish, up to timeout milliseconds (default 30000)
- Use block=false for a non-blocking check of the current status
- The full output stays in the file named by Bash until the session ends; read it with Read or search it with Grep
"""


class TaskOutputInput(ToolInput):
    task_id: str = Field(description="The task ID to get output from")
    block: bool = Field(True, description="Whether to wait for completion")
    timeout: float = Field(DEFAULT_WAIT_MS, ge=0, le=MAX_WAIT_MS, description="Max wait time in ms")


class TaskOutput(Tool):
    name = "TaskOutput"
    description = DESCRIPTION
    Input = TaskOutputInput
    Output = TaskOutputResult
    read_only = True
    concurrency_safe = True
    max_result_chars = 30_000
    search_hint = "read output of a background task, or wait for it to finish"

    def run(self, params: TaskOutputInput, ctx: ToolContext) -> ToolResult:
        return read_task(ctx, params.task_id, None, params.timeout if params.block else 0)
