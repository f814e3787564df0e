"""BashOutput: new output of a background shell since the last read, plus its status."""

from __future__ import annotations

from pydantic import Field

from ..tool import Tool, ToolContext, ToolInput, ToolResult
from ._tasks import TaskOutputResult, compile_filter, read_task

MAX_RESULT_CHARS = 30_000

DESCRIPTION = """- Retrieves output from a running or completed background bash shell
- Takes a shell_id parameter identifying the shell (the id Bash returned, e.g. "bash_1")
- Always returns only new output since the last check
- Returns stdout and stderr output (interleaved, as printed) along with shell status: running, completed (exit code 0), failed (non-zero exit code), killed or timed_out
- Supports optional regex filtering to show only lines matching a pattern
- Use this tool when you need to monitor or check the output of a long-running shell
- The full output of a shell stays in the file named by Bash until the session ends; read it with Read or search it with Grep
"""


class BashOutputInput(ToolInput):
    bash_id: str = Field(description="The ID of the background shell to retrieve output from")
    filter: str | None = Field(
        None,
        description="Optional regular expression to filter the output lines. Only lines matching "
        "this regex will be included in the result. Any lines that do not match will no longer "
        "be available to read.",
    )


class BashOutput(Tool):
    name = "BashOutput"
    description = DESCRIPTION
    Input = BashOutputInput
    Output = TaskOutputResult
    read_only = True
    concurrency_safe = True
    max_result_chars = MAX_RESULT_CHARS
    search_hint = "read output of a background shell command"

    def validate(self, params: BashOutputInput, ctx: ToolContext) -> None:
        compile_filter(params.filter)

    def run(self, params: BashOutputInput, ctx: ToolContext) -> ToolResult:
        return read_task(ctx, params.bash_id, compile_filter(params.filter))
