"""Rewind: put paths back as a series of checkpoints found them, without clobbering.

`plan()` takes the checkpoints to undo (oldest first) and, for every path they changed, what it
must be now (the last checkpoint's `after`) and what it goes back to (the first one's `before`).
A path that is not what the last checkpoint left — someone else changed it since — or whose
history has a gap (changed outside codebelt between two checkpoints) is a conflict: reported and
left as it is unless `force`. A file whose earlier content was not kept cannot be restored and
is reported as such.

`apply()` works through directory descriptors opened one component at a time without following
symlinks (a command may have replaced a directory by a symlink to elsewhere): removals deepest
first, then directories, files and symlinks shallowest first; a file is written to a temporary
name in its directory and renamed over the path, so each path is either as it was or restored.
"""

from __future__ import annotations

import errno
import os
import secrets
from dataclasses import dataclass, field
from typing import Callable, Iterable

from .entries import ABSENT, DIR, FILE, LINK, Entry
from .records import Change, Checkpoint
from .store import ObjectStore

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Step:
    path: str
    current: Entry
    target: Entry
    problem: str | None = None  # why it is left as it is


@dataclass
class Plan:
    checkpoints: list[int]
    steps: list[Step] = field(default_factory=list)

    @property
    def actions(self) -> list[Step]:
        return [s for s in self.steps if s.problem is None]

    @property
    def conflicts(self) -> list[Step]:
        return [s for s in self.steps if s.problem is not None]


def plan(checkpoints: list[Checkpoint], look: Callable[[list[str]], dict[str, Entry]], force: bool = False) -> Plan:
    """What undoing `checkpoints` (oldest first) does to each path. `look(paths)` returns what
    the paths hold now, contents kept in the store (the rewind's own checkpoint needs them)."""
    chains: dict[str, list[tuple[int, Change]]] = {}
    for cp in checkpoints:
        for c in cp.changes:
            chains.setdefault(c.path, []).append((cp.id, c))
    out = Plan([cp.id for cp in checkpoints])
    now = look(sorted(chains))
    for path in sorted(chains):
        chain = chains[path]
        target = chain[0][1].before
        expected = chain[-1][1].after
        current = now[path]
        step = Step(path, current, target)
        if target.kind == FILE and target.hash is None:
            step.problem = f"its earlier content was not kept ({target.lost or 'unknown reason'})"
        elif target.lost or (current.kind == DIR and current.lost):  # a left-out directory
            step.problem = f"left as it is: {target.lost or current.lost}"
        elif not force:
            step.problem = _conflict(chain, expected, current)
        if step.problem is None and current.same_state(target):
            continue  # already as it was
        out.steps.append(step)
    return out


def _conflict(chain: list[tuple[int, Change]], expected: Entry, current: Entry) -> str | None:
    for (a_id, a), (b_id, b) in zip(chain, chain[1:]):
        if not _same(a.after, b.before):
            return f"changed outside codebelt between checkpoints {a_id} and {b_id}"
    if expected.kind == FILE and expected.hash is None and current.kind == FILE:
        return (f"what checkpoint {chain[-1][0]} left was not kept ({expected.lost or 'unknown reason'}), "
                "so codebelt cannot tell whether it was changed since")
    if not _same(expected, current):
        return f"changed since checkpoint {chain[-1][0]} (now {current.describe()}; it left {expected.describe()})"
    return None


def _same(a: Entry, b: Entry) -> bool:
    if a.kind == b.kind == FILE and a.hash is None and b.hash is None:
        return a.size == b.size and a.mode == b.mode  # neither kept: the best evidence there is
    if a.kind == b.kind == DIR:
        return True  # a directory's mode is restored, not a reason to refuse
    return a.same_state(b)


@dataclass
class Result:
    done: list[Step] = field(default_factory=list)
    failed: list[tuple[Step, str]] = field(default_factory=list)


def apply(steps: Iterable[Step], store: ObjectStore, roots: list[str]) -> Result:
    dirs = _Dirs(roots)
    try:
        return _apply(list(steps), store, dirs)
    finally:
        dirs.close()


