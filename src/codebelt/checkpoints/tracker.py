"""The tracked state of the writable roots, and what changed in them since the last look.

`Tracker.start()` lists the roots once and keeps every file's content in the store (hashing
only files whose stat identity changed since the manifest last saw them): the baseline a Bash
command's pre-images come from, since nobody knows beforehand which files a command will
touch. `sync()` then returns the changes since the previous call, looking only at the paths the
journal (inotify) names — time in proportion to what changed — or, without a journal, by listing
the roots again (time in proportion to the tree: the fallback). `.git` directories are never
tracked: codebelt never writes into a repository's own files.
"""

from __future__ import annotations

import os
import stat as stat_mod
from dataclasses import dataclass
from typing import Callable, Iterable

from . import journal as journal_mod
from .entries import ABSENT, DIR, FILE, LINK, NOTHING, OTHER, Entry, kind_of, lstat, stat_key
from .manifest import Manifest
from .records import Change
from .store import ObjectStore, TooLarge, Unreadable


@dataclass
class Budget:
    """How many bytes one checkpoint may add to the store; past it, contents are not kept."""

    limit: int | None
    used: int = 0
    why: str = "the call changed more than its cap (setting checkpoints.maxCallMB)"

    def allows(self, size: int) -> bool:
        return self.limit is None or self.used + size <= self.limit


class TooManyEntries(Exception):
    pass


