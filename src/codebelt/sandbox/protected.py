"""Protected paths inside a writable root that the bwrap sandbox re-binds read-only.

They are the files that make tools run programs or grant permissions later: git hooks and
config (git runs them on the user's next commit), codebelt and Claude Code settings (the next
session would load them), and `.env*` files at the top of a root.

A read-only bind needs a mount point, and a mount point must exist. For a protected directory
that does not exist yet, `placeholders()` names the empty directory to create first so that
creating it (and anything inside) fails in the sandbox; the service removes the placeholders it
made, if still empty, when the session ends. `.git/config` is only protected when it exists (a
repository without one is broken anyway), and a `.git` that does not exist is not protected:
`git init` must work, so in a workspace without a repository one command can create a repository
with hooks; from the next command on they are read-only.
"""

from __future__ import annotations

import os
import stat
import sys
import weakref
from collections.abc import Callable
from pathlib import Path

from ..files.beneath import Beneath
from ..files.scan import DIR, Dir, PerDirectory, Snapshot, shared
from ..workspace import PROTECTED_DIRS as CONFIG_DIRS
from ..workspace import PROTECTED_FILES as CONFIG_FILES
from .jail import resolved_outside

# told each directory (a real path) before an entry of it is looked at: watched.py keeps an
# answer while none of them changes
Consult = Callable[[str], None]

# Directories at the top of a root, read-only whether or not they exist yet.
PROTECTED_DIRS = (".codebelt", ".claude")
# Inside a `.git` directory.
GIT_PROTECTED_DIRS = ("hooks",)
GIT_PROTECTED_FILES = ("config",)


def placeholders(root: Path, consult: "Consult | None" = None) -> list[Path]:
    """Protected directories under `root` that do not exist yet (to create before binding)."""
    look = consult or _ignore
    _listed(root, look)
    out = [root / name for name in PROTECTED_DIRS if not os.path.lexists(root / name)]
    git = root / ".git"
    if git.is_dir() and not git.is_symlink():
        _listed(git, look)
        out += [git / d for d in GIT_PROTECTED_DIRS if not os.path.lexists(git / d)]
    return out


def _listed(directory: "Path | str", look: Consult) -> str | None:
    """The real path of `directory`, itself consulted too (entries of it are looked at next);
    None when it is not a directory."""
    real = resolved_outside(str(directory), (), consult=look)
    if real is not None:
        look(real)
    return real


def _ignore(_directory: str) -> None:
    pass


# Inside a `.git` directory, besides hooks/ and config: files that point git elsewhere or add
# configuration, and each submodule's own hooks and config.
GIT_EXTRA_FILES = ("commondir", "config.worktree")
# Nested paths protected at most: each is a mount, and a sandbox with thousands of mounts starts
# slowly. More than this is a gap, reported by `protection_gap` (the command then asks).
MAX_NESTED = 1024
NESTED_NAMES = (".git", ".claude", ".codebelt")
# Names that make a program run later (editor tasks, git hooks managers, shell start-up files,
# tool configs): read-only where they exist, their creation undone, at any depth, the top included.
RUNS_LATER = frozenset(n for n in (*CONFIG_DIRS, *CONFIG_FILES) if n not in (*NESTED_NAMES, ".git"))
FRESH_S = 0.1  # one command's set-up asks several times: a walk this recent counts as now


def _notable(name: str) -> bool:
    return name in NESTED_NAMES or name.startswith(".env") or name.casefold() in RUNS_LATER


_notable_cache: "weakref.WeakKeyDictionary[Dir, tuple[str, ...]]" = weakref.WeakKeyDictionary()


def _notable_in(d: Dir) -> tuple[str, ...]:
    hit = _notable_cache.get(d)
    if hit is None:
        hit = _notable_cache[d] = tuple(n for n in d.names if _notable(n))
    return hit


def _inside_git(rel: str) -> bool:
    return ".git" in rel.split("/")