def _apply(steps: list[Step], store: ObjectStore, dirs: "_Dirs") -> Result:
    result = Result()
    removals = [s for s in steps if s.current.kind not in (ABSENT, s.target.kind)]
    for s in sorted(removals, key=lambda s: -s.path.count("/")):
        try:
            _remove(s.path, s.current, dirs)
        except OSError as e:
            result.failed.append((s, _why(e)))
    failed = {s.path for s, _ in result.failed}
    for s in sorted(steps, key=lambda s: (s.path.count("/"), s.path)):
        if s.path in failed:
            continue
        try:
            _restore(s.path, s.target, store, dirs)
            result.done.append(s)
        except (OSError, KeyError) as e:
            result.failed.append((s, _why(e)))
    return result


def _why(e: BaseException) -> str:
    if isinstance(e, KeyError):
        return "its content is missing from the checkpoint store"
    if isinstance(e, OSError) and e.errno == errno.ENOTEMPTY:
        return "the directory holds files no checkpoint accounts for; left in place"
    if isinstance(e, OSError) and e.errno in (errno.ELOOP, errno.ENOTDIR):
        return "a directory on its path is now a symlink or a file; left in place"
    return f"{e.strerror if isinstance(e, OSError) and e.strerror else e}"


def _root_of(path: str, roots: list[str]) -> str:
    for r in roots:
        if path.startswith(r + "/"):
            return r
    raise OSError(errno.EPERM, f"{path} is outside the tracked roots")


class _Dirs:
    """Directory descriptors, each opened from its parent's without following symlinks, kept
    for the length of one rewind (a thousand files in one directory walk it once)."""

    def __init__(self, roots: list[str]):
        self.roots = roots
        self.fds: dict[str, int] = {}

    def parent(self, path: str, create: bool) -> tuple[int, str]:
        root = _root_of(path, self.roots)
        parent, name = os.path.split(path)
        return self._open(parent, root, create), name

    def _open(self, directory: str, root: str, create: bool) -> int:
        fd = self.fds.get(directory)
        if fd is not None:
            return fd
        if directory == root:
            fd = os.open(root, _DIR_FLAGS)
        else:
            up, name = os.path.split(directory)
            pfd = self._open(up, root, create)
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=pfd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o777, dir_fd=pfd)
                fd = os.open(name, _DIR_FLAGS, dir_fd=pfd)
        self.fds[directory] = fd
        return fd

    def forget(self, directory: str) -> None:
        """`directory` was removed or replaced: its descriptor (and those below) are stale."""
        for d in [d for d in self.fds if d == directory or d.startswith(directory + "/")]:
            os.close(self.fds.pop(d))

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def _remove(path: str, current: Entry, dirs: _Dirs) -> None:
    fd, name = dirs.parent(path, create=False)
    try:
        if current.kind == DIR:
            dirs.forget(path)
            os.rmdir(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass


def _restore(path: str, target: Entry, store: ObjectStore, dirs: _Dirs) -> None:
    if target.kind == ABSENT:
        return  # removed above
    fd, name = dirs.parent(path, create=True)
    if target.kind != DIR:
        dirs.forget(path)  # a directory that was here is gone
    if target.kind == DIR:
        try:
            os.mkdir(name, target.mode or 0o755, dir_fd=fd)
        except FileExistsError:
            pass
        d = os.open(name, _DIR_FLAGS, dir_fd=fd)
        try:
            os.fchmod(d, target.mode)
        finally:
            os.close(d)
    elif target.kind == LINK:
        tmp = f".{name[:200]}.{secrets.token_hex(4)}.codebelt-tmp"
        os.symlink(target.target or "", tmp, dir_fd=fd)
        try:
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            os.unlink(tmp, dir_fd=fd)
            raise
    elif target.kind == FILE:
        assert target.hash is not None
        _write_file(fd, name, target, store)


def _write_file(dfd: int, name: str, target: Entry, store: ObjectStore) -> None:
    tmp = f".{name[:200]}.{secrets.token_hex(4)}.codebelt-tmp"
    out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
    try:
        try:
            for chunk in store.chunks(target.hash or ""):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view):]
            os.fchmod(out, target.mode)
        finally:
            os.close(out)
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise
