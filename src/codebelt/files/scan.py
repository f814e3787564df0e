"""One walk of a workspace tree, shared by everything that protects paths in it.

The read-only jail masks the files a Read deny rule covers (and hard links to them), and the
write sandbox re-binds nested `.git`, `.claude`, `.codebelt` and `.env*` read-only. Both need
the whole tree: a walk that stops after N entries leaves a deep `.env` or `sub/.git/hooks` open
without saying so. So there is one walk per root (`shared(root)`), kept per directory:

- each directory is watched (inotify, through the descriptor it is listed from) before its
  entries (names, kinds, inode numbers from `getdents`) are listed; a refresh reads the queue and
  lists again only the directories with an event — a new subdirectory walked whole, one gone
  dropped with everything below it. The kernel queues the event with the change, so a refresh
  after a command has ended sees all it did, at a cost in proportion to what changed
  (`files/inotify.py`: one queue per process; lost events make a whole walk);
- where a tree cannot be watched (a file system whose changes need not pass through this
  kernel, the per-user watch limit, a forked child sharing its parent's queue) a refresh
  `lstat`s every known directory and lists again those whose (dev, inode, mtime, ctime) changed
  — adding, removing or renaming an entry changes the directory's mtime and ctime, and ctime
  cannot be set back (`touch -d` moves it forward); a directory listed within a tick of the
  coarse clock that stamps them (`RACY_NS`) is listed again, since a change in the same tick
  after the listing would leave its key as it was;
- directories are listed through a descriptor opened beneath the root without following
  symlinks (`files.beneath`), so a directory swapped for a symlink is never listed through it;
- a walk is bounded in time (`budget_s`). Past it the snapshot is marked incomplete with the
  reason, and callers refuse what depends on it (the command asks) instead of trusting a partial
  answer; the next refresh goes on where the walk stopped, so a big tree completes over a few
  refreshes.

Consumers derive their own answers from a `Snapshot`: an unchanged directory keeps the same `Dir`
object across refreshes, and `PerDirectory` keeps a value per directory brought up to date from
the directories that changed since it last looked.
"""

from __future__ import annotations

import itertools
import os
import stat as stat_mod
import sys
import threading
import time
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PosixPath

from . import inotify
from .beneath import Beneath

SCAN_BUDGET_S = 5.0  # a walk (or refresh) that takes longer leaves the snapshot incomplete
# The kernel stamps a directory's times from a coarse clock (one tick: 1-10 ms): a directory
# changed within this long of its listing may change again without its key changing.
RACY_NS = 50_000_000

DIR, FILE, LINK, OTHER = "d", "f", "l", "o"


@dataclass(frozen=True, eq=False)
class Dir:
    """One directory's entries, as listed at `key` = (dev, inode, mtime_ns, ctime_ns)."""

    key: tuple[int, int, int, int]
    names: tuple[str, ...]
    kinds: str  # one of DIR FILE LINK OTHER per name
    inos: array  # inode number of each entry (d_ino)
    subdirs: tuple[str, ...]  # the names that are directories (not symlinks to one)
    racy: bool = False  # listed within a clock tick of its last change: its key cannot vouch for it

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
    # (the walk's token, this snapshot's number): `PerDirectory` keeps its values per walk
    lineage: tuple[int, int] = (0, 0)
    # the directories whose record differs from the last complete snapshot's (listed again,
    # made, gone); None: not known (a whole walk)
    changed: "frozenset[str] | None" = None

    @property
    def entries(self) -> int:
        return sum(len(d.names) for d in self.dirs.values())

    def path(self, rel: str, name: str | None = None) -> Path:
        p = self.root / rel if rel else self.root
        return p / name if name is not None else p


