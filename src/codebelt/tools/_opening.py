"""How the file tools open what the permission decision allowed: the resolved path, beneath the
root it lies under, following no symlink (`files.beneath`), and never a file whose inode is a
read-denied file's (a hard link to `.env` is `.env`)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

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


# Where the OS names an open descriptor by path (Linux): a child process that changes into
# /proc/self/fd/N before it executes lands in the directory that descriptor holds.
_DESCRIPTOR_PATHS = os.path.isdir("/proc/self/fd")


@contextmanager
def pinned_dir(ctx: ToolContext, directory: Path,
               visible: Callable[[str], bool] | None) -> Iterator[tuple[str, Callable[[str], bool] | None]]:
    """A directory the decision allowed, held open (beneath its root, no symlink followed) for a
    program to run in — ripgrep searches it even if the name is swapped for a symlink while it
    starts. Yields (the working directory to give the program, `visible` over the paths it
    reports, which name the descriptor, mapped back to the directory's path). Raises ToolError
    when the directory is a symlink already."""
    try:
        fd = beneath(ctx).open_dir(directory)
    except SymlinkInPath as e:
        raise ToolError(swapped(ctx, directory, e, "Nothing was searched")) from None
    except OSError as e:  # never the name instead: that is what could have been swapped
        raise ToolError(f"Cannot search {ctx.workspace.relative(directory)}: {e.strerror}.") from None
    try:
        if not _DESCRIPTOR_PATHS:
            yield str(directory), visible
            return
        held = f"/proc/self/fd/{fd}"
        real = str(directory)

        def mapped(path: str) -> bool:
            return visible(real + path[len(held):] if path.startswith(held) else path)  # type: ignore[misc]

        yield held, (mapped if visible is not None else None)
    finally:
        os.close(fd)
