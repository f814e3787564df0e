"""apply_patch (Codex's profile): the patch engine behind ApplyPatch, as Codex offers it — a
freeform tool whose input is the raw patch (the Responses API's custom tool with Codex's lark
grammar; a function with one `input` string where only functions exist) — with Codex's texts
(texts/codex.toml)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from pydantic import Field, ValidationError

from ..tool import Tool, ToolContext, ToolError, ToolResult
from ._codex import CodexInput, codex_texts, parse_error
from ._patching import patch_requests, run_patch
from ._services import shell_cwd

# Codex's grammar for the patch, as the Responses API takes it (a custom tool's `format`).
GRAMMAR = """start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?

filename: /(.+)/
add_line: "+" /(.*)/ LF -> line

change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF

%import common.LF
"""


class CodexPatchInput(CodexInput):
    input: str = Field(description="The entire contents of the apply_patch command")


class CodexApplyPatch(Tool):
    name = "apply_patch"
    description = codex_texts().description("apply_patch")
    Input = CodexPatchInput
    read_only = False
    destructive = True
    permission_family = "edit"
    max_result_chars = None
    search_hint = "edit files with a patch"
    profile: ClassVar[str] = "codex"
    rules_as = "ApplyPatch"
    starts_programs = True  # confined as the tool it is decided as
    # A freeform tool: the model sends the raw text, which becomes {"input": text}.
    freeform: ClassVar[dict[str, Any] | None] = {"type": "grammar", "syntax": "lark", "definition": GRAMMAR}
    # where only functions exist (Chat Completions, MCP), the patch is the `input` argument
    function_description: ClassVar[str] = codex_texts()("apply_patch.function_description")

    def hook_view(self, raw: dict[str, Any]) -> tuple[str, dict[str, Any], tuple[str, ...]]:
        # As Codex shows it to hooks: its own name with the patch as `command`; a matcher for
        # Claude Code's file tools (Edit, Write) or codebelt's ApplyPatch selects it too.
        return "apply_patch", {"command": raw.get("input", "")}, ("ApplyPatch", "Edit", "Write")

    def from_hook_input(self, updated: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
        return {"input": updated["command"]} if "command" in updated else updated

    def input_error(self, raw: dict[str, Any], error: ValidationError) -> str:
        return parse_error(raw, error)

    def summarize(self, params: CodexPatchInput) -> str:
        return params.input

    def permission_requests(self, params: CodexPatchInput, ctx: ToolContext) -> list:
        base, _ = ctx.service(shell_cwd).current(consume=False)
        return patch_requests(params.input, base, ctx)

    def run(self, params: CodexPatchInput, ctx: ToolContext) -> ToolResult:
        base, _ = ctx.service(shell_cwd).current(consume=False)
        return self.apply(params.input, base, ctx)

    def apply(self, patch: str, base: Any, ctx: ToolContext) -> ToolResult:
        started = time.monotonic()
        if "*** Begin Patch" in patch and not patch.replace("*** Begin Patch", "").replace("*** End Patch", "").strip():
            raise ToolError(codex_texts(ctx)("apply_patch.empty"))
        result = run_patch(patch, base, ctx)
        if result.is_error:
            raise ToolError(codex_texts(ctx)("apply_patch.failed", message=result.text))
        result.text = codex_texts(ctx)("apply_patch.applied", wall=time.monotonic() - started, output=result.text)
        return result