class Found(PosixPath):
    """A path as a walk found it, with `found_in`: (st_dev, st_ino) of the directory it was
    listed in (the fstat of the descriptor the listing was read through). Whoever mounts
    something at the path later can check that the directory now at its parent is that one: a
    directory swapped in since the walk is then told from the one the walk saw. A plain Path
    everywhere else; a path derived from it (`parent`, `/`) carries no identity."""

    __slots__ = ("found_in",)

    def __new__(cls, *segments: "str | os.PathLike[str]", found_in: "tuple[int, int] | None" = None):
        self = super().__new__(cls, *segments)
        if found_in is not None:
            self.found_in = found_in
        return self

    if sys.version_info >= (3, 12):  # paths take their segments in __init__ there
        def __init__(self, *segments: "str | os.PathLike[str]", found_in: "tuple[int, int] | None" = None):
            super().__init__(*segments)


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
    """The kept walk of one root. `snapshot(max_age)` refreshes when the last one is older:
    from the inotify queue of the tree's directories where every one is watched (only the
    directories with an event are listed again), else by directory keys."""

    def __init__(self, root: Path, budget_s: float = SCAN_BUDGET_S):
        self.root = Path(root)
        self.budget_s = budget_s
        self._beneath = Beneath((self.root,))
        self._lock = threading.Lock()
        self._last: Snapshot | None = None
        self._kept: dict[str, Dir] = {}  # the directories of the last complete walk
        self._pending: tuple[dict[str, Dir], list[str]] | None = None  # a walk cut short: (reached, to visit)
        self._watcher: inotify.Watcher | None = None
        self._watching = False  # every directory of _kept was listed after its watch was added
        self._by_keys = False  # inotify does not work for this tree (or this is a forked child)
        self._wd_rels: dict[int, set[str]] = {}  # watch -> the directories (relative) it watches
        self._rel_wd: dict[str, int] = {}
        self._token = next(_TOKENS)
        self._number = 0  # of the last snapshot made
        self._kept_number = -1  # of the snapshot whose directories are _kept
        self._touched: set[str] = set()  # directories whose record changed in this refresh
        # number of a complete snapshot -> (its base, its changed directories), the last few
        self._history: OrderedDict[int, tuple[int, "frozenset[str] | None"]] = OrderedDict()
        _SCANS[self._token] = self

    def snapshot(self, max_age: float = 0.0) -> Snapshot:
        """The tree now, or as of at most `max_age` seconds ago."""
        with self._lock:
            last = self._last
            if last is not None and time.monotonic() - last.taken <= max_age:
                return last
            if self._watcher is not None and not self._watcher.mine:
                # a forked child shares its parent's queue: reading it would take the parent's
                # events. It goes on by keys from the listings it inherited.
                self._watcher = None
                self._watching, self._by_keys = False, True
                self._wd_rels, self._rel_wd = {}, {}
            self._last = self._refresh() if self._by_keys else self._refresh_watched()
            return self._last

    def _list(self, rel: str, watch: bool = False) -> Dir | None:
        path = self.root / rel if rel else self.root
        try:
            fd = self._beneath.open_dir(path)
        except OSError:
            return None  # gone, or replaced by a symlink or a file: not a directory of the tree
        try:
            if watch:
                if len(self._rel_wd) >= inotify.watch_budget():
                    raise inotify.Unwatchable(f"{self.root}: more directories than this process watches")
                # the very directory opened (not whatever its path names a moment later), and
                # before it is listed: a change after the listing queues an event
                wd = self._watcher.watch(f"/proc/self/fd/{fd}") if self._watcher is not None else None
                if wd is None:
                    return None
                was = self._rel_wd.get(rel)
                if was is not None and was != wd:  # another directory at this path before
                    self._wd_rels.get(was, set()).discard(rel)
                self._wd_rels.setdefault(wd, set()).add(rel)
                self._rel_wd[rel] = wd
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
            # listed within a tick of the coarse clock that stamps directories: a change in the
            # same tick after the listing would leave the key as it is (the racy-git case)
            racy = time.time_ns() - st.st_ctime_ns < RACY_NS
            return Dir(_key(st), tuple(names), kinds_text, inos, subdirs, racy)
        except inotify.Unwatchable:
            raise  # the caller goes on by keys
        except OSError:
            return None
        finally:
            os.close(fd)

    def _refresh(self) -> Snapshot:
        """A walk by keys: each known directory `lstat`ed, listed again when its key changed."""
        kept = self._kept

        def by_key(rel: str) -> Dir | None:
            old = kept.get(rel)
            if old is not None and not old.racy:
                try:
                    st = os.stat(self.root / rel if rel else self.root, follow_symlinks=False)
                except OSError:
                    st = None
                if st is not None and stat_mod.S_ISDIR(st.st_mode) and _key(st) == old.key:
                    return old  # unchanged: its entries are as listed
            return self._list(rel)

        return self._walk(by_key)

    def _walk(self, list_dir: "Callable[[str], Dir | None]") -> Snapshot:
        """The whole tree, a directory at a time by `list_dir`, within the time budget. A walk
        cut short last time goes on where it stopped, so a tree too big for one budget completes
        over a few refreshes instead of never."""
        deadline = time.monotonic() + self.budget_s
        dirs, stack = self._pending if self._pending is not None else ({}, [""])
        self._pending = None
        while stack:
            if time.monotonic() > deadline:
                return self._cut_short(dirs, stack)
            rel = stack.pop()
            d = list_dir(rel)
            if d is None:
                continue
            dirs[rel] = d
            prefix = rel + "/" if rel else ""
            stack.extend(prefix + n for n in d.subdirs)
        self._kept = dirs
        return self._made(dirs, True)

    def _cut_short(self, dirs: dict[str, Dir], stack: list[str]) -> Snapshot:
        self._pending = (dirs, stack)
        seen = sum(len(d.names) for d in dirs.values())
        return self._made(dict(dirs), False, f"the walk of {self.root} took longer than {self.budget_s:g} s "
                          f"({len(dirs):,} directories and {seen:,} entries so far)")

    def _made(self, dirs: dict[str, Dir], complete: bool, reason: str | None = None,
              changed: "frozenset[str] | None" = None) -> Snapshot:
        """The next snapshot; `changed` (from the last complete one) when only those differ."""
        self._number += 1
        base = self._kept_number if changed is not None else -1
        if complete:
            self._kept_number = self._number
            self._history[self._number] = (base, changed)
            while len(self._history) > HISTORY:
                self._history.popitem(last=False)
        return Snapshot(self.root, dirs, complete, reason, time.monotonic(), (self._token, self._number), changed)

    # -- refreshed from the inotify queue --------------------------------------------------------
    def _refresh_watched(self) -> Snapshot:
        try:
            if self._watcher is None:
                self._watcher = inotify.Watcher()
            if not self._watching:
                snap = self._walk_watched()
                if not snap.complete or not self._watching:
                    return snap
            return self._from_events()
        except inotify.Unwatchable:
            # the watch limit, a directory on a file system that changes without events here:
            # by keys from now on, from the listings made so far
            self._stop_watching()
            self._by_keys = True
            self._pending = None
            return self._refresh()

    def _walk_watched(self) -> Snapshot:
        """A whole walk, each directory watched before it is listed (resumed if cut short)."""
        snap = self._walk(lambda rel: self._list(rel, watch=True))
        # a root that is not there yet is walked again each time
        self._watching = snap.complete and "" in snap.dirs
        return snap

    def _from_events(self) -> Snapshot:
        """The directories with a queued event listed again (a new subdirectory walked, one gone
        dropped with what was below it); the last snapshot's listings for the rest."""
        assert self._watcher is not None
        deadline = time.monotonic() + self.budget_s
        dirs: dict[str, Dir] | None = None
        self._touched = set()
        while True:  # until the queue is empty: listing may meet changes made meanwhile
            dirty: set[str] = set()
            for wd, mask in self._watcher.events():
                if mask & inotify.IN_Q_OVERFLOW:
                    return self._restart()
                dirty.update(self._wd_rels.get(wd, ()))
                if mask & inotify.IN_IGNORED:
                    for rel in self._wd_rels.pop(wd, ()):
                        if self._rel_wd.get(rel) == wd:
                            del self._rel_wd[rel]
            if not dirty:
                break
            if dirs is None:
                dirs = dict(self._kept)  # a snapshot handed out is never changed
            for rel in sorted(dirty, key=lambda r: (r.count("/"), r) if r else (-1, r)):
                if time.monotonic() > deadline:
                    return self._restart()
                if rel in dirs:  # else gone with its parent, or walked anew with it
                    self._relist(dirs, rel)
        if dirs is None:  # nothing changed: the same listings
            dirs = self._kept
        self._kept = dirs
        return self._made(dirs, True, changed=frozenset(self._touched))

    def _relist(self, dirs: dict[str, Dir], rel: str) -> None:
        old = dirs[rel]
        new = self._list(rel, watch=True)
        if new is None:
            self._drop(dirs, rel)
            return
        dirs[rel] = new
        self._touched.add(rel)
        before = _subdir_inodes(old)
        after = _subdir_inodes(new)
        prefix = rel + "/" if rel else ""
        for name, ino in before.items():
            if after.get(name) != ino:  # removed, renamed away or replaced: what was below goes
                self._drop(dirs, prefix + name)
        for name, ino in after.items():
            # made, moved in or replaced: walked whole; and one the same as in the last listing
            # that is not in the view (moved away and back while an earlier relisting walked
            # it: that walk found nothing at its name)
            if before.get(name) != ino or prefix + name not in dirs:
                stack = [prefix + name]
                while stack:
                    sub = stack.pop()
                    d = self._list(sub, watch=True)
                    if d is None:
                        continue
                    dirs[sub] = d
                    self._touched.add(sub)
                    stack.extend(f"{sub}/{n}" for n in d.subdirs)

    def _drop(self, dirs: dict[str, Dir], rel: str) -> None:
        """`rel` and everything below it out of the view, their watches with them (a watch still
        naming another path — the directory was moved there — stays)."""
        below = rel + "/"
        for gone in [r for r in dirs if r == rel or r.startswith(below)]:
            del dirs[gone]
            self._touched.add(gone)
            wd = self._rel_wd.pop(gone, None)
            if wd is None:
                continue
            rels = self._wd_rels.get(wd)
            if rels is not None:
                rels.discard(gone)
                if not rels:
                    del self._wd_rels[wd]
                    if self._watcher is not None:
                        self._watcher.unwatch(wd)

    def _restart(self) -> Snapshot:
        """Events lost, or too much changed for one refresh: a new watcher and a whole walk."""
        self._stop_watching()
        self._pending = None
        return self._refresh_watched()

    def changed_between(self, older: int, newer: int) -> "frozenset[str] | None":
        """The directories whose record differs between complete snapshots `older` and `newer`
        of this walk (None: not known — a whole walk between them, or too long ago)."""
        with self._lock:
            out: set[str] = set()
            at = newer
            while at != older:
                entry = self._history.get(at)
                if entry is None or entry[1] is None or entry[0] < older:
                    return None
                out |= entry[1]
                at = entry[0]
            return frozenset(out)

    def close(self) -> None:
        """Its watches let go (it is no longer one of the shared walks)."""
        with self._lock:
            self._stop_watching()
            self._by_keys = True

    def _stop_watching(self) -> None:
        if self._watcher is not None:
            self._watcher.close()  # its watches let go (nothing, in a forked child)
        self._watcher = None
        self._watching = False
        self._wd_rels, self._rel_wd = {}, {}


