"""Ignore files ripgrep cannot read safely, found after a run that hung or died.

ripgrep reads `.gitignore`, `.ignore` and `.rgignore` in every directory it enters, and a
repository's `.git/info/exclude`, following symlinks and without a size limit: a FIFO blocks its
open until a writer comes, a link to /dev/zero is one endless line, a huge file is read whole.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Mapping
from pathlib import Path

from ..files.gitrepo import find_repository, owned_by_user

IGNORE_NAMES = (".gitignore", ".ignore", ".rgignore")
IGNORE_FILE_MAX = 16 << 20  # larger is not an ignore file anyone wrote by hand
SCAN_ENTRIES = 500_000  # the look stops here, and after SCAN_SECONDS
SCAN_SECONDS = 5.0


def unsafe_ignore_files(root: Path, max_entries: int = SCAN_ENTRIES, max_seconds: float = SCAN_SECONDS) -> list[Path]:
    """Ignore files under `root` that ripgrep cannot read safely: not a regular file after
    symlinks (a FIFO blocks its open; a link to /dev/zero never ends), a link that leads out of
    the tree, or larger than IGNORE_FILE_MAX — and the target of such a link when it is in the
    tree. Looked for after a run hung or died, bounded in entries and time; `.git` directories
    are not entered, except for their info/exclude."""
    out: list[Path] = []
    deadline = time.monotonic() + max_seconds
    seen = 0
    stack = [root]
    real_root = os.path.realpath(root)
    while stack and seen < max_entries and time.monotonic() < deadline:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            seen += 1
            found = None
            if e.name in IGNORE_NAMES:
                found = Path(e.path)
            elif e.name == ".git":
                exclude = Path(e.path, "info", "exclude")
                found = exclude if os.path.lexists(exclude) else None
            if found is not None and _unsafe(found, real_root):
                out.append(found)
                real = Path(os.path.realpath(found))
                if real != found and str(real).startswith(real_root.rstrip("/") + "/"):
                    out.append(real)  # a link's target in the tree: masking the link alone hides nothing
            if e.name in IGNORE_NAMES or e.name == ".git":
                continue
            elif e.is_dir(follow_symlinks=False):
                stack.append(Path(e.path))
    return sorted(set(out))


def _unsafe(path: Path, real_root: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False  # a dangling link: rg reports it and goes on
    if not stat.S_ISREG(st.st_mode) or st.st_size > IGNORE_FILE_MAX:
        return True
    real = os.path.realpath(path)
    return not (real == real_root or real.startswith(real_root.rstrip("/") + "/"))


_EXCLUDES_FILE = re.compile(rb'(?im)^\s*excludesfile\s*=\s*"?\s*(\S+?)\s*"?\s*$')


def outside_reads(roots: list[Path], env: "Mapping[str, str] | None" = None) -> tuple[list[Path], list[Path]]:
    """What ripgrep reads outside the searched trees, for a jail that shows only those trees:
    (files, directories that need only exist).

    - The user's global git excludes, found the way ripgrep finds them: `excludesFile` in
      ~/.gitconfig, else in $XDG_CONFIG_HOME/git/config, else $XDG_CONFIG_HOME/git/ignore —
      and those config files themselves.
    - Ignore files in the parents of each root (ripgrep applies them too), and a repository
      above a root: its `.git` must exist for .gitignore rules to apply at all, and its
      info/exclude is read. Not another user's: a repository git would refuse for its owner
      (`files.gitrepo`), an ignore file that is not this user's or root's (`refused_parents`).
    Only regular files no larger than IGNORE_FILE_MAX: anything else stays out of the jail."""
    env = os.environ if env is None else env
    files: list[Path] = []
    markers: list[Path] = []
    home = env.get("HOME")
    xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    configs = [Path(home, ".gitconfig")] if home else []
    if xdg:
        configs.append(Path(xdg, "git", "config"))
    excludes: Path | None = None
    for cfg in configs:
        data = _small_regular(cfg)
        if data is None:
            continue
        files.append(cfg)
        m = _EXCLUDES_FILE.search(data) if excludes is None else None
        if m:
            raw = os.fsdecode(m.group(1))
            excludes = Path(home, raw[2:]) if raw.startswith("~/") and home else Path(raw)
    if excludes is None and xdg:
        excludes = Path(xdg, "git", "ignore")
    if excludes is not None and _small_regular(excludes) is not None:
        files.append(excludes)
    for root in roots:
        for parent in Path(root).parents:
            for name in IGNORE_NAMES:
                if _parent_file_refused(parent / name, env) is None and _small_regular(parent / name) is not None:
                    files.append(parent / name)
            git = parent / ".git"
            if os.path.lexists(git) and _parent_repo_refused(parent, env) is None:
                exclude = git / "info" / "exclude"
                if git.is_dir() and _small_regular(exclude) is not None:
                    files.append(exclude)
                elif git.is_dir():
                    markers.append(git)
                elif _small_regular(git) is not None:  # a worktree's or submodule's `.git` file
                    files.append(git)
    return list(dict.fromkeys(files)), list(dict.fromkeys(markers))


def refused_parents(roots: list[Path], env: "Mapping[str, str] | None" = None) -> list[str]:
    """Why ignore files or repositories in the parents of the roots are left out (another
    user's `/tmp/.git` or `/tmp/.ignore` above a checkout in /tmp): ripgrep would apply them by
    itself, so an unjailed run is told `--no-ignore-parent` when this is not empty."""
    env = os.environ if env is None else env
    out: list[str] = []
    for root in roots:
        for parent in Path(root).parents:
            for name in IGNORE_NAMES:
                why = _parent_file_refused(parent / name, env)
                if why is not None:
                    out.append(why)
            if os.path.lexists(parent / ".git"):
                why = _parent_repo_refused(parent, env)
                if why is not None:
                    out.append(why)
    return list(dict.fromkeys(out))


def _parent_repo_refused(parent: Path, env: "Mapping[str, str]") -> str | None:
    """Why git would not use the repository at `parent` (its owner, a symlinked `.git`)."""
    found = find_repository(parent, env)
    return found.refused if found is not None and found.top == parent else None


def _parent_file_refused(path: Path, env: "Mapping[str, str]") -> str | None:
    """An ignore file above a root is another user's to write unless it and its directory
    belong to this user (or root): such a file is not applied."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    for p, uid in ((path, st.st_uid), (path.parent, _uid(path.parent))):
        if uid is None or not (uid == 0 or owned_by_user(uid, env)):
            return f"{p} belongs to uid {uid}, not to this user: its ignore rules are not applied"
    return None


def _uid(path: Path) -> int | None:
    try:
        return os.lstat(path).st_uid
    except OSError:
        return None


def _small_regular(path: Path) -> bytes | None:
    """The file's bytes when it is a regular file of at most IGNORE_FILE_MAX, else None."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > IGNORE_FILE_MAX:
            return None
        with open(path, "rb") as f:
            return f.read(IGNORE_FILE_MAX)
    except OSError:
        return None
