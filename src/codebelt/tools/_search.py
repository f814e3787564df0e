"""What the Glob and Grep tools share: locating rg from settings, paths, visibility, timeouts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from ..errors import RipgrepNotFound, ToolError
from ..search import ripgrep
from ..search.collect import display
from ..tool import ToolContext
from ._services import ripgrep_runs


def rg_binary(ctx: ToolContext) -> ripgrep.Ripgrep:
    """The rg to run, per `search.ripgrepPath` / `search.useSystemRipgrep` (ToolError if none),
    confined as the call's decision says (the read-only jail, or as it is)."""
    try:
        runs = ctx.service(ripgrep_runs)
    except RipgrepNotFound as e:
        raise ToolError(str(e)) from None
    confinement = ctx.decision.confinement if ctx.decision is not None else ctx.permissions.confinement.for_helpers()
    return runs.program(confinement)


def timeout_seconds(ctx: ToolContext, tool_key: str) -> float:
    """`<tool>.timeoutMs`, else `search.timeoutMs`."""
    ms = getattr(ctx.settings, tool_key).timeout_ms or ctx.settings.search.timeout_ms
    return max(ms / 1000.0, 0.05)


def visibility(ctx: ToolContext) -> Callable[[str], bool] | None:
    """A per-result filter hiding files a Read deny rule covers; None when no deny rule exists."""
    permissions = ctx.permissions
    if not permissions.has_rules("deny"):
        return None
    return lambda abs_path: not permissions.is_read_denied(Path(abs_path))


def display_prefix(ctx: ToolContext, cwd: Path) -> str:
    """Prefix turning an rg path (relative to `cwd`) into one relative to the workspace root, or
    into an absolute one where the profile shows paths so (older Claude Code releases)."""
    if ctx.texts.value("common.absolute_paths", False):
        return display(str(cwd)).rstrip("/") + "/"
    rel = ctx.workspace.relative(cwd)
    return "" if rel == "." else display(rel).rstrip("/") + "/"


def extra_excludes(ctx: ToolContext, key: str) -> tuple[str, ...]:
    """Globs the user asked to always skip (`<key>.exclude` / `search.exclude` settings)."""
    return tuple(g for g in (*getattr(ctx.settings, key).exclude, *ctx.settings.search.exclude) if g)


def missing_path_error(ctx: ToolContext, given: str, resolved: Path) -> str:
    """'does not exist' with a next step (and a near name when the parent exists)."""
    hint = ""
    parent = resolved.parent
    if parent.is_dir():
        import difflib

        try:
            names = os.listdir(parent)
        except OSError:
            names = []
        close = difflib.get_close_matches(resolved.name, names, n=1)
        if close:
            hint = f" Did you mean {display(ctx.workspace.relative(parent / close[0]))}?"
    return (
        f"Path does not exist: {given}.{hint} Paths are relative to the workspace root "
        f"{ctx.workspace.root}; omit path to search the whole workspace."
    )


def rg_lines(errors: list[str], limit: int = 12) -> str:
    """ripgrep's own error lines, as it printed them (`rg: …`)."""
    lines = []
    for e in errors[:limit]:
        lines.append(e if e.startswith("rg:") or not lines else e)
    text = "\n".join(lines)
    return text if text.startswith("rg:") else "rg: " + text
