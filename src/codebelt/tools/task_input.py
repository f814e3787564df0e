"""TaskInput: type into a background task. A command started with Bash `run_in_background`
runs on a pseudo-terminal; this writes characters to it (text, Enter as "\\n", Ctrl-C as
"\\u0003", Ctrl-D as "\\u0004", arrow keys as escape sequences), waits for what the program does
next and returns what it printed, rendered as text (a full-screen program as its screen).

The name is codebelt's own: Claude Code ships no tool that writes to a task, and none named so.
"""

from __future__ import annotations

from pydantic import Field

from ..tool import Tool, ToolContext, ToolInput, ToolResult
from ._tasks import TaskInputResult, write_task

DEFAULT_WAIT_MS = 2_000
MAX_WAIT_MS = 120_000
QUIET_MS = 500

DESCRIPTION = """- Sends input to a running background task (a shell started with Bash run_in_background), as if typed at its terminal, and returns what it printed next
- Use it to drive interactive programs: REPLs (python3 -i, node), prompts (npm init, "Are you sure? [y/N]", passwords), debuggers (pdb, gdb), `git rebase -i` in an editor, pagers and full-screen programs
- `input` is the characters to send: end a line with "\\n" (Enter); control characters are sent as such: "\\u0003" is Ctrl-C (interrupt), "\\u0004" is Ctrl-D (end of input), "\\u001b" is Escape (for example "\\u001b:wq\\n" saves and quits vim); an empty input only reads
- Waits up to `wait_ms` milliseconds (default 2000), and returns sooner once the program waits for input again, exits, or prints nothing more for half a second
- The output is rendered as text: colours and cursor movements are removed; a full-screen program (less, vim, top) is shown as its current screen, in <screen> instead of <stdout>
- Start the program first with Bash and run_in_background: true; read output without sending input with TaskOutput, stop it with TaskStop
"""


class TaskInputInput(ToolInput):
    task_id: str = Field(description="The ID of the background task to send input to (e.g. \"bash_1\")")
    input: str = Field("", description="Characters to send: text, \"\\n\" for Enter, control characters such as "
                       "\"\\u0003\" (Ctrl-C) or \"\\u0004\" (Ctrl-D). Empty: only read new output.")
    wait_ms: float = Field(DEFAULT_WAIT_MS, ge=0, le=MAX_WAIT_MS,
                           description="How long to wait for output, in milliseconds (returns early when the "
                           "program waits for input again, exits, or goes quiet)")


class TaskInput(Tool):
    name = "TaskInput"
    description = DESCRIPTION
    Input = TaskInputInput
    Output = TaskInputResult
    read_only = False
    concurrency_safe = False
    destructive = True
    open_world = True
    # what it types may make the program start others (a shell's command, a REPL's os.system):
    # they run where the task runs, confined as the Bash call that started it
    starts_programs = True
    max_result_chars = 30_000
    search_hint = "type into a running background task: REPLs, prompts, editors"

    def summarize(self, params: TaskInputInput) -> str:
        return f"{params.task_id} <- {params.input!r}"

    def run(self, params: TaskInputInput, ctx: ToolContext) -> ToolResult:
        return write_task(ctx, params.task_id, params.input, params.wait_ms, QUIET_MS)
