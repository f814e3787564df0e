"""The repository git would use for a directory, found as git finds it — owner check included.

Walking up from a workspace to the first `.git` finds whatever anyone left there: `/tmp/.git`
planted by another user of the machine holds for every checkout under `/tmp` an index, a config
and hooks of that user's choosing. git itself refuses such a repository ("detected dubious
ownership", `safe.directory`): the work tree's top, the `.git` entry and the git directory must
belong to the user running it (as root: to root, or under sudo to `SUDO_UID`) unless the user's
own git configuration lists the directory in `safe.directory`. Everything in codebelt that finds
a repository by walking up goes through `find_repository`, so it refuses the same repositories
git refuses, and stops where git stops: at `GIT_CEILING_DIRECTORIES`, at a file-system boundary
(unless `GIT_DISCOVERY_ACROSS_FILESYSTEM`), and at a `.git` that is a symlink (git would follow
it anywhere; it is refused rather than followed).

Nothing of a refused repository is read: only `lstat` of its top, `.git` and git directory, and
the small `gitdir:` line of a `.git` file (to learn which directory it names).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MAX_DEPTH = 256  # directories walked up at most
# git's own variables that leave the repository, its files and programs as discovery finds
# them: who commits, the editor and pager, the TLS trust and HTTP limits of its transfers, and
# those that only make git do less (not the TLS client certificate and key: credentials). Every other
# `GIT_*` can choose another repository, index, object store, configuration, pathspec meaning or
# program (shell/execution/environment.py leaves them out of unasked commands).
GIT_KEPT = frozenset({
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_TERMINAL_PROMPT",
    "GIT_MERGE_VERBOSITY", "GIT_FLUSH", "GIT_OPTIONAL_LOCKS", "GIT_CONFIG_NOSYSTEM", "GIT_ATTR_NOSYSTEM",
    "GIT_CEILING_DIRECTORIES", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "GIT_SSL_NO_VERIFY", "GIT_SSL_VERSION",
    "GIT_SSL_CIPHER_LIST", "GIT_HTTP_USER_AGENT", "GIT_HTTP_LOW_SPEED_LIMIT", "GIT_HTTP_LOW_SPEED_TIME",
    "GIT_HTTP_MAX_REQUESTS",
})
# Of the others, those that change which files, objects or paths git reads (not only which
# programs it runs): under one, git's output is not bounded by the repository found here.
GIT_ELSEWHERE = frozenset({
    "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_REPLACE_REF_BASE", "GIT_SHALLOW_FILE",
    "GIT_GRAFT_FILE", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_ICASE_PATHSPECS", "GIT_GLOB_PATHSPECS",
    "GIT_LITERAL_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ATTR_SOURCE",
})
_GITFILE_MAX = 4096


@dataclass(frozen=True)
class Found:
    """A `.git` entry found walking up: `top` is the work tree's top, `dot` the `.git` entry,
    `git_dir` the directory it names (None when it names none), `refused` why codebelt does not
    use it (None: git would use it too)."""

    top: Path
    dot: Path
    git_dir: Path | None
    refused: str | None = None


def find_repository(start: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Found | None:
    """The first `.git` (directory or `gitdir:` file) in `start` or above it, where git's own
    discovery would look; None when there is none. A found repository git would refuse carries
    the reason in `refused` and must not be read."""
    env = os.environ if env is None else env
    ceilings = _ceilings(env.get("GIT_CEILING_DIRECTORIES", ""))
    across = _truthy(env.get("GIT_DISCOVERY_ACROSS_FILESYSTEM", ""))
    here = Path(os.path.abspath(start))
    try:
        dev = os.stat(here).st_dev
    except OSError:
        return None
    for _ in range(MAX_DEPTH):
        dot = here / ".git"
        try:
            st = os.lstat(dot)
        except OSError:
            st = None
        if st is not None:
            return _judge(here, dot, st, env)
        parent = here.parent
        if parent == here or str(parent) in ceilings:
            return None
        try:
            pdev = os.stat(parent).st_dev
        except OSError:
            return None
        if pdev != dev and not across:
            return None  # git stops at a file-system boundary
        here = parent
    return None


def _judge(top: Path, dot: Path, st: os.stat_result, env: Mapping[str, str]) -> Found:
    if stat.S_ISLNK(st.st_mode):
        return Found(top, dot, None, f"{dot} is a symlink (not followed: it could name any directory)")
    if stat.S_ISDIR(st.st_mode):
        git_dir = dot
    elif stat.S_ISREG(st.st_mode):
        target = _gitfile_target(dot, st)
        if target is None:
            return Found(top, dot, None, f"{dot} is not a `gitdir:` file")
        git_dir = Path(os.path.realpath(top / target))
    else:
        return Found(top, dot, None, f"{dot} is neither a directory nor a `gitdir:` file")
    why = ownership_problem(top, dot, git_dir, env)
    return Found(top, dot, git_dir, why)


def _gitfile_target(dot: Path, st: os.stat_result) -> str | None:
    if st.st_size > _GITFILE_MAX:
        return None
    try:
        fd = os.open(dot, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        text = os.read(fd, _GITFILE_MAX).decode("utf-8", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    if not text.startswith("gitdir:"):
        return None
    return text[7:].strip() or None


def ownership_problem(top: Path, dot: Path, git_dir: Path, env: Mapping[str, str] | None = None,
                      also: tuple[Path, ...] = ()) -> str | None:
    """Why git would refuse this repository for its owner ("dubious ownership"), or None: the
    top, the `.git` entry, the git directory (and `also`, e.g. a linked worktree's common
    directory) must be the user's, unless `safe.directory` in the user's or the system's git
    configuration names the top."""
    env = os.environ if env is None else env
    for p in dict.fromkeys((top, dot, git_dir, *also)):
        try:
            uid = os.lstat(p).st_uid
        except OSError:
            return f"{p} cannot be examined"
        if not owned_by_user(uid, env):
            if _safe_directory(top, env):
                return None
            return (f"{p} belongs to uid {uid}, not to this user (git refuses it too: \"dubious "
                    "ownership\"; `git config --global --add safe.directory` trusts it)")
    return None


def owned_by_user(uid: int, env: Mapping[str, str]) -> bool:
    """Whether a file of owner `uid` is this user's, as git counts it."""
    euid = os.geteuid()
    if uid == euid:
        return True
    if euid == 0:  # as git: root's own files, and under sudo the invoking user's
        sudo = env.get("SUDO_UID", "")
        return sudo.isdigit() and int(sudo) == uid
    return False


