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


def protected_paths(root: Path, writable: tuple[Path, ...]) -> list[Path]:
    """Existing protected paths under `root`, resolved, that lie inside a writable tree.

    Symlinks are resolved so the bind lands on what the link points at; a target outside every
    writable tree is read-only already and left out.
    """
    candidates = [root / name for name in PROTECTED_DIRS]
    git = root / ".git"
    if git.is_dir():
        candidates += [git / d for d in GIT_PROTECTED_DIRS]
        candidates += [git / f for f in GIT_PROTECTED_FILES]
    else:
        candidates.append(git)  # a worktree's `.git` file: keep it pointing where it points
    try:
        with os.scandir(root) as entries:
            candidates += [root / e.name for e in entries if e.name.startswith(".env")]
    except OSError:
        pass
    out: list[Path] = []
    for p in candidates:
        if not os.path.lexists(p):
            continue
        real = Path(os.path.realpath(p))
        if not real.exists() or real in out:
            continue
        if any(real == w or w in real.parents for w in writable):
            out.append(real)
    return out