def _git_paths(git: Path, look: Consult) -> tuple[list[Path], list[Path]]:
    """(directories to pin, paths to make read-only) of one `.git` directory."""
    ro = [git / d for d in GIT_PROTECTED_DIRS] + [git / f for f in (*GIT_PROTECTED_FILES, *GIT_EXTRA_FILES)]
    modules = _listed(git / "modules", look)
    try:
        with os.scandir(modules or git / "modules") as mods:
            for m in mods:
                if m.is_dir(follow_symlinks=False):
                    # all that a submodule's directory has its creation undone for: as mount
                    # points none can be removed, so none's inode number can pass to a new one
                    ro += [Path(m.path) / "hooks", *(Path(m.path) / f for f in (*GIT_PROTECTED_FILES, *GIT_EXTRA_FILES))]
    except OSError:
        pass
    return [git], ro


def _nested_in(snap: Snapshot, rel: str, d: Dir) -> tuple[Path, ...]:
    """`.git`, `.claude`, `.codebelt` and `.env*` in one directory below the top of the tree (not
    inside a `.git`: its insides are protected as a repository's); at the top, only what makes a
    program run later (the top's own are protected on their own)."""
    if _inside_git(rel):
        return ()
    if not rel:
        return tuple(snap.path(rel, n) for n in _notable_in(d) if n.casefold() in RUNS_LATER)
    return tuple(snap.path(rel, n) for n in _notable_in(d))


_NESTED = PerDirectory(_nested_in)


def _nested_of(snap: Snapshot) -> list[Path]:
    """`.git`, `.claude`, `.codebelt` and `.env*` below the top of the snapshot's root, at any
    depth (not inside a `.git`: its insides are protected as a repository's)."""
    return [p for found in _NESTED.of(snap).values() for p in found]


def _nested(root: Path) -> list[Path]:
    return _nested_of(shared(root).snapshot(FRESH_S))


def runtime_paths() -> list[Path]:
    """Where codebelt's own process and environment read code from later: every entry of
    sys.path (a module imported on first use is looked for in each, in order: a `pypdf.py`
    planted in an earlier one would run in codebelt, outside any sandbox), and the environment's
    `bin` and `pyvenv.cfg` (the `codebelt` and `python` the user starts next). Where they lie in
    a writable root (codebelt installed into the project's own environment, or run on its own
    source), a sandboxed command must not change them."""
    out = [Path(os.path.abspath(p or os.curdir)) for p in sys.path]
    prefix = Path(sys.prefix)
    return out + [prefix / "bin", prefix / "pyvenv.cfg"]


def _runtime_in(root: Path, look: "Consult") -> tuple[list[Path], list[Path]]:
    """(directories to pin, paths to make read-only): the runtime paths that lie in `root` once
    resolved (one spelled through a link outside, `/home` a link to `/data`, lies there too),
    and every directory between the root and each, pinned: a read-only bind goes along with a
    directory renamed above it (`mv venv v && mkdir -p venv/lib/...` would put another in its
    place)."""
    pins: list[Path] = []
    ro: list[Path] = []
    for p in runtime_paths():
        found = resolved_outside(str(p), (), directory=False, consult=look)
        if found is None or root not in Path(found).parents:
            continue
        real = Path(found)
        ro.append(real)
        pins += _between(root, real)
    return pins, ro


def _between(root: Path, path: Path) -> list[Path]:
    """The directories strictly between `root` and `path` (below it), outermost first."""
    return [up for up in reversed(path.parents) if root in up.parents]


