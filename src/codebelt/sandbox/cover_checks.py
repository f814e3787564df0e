"""Host side of the one-shot bwrap's mask check (stage.py checks inside, before the command).

bwrap mounts each mask by path. For a mask under a directory a command may write, the path can
lead elsewhere by the time bwrap mounts it (a background command renames a directory above it),
so the stage is told which covers to check and the identity of the directory each was found in.
The covers are read from the very bwrap options the command is started with: what bwrap mounts
is what is checked, with no second listing that could differ from the first.
"""

from __future__ import annotations

import os
import stat
import time
from functools import cache
from pathlib import Path

from .jail import _covered, cover_where, mask_targets

BWRAP_FILE_MODE = 0o444  # of the mount point bwrap creates for a file
PLACEHOLDER_WATCH_S = 10.0  # how long after its argv is built a one-shot bwrap may still create one


@cache
def _null() -> tuple[int, int]:
    st = os.stat("/dev/null")  # what bwrap binds over a file (jail.mask_args)
    return st.st_dev, st.st_ino


def covers(args: "list[str] | tuple[str, ...]") -> list[tuple[str, bool]]:
    """(path, is a directory) of every mask in bwrap options (before `--`), in mount order:
    `--ro-bind /dev/null PATH` over a file, `--tmpfs PATH --remount-ro PATH` over a directory
    (jail.mask_args). Every path in the options is absolute, so no option's value reads as one."""
    out: list[tuple[str, bool]] = []
    i, n = 0, len(args)
    while i < n and args[i] != "--":
        if args[i] == "--ro-bind" and i + 2 < n and args[i + 1] == "/dev/null":
            out.append((args[i + 2], False))
            i += 3
        elif args[i] == "--tmpfs" and i + 3 < n and args[i + 2] == "--remount-ro" and args[i + 3] == args[i + 1]:
            out.append((args[i + 1], True))
            i += 4
        else:
            i += 1
    return out


def watched(masked: "list[Path] | tuple[Path, ...]", roots: "tuple[Path, ...] | list[Path]",
            targets: "list[Path] | None" = None) -> dict[str, list[int]]:
    """The identity of the directory holding each masked path under `roots` ([-1, -1]: that
    directory is not there): the one the walk listed the path in, for a path it found
    (`files.scan.Found`), else the one there now. What the directories became by the time bwrap
    mounts the covers is checked against it (stage.py, the residents). From the walk, not from a
    lookup now: a directory swapped in between the walk and now would be taken for the one the
    walk saw, and the real file, under the name the swap gave its directory, would be in no list.
    `targets`: `mask_targets(masked)`, when the caller has it already."""
    targets = mask_targets(masked) if targets is None else targets
    seen = {str(p): where for p in targets if (where := cover_where(p, roots))}
    names = None
    for p in masked:
        found = getattr(p, "found_in", None)
        if found is None:
            continue
        if names is None:
            names = {str(t) for t in targets}
        path = str(p)
        if path not in names:
            # covered at its real path (a link on the way), which must be in that same directory
            # under the same name: a directory above swapped for a link to a decoy since the walk
            # makes it another directory, and the check refuses the command
            real = os.path.realpath(path)
            if os.path.basename(real) == os.path.basename(path):
                path = real
        if _covered(path, list(roots)):
            seen[path] = list(found)
    return seen


def moved_since_walk(masked: "list[Path] | tuple[Path, ...]", roots: "tuple[Path, ...] | list[Path]") -> str | None:
    """A masked path under `roots` whose directory is no longer the one the walk listed it in
    (`watched`), or None. For Landlock, whose rules are opened by path when built: asked before
    and after the build, a directory swapped since the walk is caught (a swap made and undone
    within the build itself is not)."""
    walked = [p for p in masked if getattr(p, "found_in", None) is not None and _covered(p, list(roots))]
    for path, where in watched(walked, roots).items() if walked else ():
        try:
            st = os.stat(os.path.dirname(path))
        except OSError:
            return path  # moved away with its directory: the file is elsewhere, under no rule
        if [st.st_dev, st.st_ino] != where:
            return path
    return None


