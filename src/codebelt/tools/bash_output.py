"""BashOutput: new output of a background shell since the last read, plus its status."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from ..tool import Tool, ToolContext, ToolError, ToolInput, ToolResult
from ._services import task_manager

MAX_RESULT_CHARS = 30_000
INLINE_BYTES = 26_000  # new output shown per read; more is summarised (head + tail + file path)

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


class BashOutputResult(BaseModel):
    shellId: str
    command: str
    status: str = Field(description="running | completed | failed | killed | timed_out")
    exitCode: int | None = None
    stdout: str = Field(description="New output since the last read (filtered if a filter was given)")
    truncated: bool = False
    outputPath: str = Field(description="File with the shell's full output")


def compile_filter(pattern: str | None) -> re.Pattern[str] | None:
    if pattern is None or pattern == "":
        return None
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ToolError(
            f"Invalid filter regex {pattern!r}: {e}. Pass a Python regular expression such as "
            "'error|warning', or omit filter to get all new output."
        ) from None


class BashOutput(Tool):
    name = "BashOutput"
    description = DESCRIPTION
    Input = BashOutputInput
    Output = BashOutputResult
    read_only = True
    concurrency_safe = True
    max_result_chars = MAX_RESULT_CHARS
    search_hint = "read output of a background shell command"

    def validate(self, params: BashOutputInput, ctx: ToolContext) -> None:
        compile_filter(params.filter)

    def run(self, params: BashOutputInput, ctx: ToolContext) -> ToolResult:
        pattern = compile_filter(params.filter)
        manager = ctx.service(task_manager)
        try:
            task, text, truncated = manager.read(params.bash_id, pattern, INLINE_BYTES)
        except KeyError as e:
            raise ToolError(e.args[0]) from None
        out = task.process.outcome
        status = task.status()
        parts = [f"<status>{status}</status>"]
        if out is not None and out.exit_code is not None:
            parts.append(f"<exit_code>{out.exit_code}</exit_code>")
        if text:
            parts.append(f"<stdout>\n{text.rstrip(chr(10))}\n</stdout>")
        else:
            parts.append("<stdout>(no new output" + (" matching the filter" if pattern else "") + ")</stdout>")
        if status != "running":
            parts.append(f"Shell {task.id} {task.status_text()}.")
        data = BashOutputResult(
            shellId=task.id,
            command=task.command,
            status=status,
            exitCode=out.exit_code if out is not None else None,
            stdout=text,
            truncated=truncated,
            outputPath=str(task.output_path),
        ).model_dump()
        return ToolResult(text="\n".join(parts), data=data)
