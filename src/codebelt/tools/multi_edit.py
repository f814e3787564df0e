"""MultiEdit: several Edits to one file, applied in order, all or nothing."""

from __future__ import annotations

from pydantic import Field

from ..files.editing import EditSpec
from ..permissions.requests import PathRequest
from ..tool import Tool, ToolContext, ToolError, ToolInput, ToolResult
from ._editing import EditOutput, check_edits, run_edits

DESCRIPTION = """This is a tool for making multiple edits to a single file in one operation. It is built on top of the Edit tool and allows you to perform multiple find-and-replace operations efficiently. Prefer this tool over the Edit tool when you need to make multiple edits to the same file.

Before using this tool:
1. Use the Read tool to understand the file's contents and context
2. Verify the directory path is correct

To make multiple file edits, provide the following:
1. file_path: The absolute path to the file to modify
2. edits: An array of edit operations to perform, where each edit contains:
   - old_string: The text to replace (must match the file contents exactly, including all whitespace and indentation)
   - new_string: The edited text to replace the old_string
   - replace_all: Replace all occurrences of old_string. This parameter is optional and defaults to false.

IMPORTANT:
- All edits are applied in sequence, in the order they are provided
- Each edit operates on the result of the previous edit
- All edits must be valid for the operation to succeed - if any edit fails, none will be applied
- This tool is ideal when you need to make several changes to different parts of the same file

CRITICAL REQUIREMENTS:
1. All edits follow the same requirements as the single Edit tool
2. The edits are atomic - either all succeed or none are applied
3. Plan your edits carefully to avoid conflicts between sequential operations

WARNING:
- The tool will fail if edits.old_string doesn't match the file contents exactly (including whitespace)
- The tool will fail if edits.old_string and edits.new_string are the same
- Since edits are applied in sequence, ensure that earlier edits don't affect the text that later edits are trying to find

When making edits:
- Ensure all edits result in idiomatic, correct code
- Do not leave the code in a broken state
- Use replace_all for replacing and renaming strings across the file

If you want to create a new file, use:
- A new file path
- First edit: empty old_string and the new file's contents as new_string
- Subsequent edits: normal edit operations on the created content"""


class EditItem(ToolInput):
    old_string: str = Field(description="The text to replace")
    new_string: str = Field(description="The text to replace it with")
    replace_all: bool = Field(False, description="Replace all occurrences of old_string (default false).")


class MultiEditInput(ToolInput):
    file_path: str = Field(description="The absolute path to the file to modify")
    edits: list[EditItem] = Field(
        min_length=1, description="Array of edit operations to perform sequentially on the file"
    )


class MultiEdit(Tool):
    name = "MultiEdit"
    permission_family = "edit"
    description = DESCRIPTION
    Input = MultiEditInput
    Output = EditOutput
    destructive = True
    max_result_chars = None  # a short snippet
    starts_programs = True
    search_hint = "several exact-text replacements in one file, all or nothing"

    def validate(self, params: MultiEditInput, ctx: ToolContext) -> None:
        for i, e in enumerate(params.edits, 1):
            if e.old_string == e.new_string:
                raise ToolError(
                    f"Edit {i} of {len(params.edits)}: old_string and new_string are exactly the same. "
                    "No changes were written; fix that edit and send them all again."
                )

    def precheck(self, params, ctx: ToolContext) -> None:
        check_edits(params.file_path, [EditSpec(e.old_string, e.new_string, e.replace_all) for e in params.edits], ctx)

    def permission_requests(self, params: MultiEditInput, ctx: ToolContext) -> list[PathRequest]:
        return [PathRequest("write", ctx.resolve(params.file_path))]

    def run(self, params: MultiEditInput, ctx: ToolContext) -> ToolResult:
        specs = [EditSpec(e.old_string, e.new_string, e.replace_all) for e in params.edits]
        return run_edits(params.file_path, specs, ctx, multi=True)