def _walk(path: str, root: str) -> tuple[str, str | None, bool]:
    """Resolve `path` as the kernel does, one component at a time (a link's target walked in its
    place): (its real path — the part that does not exist appended as spelled, as
    `os.path.realpath` does —, the first link followed that lies in `root` (the walk stops
    there), whether it exists). One pass: this runs for every sandboxed decision."""
    inside = root.rstrip("/") + "/"
    todo = path.split("/")[::-1]  # a stack: the next component last
    here = ""
    links = 0
    while todo:
        name = todo.pop()
        if name in ("", "."):
            continue
        if name == "..":
            here = here.rpartition("/")[0]
            continue
        step = f"{here}/{name}"
        try:
            if not stat.S_ISLNK(os.lstat(step).st_mode):
                here = step
                continue
            target = os.readlink(step)
        except OSError:
            return os.path.normpath("/".join([step, *reversed(todo)])), None, False
        if step.startswith(inside):
            return step, step, True
        links += 1
        if links > 40 or not target:
            return step, None, False
        if target.startswith("/"):
            here = ""
        todo.extend(target.split("/")[::-1])
    return here or "/", None, True


def protection_gap(root: Path) -> str | None:
    """Why the protected paths of `root` cannot all be protected right now (the walk ran out of
    time, there are more nested ones than the sandbox takes, or codebelt imports modules from the
    root itself), or None. A command that would run unasked because the sandbox protects them
    must ask instead."""
    real = os.path.realpath(root)
    for p in runtime_paths():
        found, link, exists = _walk(str(p), real)
        if link is not None:
            # a read-only bind lands on the link's target; the link itself, in a directory a
            # command may write, could be replaced by a directory of the command's
            return (f"codebelt looks for the modules it imports in {p}, reached through a link at {link} "
                    f"inside {root} that a command could replace")
        if found == real:
            return (f"codebelt looks for the modules it imports in {root} itself (it is on sys.path), "
                    "where a command could plant one: start codebelt from outside the workspace")
        if not exists and found.startswith(real.rstrip("/") + "/"):
            # nothing there to bind read-only: a command could create it (a directory, or the
            # zip archive a sys.path entry may name) with modules in it
            return (f"codebelt looks for the modules it imports in {p}, which does not exist in {root}: "
                    "a command could create it")
    snap = shared(root).snapshot(FRESH_S)
    if not snap.complete:
        return f"protected paths (nested .git, .claude, .env) could not all be found: {snap.reason}"
    n = len(_nested_of(snap))
    if n > MAX_NESTED:
        return (f"{root} holds {n:,} nested .git, .claude, .codebelt and .env* paths, more than the "
                f"{MAX_NESTED:,} the sandbox protects")
    return None


def protected_paths(root: Path, writable: tuple[Path, ...], consult: "Consult | None" = None,
                    nested: "list[Path] | None" = None, runtime: bool = True) -> list[tuple[Path, str]]:
    """Protected paths under `root` that exist and lie inside a writable tree, in mount order:
    ("pin", dir) binds a directory onto itself so it becomes a mount point — it can then not be
    renamed or replaced (`mv .git .g && cp -a .g .git` fails) — and ("ro", path) re-binds a path
    read-only (codebelt's own code among them: `runtime_paths`). Symlinks are resolved so a bind lands on what the link points at. `consult`: told
    each directory the answer depends on before it is looked in; `nested`: `nested(root)`, when
    the caller has it. `runtime`: with codebelt's own runtime paths (`runtime_protected`)."""
    look = consult or _ignore
    pins: list[Path] = []
    ro: list[Path] = [root / name for name in PROTECTED_DIRS]
    nested = (_nested(root) if nested is None else nested)[:MAX_NESTED]
    gits = [root / ".git", *[p for p in nested if p.name == ".git"]]
    for git in gits:
        _listed(git.parent, look)
        if git.is_dir() and not git.is_symlink():
            _listed(git, look)
            pin, paths = _git_paths(git, look)
            pins += pin
            ro += paths
        else:
            ro.append(git)  # a worktree's or submodule's `.git` file: keep it pointing where it points
    try:
        with os.scandir(_listed(root, look) or root) as entries:
            ro += [root / e.name for e in entries if e.name.startswith(".env")]
    except OSError:
        pass
    ro += [p for p in nested if p.name != ".git"]
    home_pins, home_ro = _home_config(root, look)
    pins += home_pins
    ro += home_ro
    if runtime:
        more_pins, more_ro = _runtime_in(root, look)
        pins += more_pins
        ro += more_ro
    return _resolved(writable, pins, ro, look)


