"""What the Glob and Grep tools share: locating rg from settings, paths, visibility, timeouts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from . import ripgrep
from .collect import display

if TYPE_CHECKING:
    from ..tool import ToolContext


def rg_binary(ctx: "ToolContext") -> str:
    """The rg to run, per `search.ripgrepPath` / `search.useSystemRipgrep` (ToolError if none)."""
    from ..tool import ToolError

    try:
        return ripgrep.locate(
            ctx.setting("search.ripgrepPath", None) or None,
            bool(ctx.setting("search.useSystemRipgrep", False)),
        )
    except ripgrep.RipgrepNotFound as e:
        raise ToolError(str(e)) from None


def timeout_seconds(ctx: "ToolContext", tool_key: str) -> float:
    """`<tool>.timeoutMs`, else `search.timeoutMs`, else 20 s."""
    ms = ctx.setting(f"{tool_key}.timeoutMs", None)
    if ms is None:
        ms = ctx.setting("search.timeoutMs", ripgrep.DEFAULT_TIMEOUT * 1000)
    try:
        return max(float(ms) / 1000.0, 0.05)
    except (TypeError, ValueError):
        return ripgrep.DEFAULT_TIMEOUT


def visibility(ctx: "ToolContext") -> Callable[[str], bool] | None:
    """A per-result filter hiding files a Read deny rule covers; None when no deny rule exists."""
    engine = ctx.session.engine
    if not engine.has_rules("deny"):
        return None
    return lambda abs_path: not engine.is_read_denied(Path(abs_path))


def display_prefix(ctx: "ToolContext", cwd: Path) -> str:
    """Prefix turning an rg path (relative to `cwd`) into one relative to the workspace root."""
    rel = ctx.workspace.relative(cwd)
    return "" if rel == "." else display(rel).rstrip("/") + "/"


def extra_excludes(ctx: "ToolContext", key: str) -> tuple[str, ...]:
    """Globs the user asked to always skip (`<key>.exclude` / `search.exclude` settings)."""
    out: list[str] = []
    for k in (f"{key}.exclude", "search.exclude"):
        v = ctx.setting(k, None)
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out += [str(x) for x in v if str(x)]
    return tuple(out)


def missing_path_error(ctx: "ToolContext", given: str, resolved: Path) -> str:
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