def refused(path: str) -> list[str]:
    """An argv that refuses the command as the stage does (status 126, the reason on stderr)."""
    message = (f"codebelt: {path} was moved while the command started (a directory above it was renamed); "
               "the command did not run: run it again")
    return ["/bin/sh", "-c", 'printf "%s\n" "$1" >&2; exit 126', "sh", message]


def cover_specs(args: "list[str] | tuple[str, ...]", writable: "tuple[Path, ...] | list[Path]",
                seen: "dict[str, list[int]]") -> list[str]:
    """The stage's COVER arguments for the masks in `args` that lie under `writable` (elsewhere
    no command can move them): none when there is nothing to check. `seen`: `watched` of the
    paths `args` were built from; one of them that `args` does not cover (not there when they
    were built) must be gone from its directory (`g`; its directory missing refuses the command,
    as the residents do), unless a covered directory hides it."""
    specs = []
    found = covers(args)
    for path, is_dir in found:
        where = seen.get(path) or cover_where(Path(path), writable)
        if where:
            specs.append(f"{'d' if is_dir else 'f'}:{where[0]}:{where[1]}:{path}")
    specs += [f"g:{where[0]}:{where[1]}:{path}" for path, where in left_out(seen, found)]
    if specs:
        dev, ino = _null()
        specs.insert(0, f"null:{dev}:{ino}")
    return specs


def left_out(seen: "dict[str, list[int]]", planned: "list[tuple[str, bool]] | list[tuple[Path, bool]]") -> list[tuple[str, list[int]]]:
    """The paths of `seen` that `planned` (path, is a directory) does not cover: not there when
    the covers were planned (moved away with their directory, or deleted), and not hidden by a
    covered directory."""
    covered = {str(p) for p, _ in planned}
    hidden = [str(p) for p, is_dir in planned if is_dir]
    return [(p, w) for p, w in seen.items() if p not in covered and not _covered(p, hidden)]


def stage_argv(python: str, source: str, abi: int, writable: "list[str]", specs: list[str],
               argv: list[str]) -> list[str]:
    """`argv` started through the stage (stage.py's argument order)."""
    return [python, "-I", "-S", "-c", source, str(abi), *writable, "--", *specs, "--", *argv]


def placed(args: "list[str] | tuple[str, ...]", writable: "tuple[Path, ...] | list[Path]") -> list[tuple]:
    """The covers of `args` under `writable`, each with the identity of what is at its path as
    the argv is built: (path, is a directory, (dev, ino, ctime) or None, when). With the
    change time: a placeholder made after the file was deleted may get its inode number."""
    out = []
    now = time.monotonic()
    for path, is_dir in covers(args):
        if _covered(path, list(writable)):
            try:
                st = os.lstat(path)
                before = (st.st_dev, st.st_ino, st.st_ctime_ns)
            except OSError:
                before = None
            out.append((path, is_dir, before, now))
    return out


def sweep(entries: list[tuple]) -> list[tuple]:
    """Remove what bwrap made in the host's tree for a cover whose path vanished between the
    argv's build and its mount (it creates the mount point: an empty file, or an empty
    directory, left behind when the command ends); the entries still to watch are returned.
    Only an empty file of bwrap's mode, or an empty directory, that is not what was there at the
    build is removed."""
    keep = []
    now = time.monotonic()
    for entry in entries:
        path, is_dir, before, when = entry
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino, st.st_ctime_ns) != before:
            try:
                if is_dir and stat.S_ISDIR(st.st_mode):
                    os.rmdir(path)  # only if empty
                elif (not is_dir and stat.S_ISREG(st.st_mode) and st.st_size == 0 and st.st_nlink == 1
                      and stat.S_IMODE(st.st_mode) == BWRAP_FILE_MODE):
                    os.unlink(path)
            except OSError:
                pass
            continue
        if now - when < PLACEHOLDER_WATCH_S:
            keep.append(entry)
    return keep
