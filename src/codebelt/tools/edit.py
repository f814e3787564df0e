"""Edit: replace exact text in a file, keeping its encoding and line endings."""

from __future__ import annotations

from ..files.editing import EditSpec
from ..permissions.requests import PathRequest
from ..tool import DeclaredInput, Param, Tool, ToolContext, ToolError, ToolResult
from ._editing import EditOutput, check_edits, run_edits

DESCRIPTION = """Performs exact string replacements in files.

Usage:
- You must use your `Read` tool at least once in the conversation before editing. This tool will error if you attempt an edit without reading the file.
- When editing text from Read tool output, ensure you preserve the exact indentation (tabs/spaces) as it appears AFTER the line number prefix. The line number prefix format is: spaces + line number + tab. Everything after that tab is the actual file content to match. Never include any part of the line number prefix in the old_string or new_string.
- ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly required.
- Only use emojis if the user explicitly requests it. Avoid adding emojis to files unless asked.
- The edit will FAIL if `old_string` is not unique in the file. Either provide a larger string with more surrounding context to make it unique or use `replace_all` to change every instance of `old_string`.
- Use `replace_all` for replacing and renaming strings across the file. This parameter is useful if you want to rename a variable for instance.
- An empty `old_string` creates a new file with `new_string` as its content (or fills an existing empty file).
- Line endings, encoding and byte-order mark of the file are preserved; the result shows the edited lines with their line numbers, so you do not need to Read the file again."""


class EditInput(DeclaredInput):
    file_path: str = Param(description="The absolute path to the file to modify")
    old_string: str = Param(description="The text to replace")
    new_string: str = Param(description="The text to replace it with (must be different from old_string)")
    replace_all: bool = Param(False, description="Replace all occurrences of old_string (default false)")


class Edit(Tool):
    name = "Edit"
    permission_family = "edit"
    description = DESCRIPTION
    Input = EditInput
    Output = EditOutput
    destructive = True
    max_result_chars = None  # a short snippet
    starts_programs = True
    search_hint = "modify a file by replacing exact text"

    def validate(self, params: EditInput, ctx: ToolContext) -> None:
        if params.old_string == params.new_string:
            raise ToolError(ctx.texts("Edit.no_change"))

    def precheck(self, params, ctx: ToolContext) -> None:
        check_edits(params.file_path, [EditSpec(params.old_string, params.new_string, params.replace_all)], ctx)

    def permission_requests(self, params: EditInput, ctx: ToolContext) -> list[PathRequest]:
        return [PathRequest("write", ctx.resolve(params.file_path))]

    def run(self, params: EditInput, ctx: ToolContext) -> ToolResult:
        spec = EditSpec(params.old_string, params.new_string, params.replace_all)
        return run_edits(params.file_path, [spec], ctx)
