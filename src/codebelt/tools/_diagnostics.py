"""Problems an edit introduced, appended to the result of Edit, MultiEdit, Write and ApplyPatch:
from the language server when one runs for the file's language (errors and warnings, waited for
at most `intel.diagnosticsWaitMs`; the first edit of a language starts its server for the next
ones), else the syntax errors tree-sitter finds after the change that were not there before (a
problem that only moved lines is not new). Bounded: files over 1 MB and languages without a
grammar or server are not checked; a check that fails is silent — it never fails the edit. Off
with `intel.diagnostics: false`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import CodebeltError
from ..intel.languages import language_for
from ..intel.lsp import diagnostics as lsp_diagnostics
from ..intel.model import Diagnostic
from ..intel.syntax import introduced, syntax_errors
from ..tool import ToolContext, ToolResult
from ._opening import beneath
from ._services import lsp_manager

MAX_BYTES = 1_000_000
MAX_SHOWN = 5


@dataclass
class Before:
    path: Path
    language: str | None
    problems: list[Diagnostic]
    lsp: lsp_diagnostics.Prior | None = None


def _wait_s(ctx: ToolContext) -> float:
    return ctx.settings.intel.diagnostics_wait_ms / 1000


def _manager(ctx: ToolContext, path: Path):
    """The session's language servers when one serves this file (started lazily), else None."""
    if not ctx.settings.lsp.enabled:
        return None
    manager = ctx.service(lsp_manager)
    return manager if manager.spec_for(path) is not None else None


def _read(ctx: ToolContext, path: Path) -> bytes | None:
    """The file's bytes, opened the way the edit opens it (beneath its root, no symlink
    followed); None when it does not exist. Raises OSError (too large, unreadable)."""
    try:
        opened = beneath(ctx).open_regular(path)
    except FileNotFoundError:
        return None
    with opened:
        if opened.st.st_size > MAX_BYTES:
            raise OSError("too large")
        return opened.read_bytes(MAX_BYTES + 1)


def before(ctx: ToolContext, path: Path) -> Before | None:
    """The file's problems before the change (None: not checked)."""
    if not ctx.settings.intel.diagnostics:
        return None
    language = language_for(path)
    manager = _manager(ctx, path)
    if language is None and manager is None:
        return None
    try:
        old = _read(ctx, path)
        text = old.decode("utf-8", "replace") if old is not None else None
        prior = lsp_diagnostics.prepare(manager, path, text, min(0.5, _wait_s(ctx) / 4)) if manager else None
        if language is None:
            return Before(path, None, [], prior)
        return Before(path, language, syntax_errors(old, language, path=path) if old is not None else [], prior)
    except (CodebeltError, OSError):
        return None


def after(ctx: ToolContext, b: Before | None) -> list[Diagnostic]:
    if b is None:
        return []
    try:
        new = _read(ctx, b.path)
        if b.lsp is not None and new is not None:
            found = lsp_diagnostics.after(b.lsp, new.decode("utf-8", "replace"), _wait_s(ctx))
            if found is not None:
                return found
        if b.language is None or new is None:
            return []
        return introduced(b.problems, syntax_errors(new, b.language, path=b.path))
    except (CodebeltError, OSError):
        return []


def between(ctx: ToolContext, path: Path, old: bytes | None, new: bytes) -> list[Diagnostic]:
    """What a change from `old` (None: a new file) to `new` introduced, when both are known."""
    if not ctx.settings.intel.diagnostics or len(new) > MAX_BYTES or (old and len(old) > MAX_BYTES):
        return []
    manager = _manager(ctx, path)
    if manager is not None:
        decode = (lambda b: b.decode("utf-8", "replace"))
        prior = lsp_diagnostics.prepare(manager, path, decode(old) if old is not None else None,
                                        min(0.5, _wait_s(ctx) / 4))
        found = lsp_diagnostics.after(prior, decode(new), _wait_s(ctx))
        if found is not None:
            return found
    language = language_for(path)
    if language is None:
        return []
    try:
        before = syntax_errors(old, language, path=path) if old else []
        return introduced(before, syntax_errors(new, language, path=path))
    except CodebeltError:
        return []


def attach(result: ToolResult, ctx: ToolContext, found: list[Diagnostic]) -> ToolResult:
    if not found:
        return result
    rel = ctx.workspace.relative
    shown = found[:MAX_SHOWN]
    lines = [f"  {rel(d.path)}:{d.line}:{d.character}: {d.severity}: {d.message} ({d.source})" for d in shown]
    more = f"\n  … and {len(found) - len(shown)} more" if len(found) > len(shown) else ""
    result.text += "\n\nThis change introduced problems:\n" + "\n".join(lines) + more
    result.data = {**(result.data or {}), "diagnostics": [d.to_dict(rel(d.path)) for d in found]}
    return result
