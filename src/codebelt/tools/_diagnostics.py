"""Problems an edit introduced, appended to the result of Edit, MultiEdit, Write and ApplyPatch:
syntax errors tree-sitter finds in the file after the change that were not there before (a
problem that only moved lines is not new). Bounded: files over 1 MB and languages without a
grammar are not checked; a check that fails is silent. Off with `intel.diagnostics: false`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import CodebeltError
from ..intel.languages import language_for
from ..intel.model import Diagnostic
from ..intel.syntax import introduced, syntax_errors
from ..tool import ToolContext, ToolResult

MAX_BYTES = 1_000_000
MAX_SHOWN = 5


@dataclass
class Before:
    path: Path
    language: str
    problems: list[Diagnostic]


def before(ctx: ToolContext, path: Path) -> Before | None:
    """The file's problems before the change (None: not checked)."""
    if not ctx.settings.intel.diagnostics:
        return None
    language = language_for(path)
    if language is None:
        return None
    try:
        if not os.path.lexists(path):
            return Before(path, language, [])
        if os.stat(path).st_size > MAX_BYTES:
            return None
        return Before(path, language, syntax_errors(path, language))
    except (CodebeltError, OSError):
        return None


def after(ctx: ToolContext, b: Before | None) -> list[Diagnostic]:
    if b is None:
        return []
    try:
        return introduced(b.problems, syntax_errors(b.path, b.language))
    except (CodebeltError, OSError):
        return []


def between(ctx: ToolContext, path: Path, old: bytes | None, new: bytes) -> list[Diagnostic]:
    """What a change from `old` (None: a new file) to `new` introduced, when both are known."""
    if not ctx.settings.intel.diagnostics or len(new) > MAX_BYTES or (old and len(old) > MAX_BYTES):
        return []
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
