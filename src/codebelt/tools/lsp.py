"""LSP: definitions, references, hover, symbols and call hierarchy — Claude Code's LSP tool.

Answered by a language server when one runs for the file's language, else by the tree-sitter
index (by name, for every language with a grammar); `data.backend` says which. Read-only, and
governed by Read rules: files a Read deny rule covers never appear in an answer.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ..errors import CodebeltError, ToolError
from ..intel import navigate
from ..intel.lsp import Unanswered, ask
from ..intel.model import Answer
from ..permissions.requests import PathRequest
from ..tool import Tool, ToolContext, ToolInput, ToolResult
from ._services import code_index, lsp_manager

DEFAULT_HEAD_LIMIT = 100
MAX_HEAD_LIMIT = 1_000
FIRST_BUILD_WAIT_S = 2.0  # a query on a fresh index waits this long at most, then answers with what is there
MAX_LINE_CHARS = 300

DESCRIPTION = """Interact with code intelligence (language servers where installed, else a tree-sitter index of the workspace) to navigate code.

Supported operations:
- goToDefinition: Find where a symbol is defined
- findReferences: Find all references to a symbol
- hover: Get the definition and signature of a symbol
- documentSymbol: Get all symbols (functions, classes, variables) in a document
- workspaceSymbol: Search for symbols across the workspace by name (give `query`)
- goToImplementation: Find implementations of an interface or abstract method
- prepareCallHierarchy: Get the function or method at a position
- incomingCalls: Find all functions/methods that call the function at a position
- outgoingCalls: Find all functions/methods called by the function at a position

