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
import time
from pathlib import Path

# Directories at the top of a root, read-only whether or not they exist yet.
PROTECTED_DIRS = (".codebelt", ".claude")
# Inside a `.git` directory.
GIT_PROTECTED_DIRS = ("hooks",)
GIT_PROTECTED_FILES = ("config",)


def placeholders(root: Path) -> list[Path]:
    """Protected directories under `root` that do not exist yet (to create before binding)."""
    out = [root / name for name in PROTECTED_DIRS if not os.path.lexists(root / name)]
    git = root / ".git"
    if git.is_dir() and not git.is_symlink():
        out += [git / d for d in GIT_PROTECTED_DIRS if not os.path.lexists(git / d)]
    return out


# Inside a `.git` directory, besides hooks/ and config: files that point git elsewhere or add
# configuration, and each submodule's own hooks and config.
GIT_EXTRA_FILES = ("commondir", "config.worktree")
MAX_SCAN = 20_000  # entries looked at for nested repositories and agent settings
# Nested paths protected at most: each is a mount, and bwrap takes a few thousand arguments at
# most (a workspace under /tmp, or a tree of vendored repositories, can hold thousands).
MAX_NESTED = 256
SKIP_DIRS = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache"})


def _git_paths(git: Path) -> tuple[list[Path], list[Path]]:
    """(directories to pin, paths to make read-only) of one `.git` directory."""
    ro = [git / d for d in GIT_PROTECTED_DIRS] + [git / f for f in (*GIT_PROTECTED_FILES, *GIT_EXTRA_FILES)]
    try:
        with os.scandir(git / "modules") as mods:
            for m in mods:
                if m.is_dir(follow_symlinks=False):
                    ro += [Path(m.path) / "hooks", Path(m.path) / "config"]
    except OSError:
        pass
    return [git], ro


_NESTED_TTL_S = 5.0  # a walk is reused this long: commands start often, trees change rarely
_nested_cache: dict[Path, tuple[float, list[Path]]] = {}


def _nested(root: Path) -> list[Path]:
    """`.git`, `.claude`, `.codebelt` and `.env*` below the top of `root` (bounded walk, reused
    for a few seconds)."""
    hit = _nested_cache.get(root)
    now = time.monotonic()
    if hit is not None and now - hit[0] < _NESTED_TTL_S:
        return hit[1]
    found = _walk_nested(root)
    _nested_cache[root] = (now, found)
    return found


def _walk_nested(root: Path) -> list[Path]:
    found: list[Path] = []
    stack = [root]
    seen = 0
    while stack and seen < MAX_SCAN:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    seen += 1
                    if d != root and (e.name in (".git", ".claude", ".codebelt") or e.name.startswith(".env")):
                        found.append(Path(e.path))
                        if len(found) >= MAX_NESTED:
                            return found
                    if e.is_dir(follow_symlinks=False) and e.name not in SKIP_DIRS and e.name != ".git":
                        stack.append(Path(e.path))
        except OSError:
            continue
    return found


def protected_paths(root: Path, writable: tuple[Path, ...]) -> list[tuple[Path, str]]:
    """Protected paths under `root` that exist and lie inside a writable tree, in mount order:
    ("pin", dir) binds a directory onto itself so it becomes a mount point — it can then not be
    renamed or replaced (`mv .git .g && cp -a .g .git` fails) — and ("ro", path) re-binds a path
    read-only. Symlinks are resolved so a bind lands on what the link points at."""
    pins: list[Path] = []
    ro: list[Path] = [root / name for name in PROTECTED_DIRS]
    gits = [root / ".git", *[p for p in _nested(root) if p.name == ".git"]]
    for git in gits:
        if git.is_dir() and not git.is_symlink():
            pin, paths = _git_paths(git)
            pins += pin
            ro += paths
        else:
            ro.append(git)  # a worktree's or submodule's `.git` file: keep it pointing where it points
    try:
        with os.scandir(root) as entries:
            ro += [root / e.name for e in entries if e.name.startswith(".env")]
    except OSError:
        pass
    ro += [p for p in _nested(root) if p.name != ".git"]
    out: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for kind, paths in (("pin", pins), ("ro", ro)):
        for p in paths:
            if not os.path.lexists(p):
                continue
            real = Path(os.path.realpath(p))
            if not real.exists() or real in seen:
                continue
            if any(real == w or w in real.parents for w in writable):
                seen.add(real)
                out.append((real, kind))
    return out


def env_files(roots: tuple[Path, ...] | list[Path]) -> set[Path]:
    """`.env*` files in the roots now (a fresh bounded walk). A bind mount can only protect a
    file that exists, so a command auto-allowed in the sandbox that *creates* one is caught by
    comparing this before and after it (`new_env_files`)."""
    found: set[Path] = set()
    for root in roots:
        try:
            with os.scandir(root) as entries:
                found |= {Path(e.path) for e in entries if e.name.startswith(".env")}
        except OSError:
            pass
        found |= {p for p in _walk_nested(root) if p.name.startswith(".env")}
    return found


def remove_new_env_files(before: set[Path], roots: tuple[Path, ...] | list[Path]) -> list[Path]:
    """Remove the `.env*` files that appeared since `before` (files and links only); returns them."""
    removed: list[Path] = []
    for p in sorted(env_files(roots) - before):
        try:
            if p.is_symlink() or p.is_file():
                p.unlink()
                removed.append(p)
        except OSError:
            pass
    return removed
