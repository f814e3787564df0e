"""One walk of a workspace tree, shared by everything that protects paths in it.

The read-only jail masks the files a Read deny rule covers (and hard links to them), and the
write sandbox re-binds nested `.git`, `.claude`, `.codebelt` and `.env*` read-only. Both need
the whole tree: a walk that stops after N entries leaves a deep `.env` or `sub/.git/hooks` open
without saying so. So there is one walk per root (`shared(root)`), kept per directory:

- a directory's entries (names, kinds, inode numbers from `getdents`) are listed once and kept
  with the directory's (dev, inode, mtime, ctime). A refresh `lstat`s every known directory and
  lists again only those whose key changed — adding, removing or renaming an entry changes the
  directory's mtime and ctime, and ctime cannot be set back (`touch -d` moves it forward), so a
  command cannot hide a new link by restoring the mtime;
- directories are listed through a descriptor opened beneath the root without following
  symlinks (`files.beneath`), so a directory swapped for a symlink is never listed through it;
- a walk is bounded in time (`budget_s`). Past it the snapshot is marked incomplete with the
  reason, and callers refuse what depends on it (the command asks) instead of trusting a partial
  answer; the next refresh goes on where the walk stopped, so a big tree completes over a few
  refreshes.

Consumers derive their own answers from a `Snapshot` and may cache them per directory record:
an unchanged directory keeps the same `Dir` object across refreshes.
"""

from __future__ import annotations

import os
import stat as stat_mod
import threading
import time
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from .beneath import Beneath

SCAN_BUDGET_S = 5.0  # a walk (or refresh) that takes longer leaves the snapshot incomplete

DIR, FILE, LINK, OTHER = "d", "f", "l", "o"


@dataclass(frozen=True, eq=False)
class Dir:
    """One directory's entries, as listed at `key` = (dev, inode, mtime_ns, ctime_ns)."""

    key: tuple[int, int, int, int]
    names: tuple[str, ...]
    kinds: str  # one of DIR FILE LINK OTHER per name
    inos: array  # inode number of each entry (d_ino)
    subdirs: tuple[str, ...]  # the names that are directories (not symlinks to one)

    @property
    def dev(self) -> int:
        return self.key[0]


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The tree under `root` at one refresh: `dirs` maps a directory's path relative to the root
    ("" for the root itself, `/`-separated) to its entries. `complete` is False when the walk
    ran out of time (`reason` says how far it got); the directories it did reach are exact."""

    root: Path
    dirs: dict[str, Dir]
    complete: bool
    reason: str | None = None
    taken: float = 0.0  # time.monotonic() when it was taken

    @property
    def entries(self) -> int:
        return sum(len(d.names) for d in self.dirs.values())

    def path(self, rel: str, name: str | None = None) -> Path:
        p = self.root / rel if rel else self.root
        return p / name if name is not None else p


def _key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def _kind(e: os.DirEntry) -> str:
    try:
        if e.is_symlink():
            return LINK
        if e.is_dir(follow_symlinks=False):
            return DIR
        if e.is_file(follow_symlinks=False):
            return FILE
    except OSError:
        pass
    return OTHER


class TreeScan:
    """The kept walk of one root. `snapshot(max_age)` refreshes when the last one is older."""

    def __init__(self, root: Path, budget_s: float = SCAN_BUDGET_S):
        self.root = Path(root)
        self.budget_s = budget_s
        self._beneath = Beneath((self.root,))
        self._lock = threading.Lock()
        self._last: Snapshot | None = None
        self._kept: dict[str, Dir] = {}  # the directories of the last complete walk
        self._pending: tuple[dict[str, Dir], list[str]] | None = None  # a walk cut short: (reached, to visit)

    def snapshot(self, max_age: float = 0.0) -> Snapshot:
        """The tree now, or as of at most `max_age` seconds ago."""
        with self._lock:
            last = self._last
            if last is not None and time.monotonic() - last.taken <= max_age:
                return last
            self._last = self._refresh()
            return self._last

    def _list(self, rel: str) -> Dir | None:
        path = self.root / rel if rel else self.root
        try:
            fd = self._beneath.open_dir(path)
        except OSError:
            return None  # gone, or replaced by a symlink or a file: not a directory of the tree
        try:
            st = os.fstat(fd)
            names: list[str] = []
            kinds: list[str] = []
            inos = array("Q")
            with os.scandir(fd) as it:
                for e in it:
                    names.append(e.name)
                    kinds.append(_kind(e))
                    inos.append(e.inode())
            kinds_text = "".join(kinds)
            subdirs = tuple(n for n, k in zip(names, kinds_text) if k == DIR)
            return Dir(_key(st), tuple(names), kinds_text, inos, subdirs)
        except OSError:
            return None
        finally:
            os.close(fd)

    def _refresh(self) -> Snapshot:
        kept = self._kept
        deadline = time.monotonic() + self.budget_s
        # A walk cut short last time goes on where it stopped, so a tree too big for one budget
        # completes over a few refreshes instead of never.
        dirs, stack = self._pending if self._pending is not None else ({}, [""])
        self._pending = None
        while stack:
            if time.monotonic() > deadline:
                self._pending = (dirs, stack)
                seen = sum(len(d.names) for d in dirs.values())
                return Snapshot(self.root, dict(dirs), False,
                                f"the walk of {self.root} took longer than {self.budget_s:g} s "
                                f"({len(dirs):,} directories and {seen:,} entries so far)", time.monotonic())
            rel = stack.pop()
            old = kept.get(rel)
            d = None
            if old is not None:
                try:
                    st = os.stat(self.root / rel if rel else self.root, follow_symlinks=False)
                except OSError:
                    st = None
                if st is not None and stat_mod.S_ISDIR(st.st_mode) and _key(st) == old.key:
                    d = old  # unchanged: its entries are as listed
            if d is None:
                d = self._list(rel)
                if d is None:
                    continue
            dirs[rel] = d
            prefix = rel + "/" if rel else ""
            stack.extend(prefix + n for n in d.subdirs)
        self._kept = dirs
        return Snapshot(self.root, dirs, True, None, time.monotonic())


SHARED_ROOTS = 64  # walks kept at most (a long-running server may see many workspaces)
_shared: OrderedDict[Path, TreeScan] = OrderedDict()
_shared_lock = threading.Lock()


def shared(root: Path) -> TreeScan:
    """The one TreeScan of `root` in this process (every session and consumer shares it)."""
    root = Path(root)
    with _shared_lock:
        scan = _shared.get(root)
        if scan is None:
            scan = _shared[root] = TreeScan(root, SCAN_BUDGET_S)
            while len(_shared) > SHARED_ROOTS:
                _shared.popitem(last=False)
        else:
            _shared.move_to_end(root)
        return scan
