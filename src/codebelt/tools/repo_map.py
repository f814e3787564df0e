"""RepoMap: the repository's most important definitions within a token budget — a PageRank over
the definition→reference graph of the tree-sitter index, personalised toward the given paths and
identifiers (Aider's idea)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..errors import CodebeltError, ToolError
from ..intel.repomap import repo_map
from ..permissions.requests import PathRequest
from ..tool import Tool, ToolContext, ToolInput, ToolResult
from ._services import code_index

DEFAULT_TOKENS = 1_024
MAX_TOKENS = 16_384
FIRST_BUILD_WAIT_S = 10.0

DESCRIPTION = """Get a map of the repository: its most important files and, under each, the signature lines of their top definitions (classes, functions, methods), ranked by how much the rest of the code refers to them, within a token budget.
- Use it first in an unfamiliar codebase, or to see what surrounds the files you are working on.
- paths: files you are working on; the map leans toward them and what they use.
- mentions: identifiers you care about (class or function names); the map leans toward where they are defined and used.
- max_tokens: the size of the map (default 1024)."""


class RepoMapInput(ToolInput):
    paths: list[str] | None = Field(None, description="Files to focus the map on (relative to the workspace root)")
    mentions: list[str] | None = Field(None, description="Identifiers to focus the map on")
    max_tokens: int | None = Field(None, ge=64, le=MAX_TOKENS, description=f"Token budget (default {DEFAULT_TOKENS})")


class RepoMapOutput(BaseModel):
    tokens: int = Field(description="Estimated tokens of the map")
    files: list[str]
    symbols: list[dict] = Field(description="name, kind, path, line of each definition shown, best first")
    candidates: int = Field(description="Definitions that could have been shown")
    note: str | None = None


class RepoMap(Tool):
    name = "RepoMap"
    description = DESCRIPTION
    Input = RepoMapInput
    Output = RepoMapOutput
    read_only = True
    concurrency_safe = True
    idempotent = True
    permission_family = "read"
    max_result_chars = None  # bounded by max_tokens
    starts_programs = True
    search_hint = "overview of the repository's most important definitions"

    def permission_requests(self, params: RepoMapInput, ctx: ToolContext) -> list[PathRequest]:
        return [PathRequest("read", ctx.workspace.root)]

    def run(self, params: RepoMapInput, ctx: ToolContext) -> ToolResult:
        index = ctx.service(code_index)
        index.wait(FIRST_BUILD_WAIT_S)
        paths = [ctx.workspace.resolve(p) for p in params.paths or []]
        try:
            result = repo_map(index, paths=paths, mentions=params.mentions or (),
                              max_tokens=params.max_tokens or DEFAULT_TOKENS)
        except CodebeltError as e:
            raise ToolError(str(e)) from None
        text = result.text or "No definitions found: the workspace has no source files a grammar reads."
        if result.note:
            text += f"\n(note: {result.note})"
        rel = ctx.workspace.relative
        return ToolResult(text, data={
            "tokens": result.tokens, "files": [rel(f) for f in result.files],
            "symbols": [{"name": s.name, "kind": s.kind, "path": rel(ctx.workspace.root / s.path), "line": s.line}
                        for s in result.symbols],
            "candidates": result.candidates, "note": result.note,
        })