class Tracker:
    def __init__(self, roots: Iterable[str], store: ObjectStore, manifests: dict[str, Manifest], *,
                 file_limit: int | None, max_entries: int, skip: Callable[[str], bool] = lambda p: False,
                 use_journal: bool = True):
        self.roots = [os.path.realpath(r) for r in roots]
        self.store = store
        self.manifests = manifests
        self.file_limit = file_limit
        self.max_entries = max_entries
        self._skip = skip
        self.entries: dict[str, Entry] = {}
        self.journal: journal_mod.Journal | None = None
        self.mode = "off"
        self.reason = "not started"
        self._use_journal = use_journal

    # -- paths -----------------------------------------------------------------------------
    def tracks(self, path: str) -> bool:
        """Whether `path` is under a root and not in a `.git` (or another skipped place)."""
        for root in self.roots:
            if path == root or path.startswith(root + "/"):
                rel = path[len(root) + 1:]
                return ".git" not in rel.split("/") and not self._skip(path)
        return False

    # -- start -----------------------------------------------------------------------------
    def start(self, budget: Budget | None = None) -> None:
        """List the roots and keep every file (within `budget`: past it, contents are recorded
        as not kept, and a command that changes them cannot be rewound for them)."""
        if self._use_journal:
            ok, why = journal_mod.available()
            if ok:
                try:
                    self.journal = journal_mod.Journal()
                except OSError as e:
                    why = str(e)
            if self.journal is None:
                self.reason = f"scanning each time ({why})"
        try:
            with self.store.batch():
                for root in self.roots:
                    st = lstat(root)
                    if st is None or not stat_mod.S_ISDIR(st.st_mode):
                        continue
                    self.entries[root] = Entry(DIR, stat_mod.S_IMODE(st.st_mode), key=stat_key(st))
                    self._walk(root, None, budget or Budget(None), {})
        except TooManyEntries:
            self.entries.clear()
            self._close_journal()
            self.mode = "off"
            self.reason = (f"the writable roots hold more than {self.max_entries} entries "
                           "(setting checkpoints.maxFiles): what Bash commands change is not kept")
            return
        if self.journal is not None and self.mode != "scan":
            self.mode, self.reason = "journal", f"inotify on {self.journal.watched} directories"
        elif self.mode != "scan":
            self.mode = "scan"
        self.save_manifest()

    def _watch(self, directory: str) -> None:
        if self.journal is not None and not self.journal.add(directory):
            self._close_journal()
            self.mode = "scan"
            self.reason = ("scanning each time: the inotify watch limit is reached "
                           "(sysctl fs.inotify.max_user_watches)")

    def _close_journal(self) -> None:
        if self.journal is not None:
            self.journal.close()
            self.journal = None

    # -- reading one path ------------------------------------------------------------------
    def _entry(self, path: str, st: os.stat_result, old: Entry | None, budget: Budget) -> Entry:
        kind = kind_of(st)
        mode = stat_mod.S_IMODE(st.st_mode)
        key = stat_key(st)
        if kind == FILE:
            if old is not None and old.kind == FILE and old.key == key and old.mode == mode:
                return old
            root = self._root_of(path)
            known = self.manifests[root].hash_for(path, key) if root in self.manifests else None
            if known is not None and self.store.has(known):
                return Entry(FILE, mode, known, st.st_size, key=key)
            return self._keep(path, st, mode, key, budget)
        if kind == LINK:
            try:
                target = os.readlink(path)
            except OSError:
                target = None
            return Entry(LINK, 0, target=target, key=key)
        if kind == DIR:
            if old is not None and old.kind == DIR and old.mode == mode and old.key and old.key[1] == st.st_ino:
                return old  # its mtime moves with every entry made or removed in it: not a change
            return Entry(DIR, mode, key=key)
        return Entry(OTHER, mode, key=key)

    def _keep(self, path: str, st: os.stat_result, mode: int, key, budget: Budget) -> Entry:
        if self.file_limit is not None and st.st_size > self.file_limit:
            return Entry(FILE, mode, None, st.st_size, lost=_over_file_limit(st.st_size, self.file_limit), key=key)
        if not budget.allows(st.st_size):
            return Entry(FILE, mode, None, st.st_size, key=key, lost=budget.why)
        try:
            digest, size = self.store.put_file(path, self.file_limit)
        except TooLarge as e:
            return Entry(FILE, mode, None, int(e.args[0]), lost=_over_file_limit(int(e.args[0]), self.file_limit or 0), key=key)
        except Unreadable as e:
            return Entry(FILE, mode, None, st.st_size, lost=f"unreadable: {e}", key=key)
        budget.used += size
        return Entry(FILE, mode, digest, size, key=key)

    def _root_of(self, path: str) -> str:
        for root in self.roots:
            if path == root or path.startswith(root + "/"):
                return root
        return ""

    # -- walking ---------------------------------------------------------------------------
    def _walk(self, top: str, changes: dict[str, Change] | None, budget: Budget, seen: dict[str, None]) -> None:
        """List `top` (a directory) and everything below, watching each directory first."""
        stack = [top]
        while stack:
            d = stack.pop()
            self._watch(d)
            try:
                it = os.scandir(d)
            except OSError:
                continue
            with it:
                for e in it:
                    if e.name == ".git":
                        continue
                    path = e.path
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    is_dir = stat_mod.S_ISDIR(st.st_mode)
                    if is_dir and self._skip(path):  # the store itself, when it lies in a root
                        continue
                    seen[path] = None
                    if len(self.entries) >= self.max_entries and path not in self.entries:
                        raise TooManyEntries()
                    self._update(path, st, changes, budget)
                    if is_dir:
                        stack.append(path)

    def _update(self, path: str, st: os.stat_result | None, changes: dict[str, Change] | None, budget: Budget) -> Entry:
        old = self.entries.get(path)
        new = NOTHING if st is None else self._entry(path, st, old, budget)
        if new is old:
            return new  # unchanged (the common case of a rescan)
        if new.kind == ABSENT:
            self.entries.pop(path, None)
        else:
            self.entries[path] = new
        if changes is not None:
            _note(changes, path, old or NOTHING, new)
        return new

    # -- what changed ----------------------------------------------------------------------
    def sync(self, budget: Budget) -> list[Change]:
        """Every change since the previous sync (or start), and keep the new contents."""
        if self.mode == "off":
            return []
        changes: dict[str, Change] = {}
        with self.store.batch():
            if self.journal is not None:
                dirty, overflow = self.journal.drain()
                if overflow:
                    self._rescan(changes, budget)
                else:
                    for path in sorted(dirty):
                        self._refresh(path, changes, budget)
                if self.journal is None:  # the watch limit was reached while refreshing
                    self._rescan(changes, budget)
            else:
                self._rescan(changes, budget)
        return [c for c in changes.values() if changed(c)]

    def _refresh(self, path: str, changes: dict[str, Change], budget: Budget) -> None:
        if not self.tracks(path):
            return
        st = lstat(path)
        old = self.entries.get(path)
        if old is not None and old.kind == DIR and (st is None or not stat_mod.S_ISDIR(st.st_mode)
                                                     or (old.key and old.key[1] != st.st_ino)):
            self._drop_subtree(path, changes)  # deleted, replaced, or moved away
            old = None
        parent = os.path.dirname(path)
        if st is not None and parent not in self.entries and parent not in self.roots:
            return  # its directory is gone or untracked: the parent's own event covers it
        new = self._update(path, st, changes, budget)
        if new.kind == DIR and (old is None or old.kind != DIR
                                or (self.journal is not None and not self.journal.watches(path))):
            self._walk(path, changes, budget, {})  # a new directory: what is already in it

    def _drop_subtree(self, top: str, changes: dict[str, Change]) -> None:
        prefix = top + "/"
        for p in [p for p in self.entries if p.startswith(prefix)]:
            old = self.entries.pop(p)
            if old.kind == DIR and self.journal is not None:
                self.journal.remove(p)
            _note(changes, p, old, NOTHING)
        if self.journal is not None:
            self.journal.remove(top)

    def _rescan(self, changes: dict[str, Change], budget: Budget) -> None:
        seen: dict[str, None] = {}
        for root in self.roots:
            seen[root] = None
            st = lstat(root)
            if st is not None:
                self._update(root, st, changes, budget)
                self._walk(root, changes, budget, seen)
        for p in [p for p in self.entries if p not in seen]:
            _note(changes, p, self.entries.pop(p), NOTHING)

    # -- known paths (file tools) ----------------------------------------------------------
    def look(self, paths: Iterable[str], budget: Budget) -> dict[str, Entry]:
        """The current state of `paths`, contents kept (cheap when the tracker already holds a
        file unchanged)."""
        out = {}
        with self.store.batch():
            for p in paths:
                if os.path.realpath(os.path.dirname(p)) != os.path.dirname(p):
                    out[p] = Entry(OTHER, lost="a directory on its path is a symlink now")  # never read through it
                    continue
                st = lstat(p)
                if st is None:
                    out[p] = NOTHING
                    continue
                out[p] = self._entry(p, st, self.entries.get(p), budget)
                if self.tracks(p) and self.mode != "off":
                    self.entries[p] = out[p]
        return out

    # -- persistence -----------------------------------------------------------------------
    def save_manifest(self) -> None:
        for root, manifest in self.manifests.items():
            prefix = root + "/"
            current = {p: (e.key, e.hash) for p, e in self.entries.items()
                       if e.kind == FILE and e.hash and e.key and p.startswith(prefix)}
            manifest.save(current)  # type: ignore[arg-type]

    def close(self) -> None:
        self._close_journal()
        if self.mode != "off":
            try:
                self.save_manifest()
            except Exception:  # noqa: BLE001 - a lost manifest only costs the next session a rehash
                pass


def _note(changes: dict[str, Change], path: str, old: Entry, new: Entry) -> None:
    first = changes.get(path)
    changes[path] = Change(path, first.before if first else old, new)


def changed(c: Change) -> bool:
    """Whether a change changed anything (a file whose content was not kept, either side,
    changed when its stat identity did)."""
    b, a = c.before, c.after
    if b.kind == a.kind == FILE and (b.hash is None or a.hash is None):
        return b.key != a.key or b.mode != a.mode or b.hash != a.hash
    return not b.same_state(a)


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.0f} MB"


def _over_file_limit(size: int, limit: int) -> str:
    return f"{_mb(size)} is over the {_mb(limit)} a kept file may have (setting checkpoints.maxFileMB)"
