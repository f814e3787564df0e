"""Apply a patch: parse, plan (in memory, `plan`), commit (all or nothing, `commit`).

Updates edit lines, never rewrite them: context lines keep the file's own bytes (indentation,
trailing spaces, typographic quotes, CR/LF), '-' lines remove the file's line that matched and
'+' lines are inserted with the file's line ending, in the file's own encoding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import PatchError
from .commit import commit
from .parser import Patch, parse_patch
from .paths import Display, Resolver, relative_display, workspace_resolver
from .plan import Changes, FileChange, Plan, plan_patch


def apply_patch(text: str | Patch, root: Path, resolve: Resolver | None = None, display: Display | None = None,
                *, dry_run: bool = False, fsync: bool = True,
                check_cancelled: Callable[[], None] | None = None) -> Changes:
    """Parse, plan and (unless dry_run) commit a patch. Raises PatchError; on error nothing changed.

    `resolve` turns a patch path into an absolute path or raises PatchError (default: relative to
    `root`, refusing paths outside it). `display` says how paths appear in the summary (default:
    relative to `root`).
    """
    resolve = resolve or workspace_resolver(root)
    display = display or relative_display(root)
    plan = plan_patch(text, resolve, display)
    if check_cancelled is not None:
        check_cancelled()  # last moment to stop: nothing has been written yet
    if not dry_run:
        commit(plan, fsync=fsync)
    return plan.changes


def affected_paths(text: str) -> list[str]:
    """The paths a patch touches (as written in it), including move destinations. Raises PatchParseError."""
    return parse_patch(text).paths()


__all__ = ["Changes", "FileChange", "Plan", "apply_patch", "affected_paths", "plan_patch", "commit",
           "workspace_resolver", "relative_display", "PatchError"]