def runtime_protected(root: Path, writable: tuple[Path, ...], consult: "Consult | None" = None) -> list[tuple[Path, str]]:
    """The part of `protected_paths` that is codebelt's own runtime paths (kept apart: what it
    depends on, the directories on the way to each sys.path entry, changes apart from the
    workspace)."""
    look = consult or _ignore
    return _resolved(writable, *_runtime_in(root, look), look)


def in_mount_order(found: "list[tuple[Path, str]]") -> list[tuple[Path, str]]:
    """Several lists of `protected_paths` as one: the pins first, then the read-only paths; a
    path both pinned and read-only is read-only (that makes it a mount point too)."""
    ro = {p for p, kind in found if kind == "ro"}
    pins = {p: None for p, kind in found if kind == "pin" and p not in ro}
    return [(p, "pin") for p in pins] + [(p, "ro") for p in dict.fromkeys(p for p, kind in found if kind == "ro")]


def _resolved(writable: tuple[Path, ...], pins: list[Path], ro: list[Path], look: Consult) -> list[tuple[Path, str]]:
    found: list[tuple[Path, str]] = []
    for kind, paths in (("pin", pins), ("ro", ro)):
        for p in paths:
            # as the kernel resolves it, each directory on the way consulted: None when it (or a
            # link's target) does not exist
            real = resolved_outside(str(p), (), directory=False, consult=look)
            if real is not None and any(Path(real) == w or w in Path(real).parents for w in writable):
                found.append((Path(real), kind))
    return in_mount_order(found)


def nested(root: Path) -> list[Path]:
    """The nested protected paths of `root` (`.git`, `.claude`, `.codebelt`, `.env*` below its
    top) from its current walk."""
    return _nested(root)


def _home_config(root: Path, look: Consult) -> tuple[list[Path], list[Path]]:
    """(directories to pin, paths to make read-only) of a root that holds the home directory
    (`--root ~`): the home directory's dot entries and ~/bin configure every program the user
    runs (shell start-up, ~/.ssh, ~/.config, ~/.local/bin). The home directory and each one
    between it and the root are pinned: renamed away, the home would take its binds along and
    leave its name to one of the command's."""
    found = _listed(os.path.expanduser("~"), look)
    if found is None:
        return [], []
    home = Path(found)
    if home == Path("/") or not (home == root or root in home.parents):
        return [], []
    pins = [*_between(root, home), home] if home != root else []
    try:
        with os.scandir(home) as entries:
            return pins, [home / e.name for e in entries if e.name.startswith(".") or e.name == "bin"]
    except OSError:
        return pins, []


# -- creations a command that runs unasked may not make -----------------------------------------
# A bind mount can only protect what exists. What a command auto-allowed in the sandbox creates
# among these is removed afterwards (`undo_creations`), compared with `guarded(roots)` before it.
GIT_NEW_FILES = ("config", *GIT_EXTRA_FILES)  # in a `.git` (or a submodule's) directory: git reads them


def _is_module_dir(rel: str) -> bool:
    parts = rel.split("/")
    return len(parts) >= 3 and parts[-2] == "modules" and ".git" in parts[:-2]


# what a guarded path holds: its kind (DIR, FILE, LINK, OTHER) and the (st_dev, inode) of the
# object there — a directory renamed above it takes the object along, and another put in its
# place is another object
Guarded = tuple[str, tuple[int, int]]