def _ceilings(value: str) -> set[str]:
    out = set()
    for part in value.split(":"):
        if part and os.path.isabs(part):
            out.add(os.path.normpath(part))
            out.add(os.path.realpath(part))
    return out


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(\s+"[^"]*")?\s*\]\s*(.*)$')
_KEY = re.compile(r"^\s*directory\s*=\s*(.*?)\s*$", re.IGNORECASE)


def _safe_directory(top: Path, env: Mapping[str, str]) -> bool:
    """Whether `safe.directory` in the system's or the user's git configuration (never a
    repository's own) names `top`: `*` or its path. An empty value clears the entries before it,
    as in git. Stricter than recent git: `include`d files are not followed, and a `path/*` prefix
    (git 2.46) names nothing."""
    home = env.get("HOME") or os.path.expanduser("~")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files: list[str] = []
    if not _truthy(env.get("GIT_CONFIG_NOSYSTEM", "")):
        files.append(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    if env.get("GIT_CONFIG_GLOBAL"):
        files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        files += [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    values: list[str] = []
    for f in files:
        values += _safe_values(f)
    real = os.path.realpath(top)
    safe = False
    for v in values:
        if v == "":
            safe = False
            continue
        if v.startswith("~/"):
            v = os.path.join(home, v[2:])
        if v == "*":
            safe = True
        elif os.path.realpath(v) == real:
            safe = True
    return safe


def _safe_values(path: str) -> list[str]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        text = os.read(fd, 1 << 20).decode("utf-8", "replace")
    except OSError:
        return []
    finally:
        os.close(fd)
    out: list[str] = []
    section = ""
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            section = "" if m.group(2) else m.group(1).lower()  # `[safe "x"]` is another key
            line = m.group(3)
        if section != "safe":
            continue
        k = _KEY.match(line.split("#", 1)[0].split(";", 1)[0])
        if k:
            v = k.group(1)
            if len(v) >= 2 and v[0] == v[-1] == '"':
                v = v[1:-1]
            out.append(v)
    return out


def object_stores(root: Path, env: Mapping[str, str] | None = None, max_age: float = 0.5,
                  first: bool = False) -> tuple[list[Path], str | None]:
    """git directories a program running in the workspace `root` can read the history of — the
    repository holding `root` (whatever its objects' place: a linked worktree's common
    directory, alternates) and every `.git` or bare repository inside it (a second clone, a
    submodule's) — and, when the tree could not be walked whole in time, why the list may be
    short. Another user's repository above `root` (refused) holds none of the user's history.
    `first`: stop at the first one found (the tree is not walked when `root` is in one)."""
    from .scan import shared

    out: list[Path] = []
    found = find_repository(root, env)
    if found is not None and found.refused is None and found.git_dir is not None:
        out.append(found.git_dir)
        if first:
            return out, None
    snap = shared(root).snapshot(max_age)
    for rel, d in snap.dirs.items():
        names = set(d.names)
        if ".git" in names:
            p = snap.path(rel, ".git")
            if p not in out:
                out.append(p)
        if {"HEAD", "objects", "refs"} <= names:  # a bare repository (or a git directory itself)
            p = snap.path(rel)
            if p not in out and p.name != ".git":
                out.append(p)
    return out, (None if snap.complete else snap.reason or "the tree could not be walked whole in time")
