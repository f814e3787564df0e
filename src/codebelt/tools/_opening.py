"""How the file tools open what the permission decision allowed: the resolved path, beneath the
root it lies under, following no symlink (`files.beneath`), and never a file whose inode is a
read-denied file's (a hard link to `.env` is `.env`)."""

from __future__ import annotations

import os
from pathlib import Path

from ..files.beneath import Beneath, SymlinkInPath
from ..tool import ToolContext, ToolError


def beneath(ctx: ToolContext) -> Beneath:
    """The Beneath of this call: the workspace roots and internal directories, and the check that
    refuses an opened file sharing its inode with a file a Read deny rule covers."""
    ws = ctx.workspace
    engine = ctx.permissions

    def check(path: Path, st: os.stat_result) -> None:
        denied = engine.denied_inode(st) if engine is not None else None
        if denied is not None:
            raise ToolError(
                f"{ws.relative(path)} is the same file as {ws.relative(denied)} (a hard link), which a "
                "Read deny rule covers; it cannot be read or changed through another name.")

    return Beneath((*ws.roots, *ws.internal_read_dirs), check)


def swapped(ctx: ToolContext, path: Path, e: SymlinkInPath, done: str = "Nothing was read or written") -> str:
    """The sentence for a path that changed under the call (a directory became a symlink)."""
    where = ctx.workspace.relative(e.link) if e.link is not None else "a part of it"
    return (f"{ctx.workspace.relative(path)} changed while this call ran: {where} is a symlink now (was it "
            f"just replaced?), and symlinks found after the permission check are not followed. {done}.")