def _guarded_in(snap: Snapshot, rel: str, d: Dir) -> tuple[tuple[Path, Guarded], ...]:
    """(path, (kind, identity)) of what in one directory has its creation undone (`_guarded_of`)."""
    out: list[tuple[Path, Guarded]] = []
    if not _inside_git(rel):
        for n in _notable_in(d):
            if not rel and n in PROTECTED_DIRS:
                continue  # read-only mounts, made as placeholders when missing: nothing gets in
            i = d.names.index(n)
            out.append((snap.path(rel, n), (d.kinds[i], (d.dev, d.inos[i]))))
        return tuple(out)
    last = rel.rsplit("/", 1)[-1]
    if last == ".git" or _is_module_dir(rel):
        keep = lambda n: n in GIT_NEW_FILES  # noqa: E731
    elif last == "hooks" and _is_module_dir(rel.rsplit("/", 1)[0]):
        keep = lambda n: not n.endswith(".sample")  # noqa: E731
    else:
        return ()
    return tuple((snap.path(rel, n), (k, (d.dev, ino))) for n, k, ino in zip(d.names, d.kinds, d.inos) if keep(n))


_GUARDED = PerDirectory(_guarded_in)


def _guarded_of(snap: Snapshot) -> dict[Path, Guarded]:
    """Path → (kind, identity) of everything whose creation is undone: `.git`, `.claude`,
    `.codebelt` and `.env*` at any depth; in every git directory (and submodule's), `config`,
    `commondir`, `config.worktree`; hooks of submodules that are not samples."""
    return {p: g for found in _GUARDED.of(snap).values() for p, g in found}


def guarded(roots: tuple[Path, ...] | list[Path]) -> dict[Path, Guarded]:
    """What exists now among the paths whose creation is undone (a fresh walk of each root)."""
    out: dict[Path, Guarded] = {}
    for root in roots:
        out.update(_guarded_of(shared(root).snapshot()))
    return out


WHY_REMOVED = {
    ".env": "tools load .env files automatically",
    ".git": "git runs the hooks and config of a repository",
    ".claude": "it would configure the agent",
    ".codebelt": "it would configure the agent",
}


def _why(path: Path, roots) -> str:
    for part in reversed(path.parts):
        if part.startswith(".env") and part.casefold() != ".envrc":
            return WHY_REMOVED[".env"]
        if part in WHY_REMOVED:
            return WHY_REMOVED[part]
        folded = part.casefold()
        if folded in RUNS_LATER:
            return f"{part}: {CONFIG_DIRS.get(folded) or CONFIG_FILES[folded]}"
    return WHY_REMOVED[".git"]


def undo_creations(before: dict[Path, Guarded], roots: tuple[Path, ...] | list[Path]) -> list[tuple[Path, str]]:
    """Remove what appeared among the guarded paths since `before`; returns (path, why) for
    each. New means an object that was at no guarded path before, wherever it is now: one put
    where another was (`mv vendor v2 && git init vendor/lib`, hooks and all) is new, and the one
    that was there, moved along with a directory above it, is not (it is the user's: removing it
    would lose a repository). A new `.env*` directory (a virtualenv named `.env`) is left alone;
    everything else is removed — files and links unlinked, directories removed with their
    contents — through descriptors opened without following symlinks."""
    after = guarded(roots)
    known = {ident for _kind, ident in before.values()}
    removed: list[tuple[Path, str]] = []
    gone: list[Path] = []
    for p in sorted((q for q, (_k, ident) in after.items() if ident not in known), key=lambda q: len(q.parts)):
        if any(g in p.parents for g in gone):
            continue  # inside a directory already removed
        kind = after[p][0]
        if kind == DIR and p.name.startswith(".env"):
            continue
        if _remove(p, kind, roots):
            removed.append((p, _why(p, roots)))
            gone.append(p)
    return removed


def _remove(p: Path, kind: str, roots) -> bool:
    import shutil

    where = Beneath(tuple(roots))
    try:
        dfd = where.open_dir(p.parent)
    except OSError:
        return False
    try:
        st = os.stat(p.name, dir_fd=dfd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(p.name, dir_fd=dfd)  # fd-based: never follows a symlink inside
        else:
            os.unlink(p.name, dir_fd=dfd)
        return True
    except OSError:
        return False
    finally:
        os.close(dfd)
