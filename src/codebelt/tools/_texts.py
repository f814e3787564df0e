"""Texts several tools share, rendered from the session's profile: a missing file, an unread or
changed one, a symbolic link that is not written through, and an edit engine's refusal."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from ..errors import FileToolError
from ..files.lookup import similar_paths
from ..files.state import NOT_READ
from ..tool import ToolContext


def not_found(ctx: ToolContext, path: Path) -> str:
    """"File does not exist", with the one nearest existing name when there is a close one (the
    same name with another extension, or a typo of it)."""
    cwd = str(ctx.workspace.root)
    name = ""
    for near in similar_paths(path, limit=3):
        ratio = difflib.SequenceMatcher(None, near.name.split(".")[0], path.name.split(".")[0]).ratio()
        if ratio >= 0.75:
            name = os.path.relpath(near, cwd)
            break
    return ctx.texts("common.not_found", cwd=cwd,
                     did_you_mean=ctx.texts("common.did_you_mean", name=name) if name else "")


def state_problem(ctx: ToolContext, problem: str) -> str:
    """A `FileStates.check` answer in the profile's words."""
    return ctx.texts("common.not_read" if problem == NOT_READ else "common.modified")


def symlink_refusal(ctx: ToolContext, given: str, path: Path) -> str | None:
    """Writes do not go through a symbolic link (the target is named instead), as in Claude Code."""
    unresolved = Path(os.path.abspath(os.path.join(str(ctx.workspace.root), os.path.expanduser(given))))
    if not unresolved.is_symlink():
        return None
    return ctx.texts("common.symlink", path=str(unresolved), target=str(path))


def edit_error(ctx: ToolContext, e: FileToolError, given: str, old_string: str | None, path: Path) -> str:
    """An edit engine's refusal in the profile's words (its own message where the profile has none)."""
    reason = e.reason
    if reason == "not_found" and old_string is not None:
        hint = e.facts.get("hint")
        return ctx.texts("Edit.not_found", old_string=old_string, diagnosis="\n" + hint if hint else "")
    if reason == "several" and old_string is not None:
        return ctx.texts("Edit.several", count=e.facts["count"], old_string=old_string,
                         diagnosis=f"\nThe matches are at lines {e.facts['lines']}.")
    if reason == "file_missing":
        return ctx.texts("common.error", message=not_found(ctx, path))
    if reason in ("not_read", "modified"):
        return ctx.texts(f"common.{reason}")
    if reason in ("no_change", "exists", "notebook", "directory"):
        return ctx.texts(f"Edit.{reason}")
    return str(e)