_TOKENS = itertools.count(1)
_SCANS: "weakref.WeakValueDictionary[int, TreeScan]" = weakref.WeakValueDictionary()
HISTORY = 64  # complete snapshots whose changes are kept, for values derived from older ones


class PerDirectory:
    """Values derived from each directory of a tree (`value(snap, rel, dir)`: a tuple, empty for
    most directories), kept per walk and brought up to date from a snapshot's changed
    directories alone when it was made from the one they were last worked out for — a
    consumer looking for a few names among tens of thousands of directories then pays for what
    changed. `of(snap)`: rel -> its non-empty value (not to be changed by the caller)."""

    def __init__(self, value: "Callable[[Snapshot, str, Dir], tuple]", walks: int = 64):
        self._value = value
        self._walks = walks
        self._lock = threading.Lock()
        self._state: OrderedDict[int, tuple[int, dict[str, tuple]]] = OrderedDict()

    def of(self, snap: Snapshot) -> dict[str, tuple]:
        token, number = snap.lineage
        with self._lock:
            state = self._state.get(token) if token else None
            if state is not None and state[0] == number:
                return state[1]
            scan = _SCANS.get(token) if state is not None and snap.complete else None
            changed = scan.changed_between(state[0], number) if scan is not None else None
            if changed is not None:
                parts = dict(state[1])
                for rel in changed:
                    d = snap.dirs.get(rel)
                    v = self._value(snap, rel, d) if d is not None else ()
                    if v:
                        parts[rel] = v
                    else:
                        parts.pop(rel, None)
            else:
                parts = {}
                for rel, d in snap.dirs.items():
                    v = self._value(snap, rel, d)
                    if v:
                        parts[rel] = v
            if token:
                self._state[token] = (number, parts)
                self._state.move_to_end(token)
                while len(self._state) > self._walks:
                    self._state.popitem(last=False)
            return parts


def _subdir_inodes(d: Dir) -> dict[str, int]:
    return {n: ino for n, k, ino in zip(d.names, d.kinds, d.inos) if k == DIR}


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
                _shared.popitem(last=False)[1].close()
        else:
            _shared.move_to_end(root)
        return scan
