"""KillShell: stop a background shell and its whole process group."""

from __future__ import annotations

from pydantic import Field

from ..tool import Tool, ToolContext, ToolInput, ToolResult
from ._tasks import TaskStopResult, kill_shell

DESCRIPTION = """- Kills a running background bash shell by its ID
- Takes a shell_id parameter identifying the shell to kill (the id Bash returned, e.g. "bash_1")
- Stops the shell's whole process group: SIGTERM first, SIGKILL after a short grace period
- Returns a success or failure status
- Use this tool when you need to terminate a long-running shell
- Shell IDs are returned by Bash when a command runs in the background
"""


class KillShellInput(ToolInput):
    shell_id: str = Field(description="The ID of the background shell to kill")


class KillShell(Tool):
    name = "KillShell"
    description = DESCRIPTION
    Input = KillShellInput
    Output = TaskStopResult
    destructive = True
    idempotent = True
    max_result_chars = None  # one short sentence
    search_hint = "stop a background shell command"

    def run(self, params: KillShellInput, ctx: ToolContext) -> ToolResult:
        return kill_shell(ctx, params.shell_id)
