"""KillShell: stop a background shell and its whole process group."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..tool import Tool, ToolContext, ToolError, ToolInput, ToolResult
from ._services import task_manager

DESCRIPTION = """- Kills a running background bash shell by its ID
- Takes a shell_id parameter identifying the shell to kill (the id Bash returned, e.g. "bash_1")
- Stops the shell's whole process group: SIGTERM first, SIGKILL after a short grace period
- Returns a success or failure status
- Use this tool when you need to terminate a long-running shell
- Shell IDs are returned by Bash when a command runs in the background
"""


class KillShellInput(ToolInput):
    shell_id: str = Field(description="The ID of the background shell to kill")


class KillShellResult(BaseModel):
    shellId: str
    command: str
    wasRunning: bool
    status: str
    message: str


class KillShell(Tool):
    name = "KillShell"
    description = DESCRIPTION
    Input = KillShellInput
    Output = KillShellResult
    destructive = True
    idempotent = True
    max_result_chars = None  # one short sentence
    search_hint = "stop a background shell command"

    def run(self, params: KillShellInput, ctx: ToolContext) -> ToolResult:
        manager = ctx.service(task_manager)
        try:
            task, was_running = manager.kill(params.shell_id)
        except KeyError as e:
            raise ToolError(e.args[0]) from None
        if was_running:
            message = f"Successfully killed shell: {task.id} ({task.command})"
        else:
            message = f"Shell {task.id} is not running (it {task.status_text()}); nothing to kill."
        data = KillShellResult(
            shellId=task.id, command=task.command, wasRunning=was_running,
            status=task.status(), message=message,
        ).model_dump()
        return ToolResult(text=message, data=data)