All operations except workspaceSymbol require filePath; position-based ones also need line (1-based, as editors show it). character (1-based) is optional: without it the first identifier on the line is used.
Results are capped (head_limit, default 100; offset to page); the result says when there are more. data.backend says whether a language server ("lsp:<server>") or the tree-sitter index ("tree-sitter", by name, no type information) answered.
Prefer this over Grep to find where something is defined or used."""


class LSPInput(ToolInput):
    operation: Literal[
        "goToDefinition", "findReferences", "hover", "documentSymbol", "workspaceSymbol",
        "goToImplementation", "prepareCallHierarchy", "incomingCalls", "outgoingCalls",
    ] = Field(description="The LSP operation to perform")
    filePath: str | None = Field(None, description="The absolute or relative path to the file")
    line: int | None = Field(None, ge=1, description="The line number (1-based, as shown in editors)")
    character: int | None = Field(None, ge=1, description="The character offset (1-based, as shown in editors)")
    query: str | None = Field(None, description="workspaceSymbol: the (part of a) name to search for")
    head_limit: int | None = Field(None, ge=0, description=f"Most entries to return (default {DEFAULT_HEAD_LIMIT}; 0 = up to {MAX_HEAD_LIMIT})")
    offset: int | None = Field(None, ge=0, description="Skip this many entries first (for paging)")


class LSPOutput(BaseModel):
    backend: str = Field(description='"lsp:<server>" or "tree-sitter"')
    locations: list[dict] = Field(description="path, line, character, end_line, end_character, text (1-based)")
    symbols: list[dict] = Field(description="name, kind, line, character, end_line, container, path")
    truncated: bool
    total: int | None
    hover: str | None = None


class LSP(Tool):
    name = "LSP"
    description = DESCRIPTION
    Input = LSPInput
    Output = LSPOutput
    read_only = True
    concurrency_safe = True
    idempotent = True
    permission_family = "read"
    max_result_chars = None  # bounded by head_limit and MAX_LINE_CHARS
    starts_programs = True
    search_hint = "go to definition, find references, list symbols, call hierarchy"

    def _path(self, params: LSPInput, ctx: ToolContext) -> Path | None:
        return ctx.resolve(params.filePath) if params.filePath else None

    def validate(self, params: LSPInput, ctx: ToolContext) -> None:
        path = self._path(params, ctx)
        if path is None:
            if params.operation != "workspaceSymbol":
                raise ToolError(f"{params.operation} needs filePath (and line, for position-based operations).")
            if not params.query:
                raise ToolError("workspaceSymbol needs query: the name, or part of it, to search for.")
            return
        if not path.exists():
            raise ToolError(f"File does not exist: {params.filePath}.")
        if not path.is_file():
            raise ToolError(f"{params.filePath} is not a file; LSP operations work on one source file.")
        if params.operation not in ("documentSymbol", "workspaceSymbol") and params.line is None:
            raise ToolError(f"{params.operation} needs line (1-based) naming the symbol's position.")

    def permission_requests(self, params: LSPInput, ctx: ToolContext) -> list[PathRequest]:
        path = self._path(params, ctx)
        return [PathRequest("read", path if path is not None else ctx.workspace.root)]

    def run(self, params: LSPInput, ctx: ToolContext) -> ToolResult:
        head = params.head_limit if params.head_limit is not None else DEFAULT_HEAD_LIMIT
        head = MAX_HEAD_LIMIT if head == 0 else min(head, MAX_HEAD_LIMIT)
        offset = params.offset or 0
        limit = min(offset + head, MAX_HEAD_LIMIT * 2)
        index = ctx.service(code_index)
        path = self._path(params, ctx)
        answer, why = self._from_server(params, ctx, path, limit, index)
        if answer is None:
            try:
                answer = _from_index(index, params, path, limit)
            except CodebeltError as e:
                raise ToolError(str(e)) from None
            if why:
                answer.note = f"{why}; answered by tree-sitter" + (f"; {answer.note}" if answer.note else "")
        return render(params.operation, _visible(answer, ctx), ctx, head, offset)

    def _from_server(self, params: LSPInput, ctx: ToolContext, path: Path | None, limit: int,
                     index) -> tuple[Answer | None, str | None]:
        """The language server's answer, or (None, why none) — never longer than the request
        timeout in all (a server still starting gets part of it)."""
        manager = ctx.service(lsp_manager)
        if not manager.specs:
            return None, None
        budget = manager.request_timeout
        started = time.monotonic()

        def name_at(p: Path, line: int) -> str | None:
            return index.identifier_at(p, line, None)  # the file as it is on disk: needs no index

        if path is None:  # workspaceSymbol by name: ask the servers already running
            clients = manager.ready_clients()
            if not clients:
                return None, manager.not_ready()
            try:
                answer = ask(manager, params.operation, ctx.workspace.root, None, None, params.query, limit,
                             timeout=budget, client=clients[0])
            except Unanswered as e:
                return None, str(e)
            skipped = index.skipped_note()  # binary or oversized "source" files: no one searched them
            if skipped:
                answer.note = f"{answer.note}; {skipped}" if answer.note else skipped
            return answer, None
        if manager.spec_for(path) is None:
            return None, None
        # never waits for a server that is not ready: it starts (or loads) in the background
        # while the index answers, saying so
        try:
            return ask(manager, params.operation, path, params.line, params.character, params.query, limit,
                       name_at=name_at, timeout=budget - (time.monotonic() - started)), None
        except Unanswered as e:
            return None, str(e)
        except CodebeltError as e:
            raise ToolError(str(e)) from None


def _from_index(index, params: LSPInput, path: Path | None, limit: int) -> Answer:
    """The index's answer. While a refresh runs or is due (the first build, the one a session
    starts over the last session's index, the one a query makes a second after the last), it
    answers at once when the answer rests on a list of files, each read from the stored index
    where that matches the disk and from the disk where not; else it waits (bounded) for the
    refresh."""
    def ask() -> Answer:
        return navigate.answer(index, params.operation, path, params.line, params.character, params.query,
                               limit=limit)

    if not index.settled():
        answer = index.from_store(ask)
        if answer is not None:
            return answer
    index.wait(FIRST_BUILD_WAIT_S)
    return ask()


def _visible(answer: Answer, ctx: ToolContext) -> Answer:
    """Leave out what the session may not read without asking: files a Read deny rule covers
    (the index may be shared with other sessions), and files outside the workspace a language
    server pointed at (a library's source) unless a rule allows reading them."""
    permissions = ctx.permissions
    cache: dict[Path, bool] = {}

    def hidden(p: Path) -> bool:
        if p not in cache:
            if ctx.workspace.is_inside(p) or ctx.workspace.is_internal_readable(p):
                cache[p] = permissions.has_rules("deny") and permissions.is_read_denied(p)
            else:
                cache[p] = permissions.decide_path(PathRequest("read", p)).behavior != "allow"
        return cache[p]

    before = len(answer.locations) + len(answer.symbols)
    answer.locations = [loc for loc in answer.locations if not hidden(loc.path)]
    answer.symbols = [s for s in answer.symbols if not hidden(s.path)]
    left_out = before - len(answer.locations) - len(answer.symbols)
    if left_out and answer.total is not None:
        answer.total = max(len(answer.locations), len(answer.symbols), answer.total - left_out)
    outside = sum(1 for p, h in cache.items() if h and not ctx.workspace.is_inside(p))
    if left_out and outside:
        answer.note = "; ".join(filter(None, [answer.note, f"{left_out} result(s) in files outside the workspace "
                                                           "left out (reading them needs permission)"]))
    return answer


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"


def render(operation: str, a: Answer, ctx: ToolContext, head: int, offset: int) -> ToolResult:
    rel = ctx.workspace.relative
    rows: list[str] = []
    if a.symbols and operation not in ("findReferences",):
        for s in a.symbols:
            where = f"{rel(s.path)}:{s.line}:{s.character}"
            inside = f" (in {s.container})" if s.container else ""
            rows.append(f"{where}: {s.kind} {s.name}{inside}" + (f" — {_clip(s.signature)}" if s.signature else ""))
    if operation in ("findReferences", "incomingCalls", "outgoingCalls") or not a.symbols:
        for loc in a.locations:
            rows.append(f"{rel(loc.path)}:{loc.line}:{loc.character}: {_clip(loc.text)}")
    gathered = len(rows)
    page = rows[offset:offset + head]
    total = a.total if a.total is not None else gathered
    more = max(total - offset - len(page), 0)
    lines: list[str] = []
    if operation == "hover" and a.hover:
        lines.append(a.hover)
    if page:
        lines += page
    elif not (operation == "hover" and a.hover):
        lines.append("No results." if offset == 0 else f"No results at offset {offset} ({total} in all).")
    if more:
        lines.append(f"(showing {len(page)} of {'more than ' if a.truncated and total <= gathered else ''}{total}; "
                     f"call again with offset={offset + len(page)} for more)")
    if a.note:
        lines.append(f"(note: {a.note})")
    lines.append(f"(backend: {a.backend})")
    data = {
        "backend": a.backend,
        "locations": [loc.to_dict(rel(loc.path)) for loc in a.locations][offset:offset + head],
        "symbols": [{"name": s.name, "kind": s.kind, "line": s.line, "character": s.character,
                     "end_line": s.end_line, "container": s.container, "path": rel(s.path)}
                    for s in a.symbols][offset:offset + head],
        "truncated": bool(more or a.truncated),
        "total": total,
    }
    if a.hover:
        data["hover"] = a.hover
    return ToolResult("\n".join(lines), data=data)
