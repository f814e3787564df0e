"""ApplyPatch: edit, create, delete and move files with one patch in the Codex format.

The engine lives in codebelt.patch. This module adds the session around it: paths resolved in the
workspace (outside it is refused), an Edit permission request for every file the patch touches,
and the file-state store updated so Edit/Write keep working on the patched files. The Bash tool
uses the same helpers (`tools/_patching.py`) for `apply_patch` commands it intercepts.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..permissions.requests import PathRequest
from ..tool import Tool, ToolContext, ToolError, ToolInput, ToolResult
from ._patching import check_patch, patch_preview, patch_requests, run_patch

DESCRIPTION = """Use the `ApplyPatch` tool to edit files. Its `input` is a patch in a simple, stripped-down diff format that is easy to write and safe to apply.

The patch is wrapped in an envelope:

*** Begin Patch
[one or more file sections]
*** End Patch

Each file section starts with one of three headers:
*** Add File: <path> - create a new file. Every following line is a line of the new file, prefixed with +.
*** Delete File: <path> - delete an existing file. Nothing follows.
*** Update File: <path> - change an existing file in place. Optionally followed right away by "*** Move to: <new path>" to rename it.

An update is a series of chunks. A chunk starts with @@ (optionally followed by a line of the file, such as a class or function definition, to say where the chunk is) and then lists lines:
- " " (space) + text: a context line, unchanged
- "-" + text: a line to remove
- "+" + text: a line to add

Guidelines for chunks:
- Do not use line numbers: chunks are located by their text.
- Show 3 lines of context above and below each change by default. If a change is within 3 lines of the previous one, do not repeat those context lines.
- If 3 lines of context are not enough to identify the place uniquely, add @@ lines naming the enclosing class and function; they may repeat to narrow down, e.g.
@@ class BaseClass
@@     def method():
- Chunks for one file must be in the order they appear in the file.
- "*** End of File" after a chunk anchors it at the end of the file.

Example:

*** Begin Patch
*** Add File: hello.txt
+Hello world
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-    print("Hi")
+    print("Hello, world!")
*** Delete File: obsolete.txt
*** End Patch

Notes:
- Paths are relative to the workspace root (absolute paths inside the workspace also work). Never use paths outside the workspace.
- You do not need to Read a file first, but copy context and removed lines exactly from the file. Small differences in whitespace or typographic punctuation are tolerated; the file's own context lines are always kept as they are.
- The patch is applied all or nothing: if any chunk cannot be placed, no file is changed and the error shows the lines that were expected and the most similar lines of the file, so you can fix the patch and resend it.
- Prefer one patch with several chunks and files over many small patches."""


class ApplyPatchInput(ToolInput):
    input: str = Field(description="The entire contents of the patch, from '*** Begin Patch' to '*** End Patch'")


class FileResult(BaseModel):
    path: str = Field(description="Path relative to the workspace root (the destination for moves)")
    action: str = Field(description="add, update or delete")
    diff: str = Field(description="Unified diff of the change")
    move_from: str | None = Field(None, description="Original path when the file was moved")
    fuzzy: list[str] | None = Field(None, description="Relaxed matching passes used to place chunks")
    diff_truncated: bool | None = Field(None, description="True when the diff was cut")


class ApplyPatchOutput(BaseModel):
    files: list[FileResult]
    added: list[str]
    modified: list[str]
    deleted: list[str]


class ApplyPatch(Tool):
    name = "ApplyPatch"
    permission_family = "edit"
    description = DESCRIPTION
    Input = ApplyPatchInput
    Output = ApplyPatchOutput
    destructive = True
    max_result_chars = None  # a short list of changed files
    starts_programs = True
    search_hint = "edit several files or places at once with a patch (add, update, delete, move)"

    def validate(self, params: ApplyPatchInput, ctx: ToolContext) -> None:
        # A malformed patch is refused before anyone is asked to approve it.
        from ..patch.errors import PatchParseError
        from ..patch.parser import parse_patch

        try:
            parse_patch(params.input)
        except PatchParseError as e:
            raise ToolError(str(e)) from None

    def precheck(self, params: ApplyPatchInput, ctx: ToolContext) -> None:
        check_patch(params.input, ctx.workspace.root, ctx)

    def summarize(self, params: ApplyPatchInput) -> str:
        return params.input

    def preview(self, params: ApplyPatchInput, ctx: ToolContext):
        return patch_preview(params.input, ctx.workspace.root, ctx)

    def permission_requests(self, params: ApplyPatchInput, ctx: ToolContext) -> list[PathRequest]:
        return patch_requests(params.input, ctx.workspace.root, ctx)

    def run(self, params: ApplyPatchInput, ctx: ToolContext) -> ToolResult:
        return run_patch(params.input, ctx.workspace.root, ctx)
