"""The tracked state of the writable roots, and what changed in them since the last look.

A Bash command's pre-images must exist before it runs, and nobody knows which files it will
touch: the tracker keeps a baseline of every file, built in two phases.

- **Watching** (`watch_all`): every directory is listed and watched (inotify), directories and
  symlinks recorded, files entered as placeholders. From here on every change is seen: this is
  what a command must wait for (a listing, without a stat of each file).
- **Filling** (`fill`): each file gets its pre-image — the content the manifest says an earlier
  session kept for the same stat identity; for a file git tracks and whose stat matches git's
  index entry, the blob id (the content is already in the repository: see `gitindex`);
  otherwise a copy in the store. It may run in the background, at a lower priority, while
  calls go on: a pre-image is only ever set from a look at the file taken while no event names
  it or a directory above it, so one set while a command runs is still what the file held
  before the command changed it. A file a command changes while it is still a placeholder is
  recorded with its earlier content "not kept" and why.

`sync()` then returns the changes since the previous call, looking only at the paths the
journal (inotify) names — time in proportion to what changed — or, without a journal, by listing
the roots again (the fallback, filled synchronously). `.git` directories are never tracked, and
directories `exclude` names (node_modules, .venv, build output git does not track) are watched
but their contents not kept: a change inside one is recorded against the directory, with a
count, as not kept.
"""

from __future__ import annotations

import ctypes
import os
import platform
import stat as stat_mod
import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Iterable

from . import gitindex, gitobjects
from . import journal as journal_mod
from .entries import (ABSENT, DEFERRED, DIR, FILE, LINK, NOTHING, OTHER, PENDING, PENDING_FILE, Entry, kind_of, lstat,  # noqa: F401
                      stat_key)
from .exclude import Exclusions
from .keeping import KeptState
from .manifest import Manifest
from .records import Change
from .store import ObjectStore, TooLarge, Unreadable

if TYPE_CHECKING:  # pragma: no cover
    from .gitindex import Index, Repo
    from .gitobjects import ObjectReader

GIT_PREFIX = "git:"
BATCH = 256  # files settled per hold of the lock while filling in the background
BACKGROUND_NICE = 10


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
                 use_journal: bool = True, exclude: Iterable[str] = (), use_git: bool = True,
                 lock: threading.RLock | None = None):
        self.roots = [os.path.realpath(r) for r in roots]
        self._prefixes = [(r, r.rstrip("/") + "/") for r in self.roots]
        self.store = store
        self.manifests = manifests
        self.file_limit = file_limit
        self.max_entries = max_entries
        self._skip = skip
        self.lock = lock or threading.RLock()
        self.entries: dict[str, Entry] = {}
        self.journal: journal_mod.Journal | None = None
        self.mode = "off"
        self.reason = "not started"
        self._use_journal = use_journal
        self._patterns = tuple(exclude)
        self._use_git = use_git
        self.git: dict[str, tuple[Repo, Index]] = {}  # root → the repository holding it, and its index
        self.git_note = ""
        self._readers: dict[str, ObjectReader] = {}  # root → the repository's objects, opened on first use
        self.exclusions = Exclusions(())
        self.excluded: dict[str, list[int]] = {}  # left-out directory → [entries in it, paths changed since the last sync]
        self._todo: list[str] = []
        self.watched = threading.Event()  # every directory watched (or tracking off): commands may run
        self.filled = threading.Event()  # every file's pre-image established (or given up)
        self.started_ns = 0
        self.stopping = False
        self.counts = {"manifest": 0, "git": 0, "copied": 0, "notKept": 0}
        self.overflows = 0  # inotify queue overflows met (each one a rescan)
        self.complete = False  # the fill ran to its end (not cut short by closing)
        self.manifest_saved = False
        # Adopted with every manifest as this state saved it: the entries the rows were made
        # from (the manifest is then answered and updated from them, never read whole).
        self._manifest_base: dict[str, Entry] | None = None

    # -- paths -----------------------------------------------------------------------------
    def tracks(self, path: str) -> bool:
        """Whether `path` is under a root, not in a `.git` (or another skipped place), and not
        inside a left-out directory."""
        for root in self.roots:
            if path == root or path.startswith(root + "/"):
                rel = path[len(root) + 1:]
                if ".git" in rel.split("/") or self._skip(path):
                    return False
                return self._excluded_top(path) in (None, path)
        return False

    def _excluded_top(self, path: str) -> str | None:
        if not self.excluded:
            return None
        p = path
        while True:
            if p in self.excluded:
                return p
            parent = os.path.dirname(p)
            if parent == p or p in self.roots:
                return None
            p = parent

    def _root_of(self, path: str) -> str:
        for root, prefix in self._prefixes:
            if path.startswith(prefix) or path == root:
                return root
        return ""

    # -- starting --------------------------------------------------------------------------
    def start(self, budget: Budget | None = None) -> None:
        """Both phases, now (the caller waits for the whole baseline)."""
        self.watch_all()
        self.fill(budget or Budget(None))

    def watch_all(self) -> None:
        """List and watch every directory; files become placeholders for `fill`."""
        self.started_ns = time.time_ns()
        if self._use_journal:
            ok, why = journal_mod.available()
            if ok:
                try:
                    self.journal = journal_mod.Journal()
                except OSError as e:
                    why = str(e)
            if self.journal is None:
                self.reason = f"scanning each time ({why})"
        self._load_git()
        self.exclusions = Exclusions(self._patterns, self._tracked_by_git)
        entries: dict[str, Entry] = {}
        self.entries = entries  # nothing else reads it until `watched` is set
        try:
            for root in self.roots:
                st = lstat(root)
                if st is None or not stat_mod.S_ISDIR(st.st_mode):
                    continue
                entries[root] = Entry(DIR, stat_mod.S_IMODE(st.st_mode), key=stat_key(st))
                self._walk(root, None, Budget(None), {}, placeholders=True)
        except TooManyEntries:
            self.entries = {}
            self._todo = []
            self.excluded.clear()
            self._close_journal()
            self.mode = "off"
            self.reason = (f"the writable roots hold more than {self.max_entries} entries "
                           "(setting checkpoints.maxFiles): what Bash commands change is not kept")
            self.watched.set()
            self.filled.set()
            return
        self._drop_converting_git()
        if self.journal is not None and self.mode != "scan":
            self.mode, self.reason = "journal", f"inotify on {self.journal.watched} directories"
        elif self.mode != "scan":
            self.mode = "scan"
        self.watched.set()

    # -- kept between processes ------------------------------------------------------------
    def adopt(self, kept: KeptState) -> bool:
        """Begin from a state an earlier process kept (see `keeping`) instead of walking: its
        watches, its queue of what changed since, its entries. Refused (False; the caller walks
        afresh and keeps the descriptor's fate in its hands) when a fresh walk would begin from
        something else: git's index now deciding differently which directories are left out, or
        the manifest no longer what the state saved (another process kept other contents)."""
        self.started_ns = kept.started_ns
        self.entries = dict(kept.entries)  # a copy: the keeper compares against what it gave
        self.excluded = {p: list(c) for p, c in kept.excluded.items()}
        self.overflows = kept.overflows
        self._load_git()  # afresh, as a walk would: the index and the configs may have changed
        self.exclusions = Exclusions(self._patterns, self._tracked_by_git)
        self._drop_converting_git()
        self.journal = journal_mod.Journal(kept.journal)
        if all(m.stamp == kept.stamps.get(r) for r, m in self.manifests.items()):
            self._manifest_base = kept.entries
        if not (self._exclusions_hold() and (self._manifest_base is not None
                                             or self._manifests_hold(self.journal.peek()))):
            self.journal.detach()  # the descriptor stays the caller's to close
            self.journal = None
            self.entries, self.excluded, self.git, self.git_note = {}, {}, {}, ""
            self._manifest_base = None
            return False
        self.mode, self.reason = "journal", f"inotify on {self.journal.watched} directories (kept between calls)"
        self.complete = True
        self.watched.set()
        self.filled.set()
        return True

    def keep(self) -> KeptState | None:
        """The state for the next process, the journal detached from this tracker (it reads no
        more; what happens next waits in the kernel's queue). None when there is nothing a
        next process could begin from: no journal (scanning, the watch limit reached, tracking
        off) or a baseline not finished."""
        if self.mode != "journal" or self.journal is None or not self.complete:
            return None
        with self.lock:
            detached = self.journal.detach()
            self.journal = None
            return KeptState(detached, self.entries, self.excluded, self.started_ns, {}, self.overflows)

    def _exclusions_hold(self) -> bool:
        """Every left-out directory still left out, and no kept directory now to be left out."""
        for root in self.roots:
            prefix = root + "/"
            for p in self.excluded:
                if p.startswith(prefix) and not self.exclusions.matches(p, p[len(prefix):]):
                    return False
            if self.exclusions:
                for p, e in self.entries.items():
                    if e.kind == DIR and p.startswith(prefix) and p not in self.excluded \
                            and self.exclusions.matches(p, p[len(prefix):]):
                        return False
        return True

    def _manifests_hold(self, dirty: set[str] | None) -> bool:
        """Each root's manifest is what this state saved last, but for paths that changed since
        (`dirty`, the journal's events not yet drained; None: events were lost): so every
        content the state names for a file it takes as unchanged is still in the store
        (collection keeps what a manifest names). Another process that saved other contents
        (copies it could not keep, say) makes the tracker walk afresh."""
        for root, manifest in self.manifests.items():
            ours, theirs = self._manifest_rows(root, manifest), manifest.saved_rows()
            if ours == theirs:
                continue
            if dirty is None:
                return False
            for p in ours.keys() | theirs.keys():
                if ours.get(p) != theirs.get(p) and not _dirty(p, dirty, root):
                    return False
        return True

    def _load_git(self) -> None:
        if not self._use_git:
            return
        notes = []
        for root in self.roots:
            try:
                repo = gitindex.find_repo(root)
                if repo is None:
                    continue
                if repo.why_not:
                    notes.append(f"git's objects not used for {root}: {repo.why_not}")
                    continue
                self.git[root] = (repo, gitindex.read_index(repo, self.max_entries))
            except (OSError, gitindex.IndexError_) as e:
                notes.append(f"git's index not used for {root}: {e}")
            except Exception as e:  # noqa: BLE001 - the repository may be hostile: unreadable means copies
                notes.append(f"git's index not used for {root}: {type(e).__name__}")
        self.git_note = "; ".join(notes)

    def _drop_converting_git(self) -> None:
        """A `.gitattributes` below the top that converts content (a filter, CRLF, `ident`)
        makes blobs differ from files: that root's files are copied, not named by blob."""
        for root in list(self.git):
            prefix = root + "/"
            for p in [p for p in self.entries if p.endswith("/.gitattributes") and p.startswith(prefix)]:
                try:
                    text = gitobjects.read_regular(p, 1 << 20)
                except OSError:
                    continue
                if gitindex.converts(text):
                    del self.git[root]
                    note = f"git's objects not used for {root}: {p} converts content on checkout"
                    self.git_note = "; ".join(filter(None, [self.git_note, note]))
                    break

    def _tracked_by_git(self, path: str) -> bool:
        hit = self.git.get(self._root_of(path))
        if hit is None:
            return False
        repo, index = hit
        rel = repo.prefix + path[len(self._root_of(path)) + 1:]
        return index.tracks_under(os.fsencode(rel))

    # -- filling ---------------------------------------------------------------------------
    def fill(self, budget: Budget, background: bool = False) -> None:
        """Give every placeholder its pre-image: known ones first (manifest, git), then copies.
        In the background, at a lower CPU and I/O priority, a batch at a time under the lock."""
        if background:
            _lower_priority()
        try:
            with self.lock:
                todo, self._todo = self._todo, []
            copies: list[str] = []
            for i in range(0, len(todo), BATCH):
                if self.stopping:
                    return
                found: list[tuple[str, Entry]] = []
                for p in todo[i:i + BATCH]:
                    st = lstat(p)
                    if st is None or not stat_mod.S_ISREG(st.st_mode):
                        continue  # gone or replaced since it was listed: an event says so
                    e = self._known(p, st)
                    if e is None:
                        copies.append(p)
                    else:
                        found.append((p, e))
                self._settle(found)
            for i in range(0, len(copies), BATCH):
                if self.stopping:
                    return
                found = []
                with self.store.batch():
                    for p in copies[i:i + BATCH]:
                        if self.entries.get(p) is not PENDING_FILE:
                            continue
                        st = lstat(p)
                        if st is None or not stat_mod.S_ISREG(st.st_mode):
                            continue
                        found.append((p, self._keep(p, st, stat_mod.S_IMODE(st.st_mode), stat_key(st), budget)))
                self._settle(found)
            self.complete = True
        finally:
            self.filled.set()

    def _settle(self, found: list[tuple[str, Entry]]) -> None:
        """Set pre-images looked at just now, unless the path (or a directory above it) changed
        since the last sync: then the look may have seen the change, and the sync decides."""
        if not found:
            return
        with self.lock:
            dirty = self.journal.peek() if self.journal is not None else set()
            if dirty is None:
                return  # events were lost: the next sync rescans
            for p, e in found:
                if self.entries.get(p) is not PENDING_FILE or _dirty(p, dirty, self._root_of(p)):
                    continue
                self.entries[p] = e
                self._count(e)

    def _count(self, e: Entry) -> None:
        if e.hash is None:
            self.counts["notKept"] += 1
        elif e.hash.startswith(GIT_PREFIX):
            self.counts["git"] += 1

    @property
    def pending(self) -> int:
        with self.lock:
            return sum(1 for e in self.entries.values() if e is PENDING_FILE)

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
    def _known(self, path: str, st: os.stat_result) -> Entry | None:
        """The pre-image of a file without reading it: the manifest's, or git's blob id."""
        key = stat_key(st)
        mode = stat_mod.S_IMODE(st.st_mode)
        root = self._root_of(path)
        if self._manifest_base is not None:  # what the manifest holds, without reading it whole
            was = self._manifest_base.get(path)
            row = _manifest_row(was) if was is not None and was is not PENDING_FILE else None
            known = row[1] if row is not None and row[0] == key else None
        else:
            manifest = self.manifests.get(root)
            known = manifest.hash_for(path, key) if manifest is not None else None
        if known is not None:
            self.counts["manifest"] += 1
            return Entry(FILE, mode, known, st.st_size, key=key)
        hit = self.git.get(root)
        if hit is not None:
            repo, index = hit
            blob = index.blob_for(os.fsencode(repo.prefix + path[len(root) + 1:]), st)
            if blob is not None:
                return Entry(FILE, mode, GIT_PREFIX + blob, st.st_size, key=key)
        return None

    def _entry(self, path: str, st: os.stat_result, old: Entry | None, budget: Budget,
               defer_at: int | None = None) -> Entry:
        kind = kind_of(st)
        mode = stat_mod.S_IMODE(st.st_mode)
        key = stat_key(st)
        if kind == FILE:
            if old is not None and old.kind == FILE and old.key == key and old.mode == mode:
                return old
            known = self._known(path, st)
            if known is not None:
                return known
            if defer_at is not None and st.st_size >= defer_at and budget.allows(st.st_size) \
                    and (self.file_limit is None or st.st_size <= self.file_limit):
                budget.used += st.st_size  # reserved: the copy is made after the call returns
                return Entry(FILE, mode, None, st.st_size, lost=f"{DEFERRED} ({os.urandom(6).hex()})", key=key)
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
        self.counts["copied"] += 1
        return Entry(FILE, mode, digest, size, key=key)

    def materialize(self, e: Entry, budget: Budget) -> Entry:
        """A pre-image named by a git blob id, read from the repository into the store (the
        checkpoint must not depend on the repository keeping the blob). Not kept if it cannot be
        read or is not the file's content (a filter or line-ending conversion)."""
        if e.kind != FILE or not e.hash or not e.hash.startswith(GIT_PREFIX):
            return e
        Missing, ObjectReader = gitobjects.Missing, gitobjects.ObjectReader
        limit = self.file_limit if self.file_limit is not None else 1 << 40
        why = "not in the repository"
        for root, (repo, _index) in self.git.items():
            reader = self._readers.get(root)
            if reader is None:
                reader = self._readers[root] = ObjectReader([repo.objects])
            try:  # at most the size the file had: a blob of any other size is not its content
                data = reader.blob(e.hash[len(GIT_PREFIX):], min(limit, e.size))
            except (Missing, OSError) as err:
                why = str(err)
                continue
            if len(data) != e.size:
                return replace(e, hash=None, lost="not kept: git's copy of it differs from the file "
                               "(a filter or line-ending conversion)")
            if not budget.allows(len(data)):
                return replace(e, hash=None, lost=budget.why)
            budget.used += len(data)
            return replace(e, hash=self.store.put_bytes(data))
        return replace(e, hash=None, lost=f"not kept: git's copy of it could not be read ({why})")

    def _excluded_entry(self, path: str, st: os.stat_result) -> Entry:
        count = self.excluded.get(path, [0, 0])[0]
        return Entry(DIR, stat_mod.S_IMODE(st.st_mode), size=count, key=stat_key(st),
                     lost=f"excluded from checkpoints (setting checkpoints.exclude): its contents "
                          f"(about {count:,} entries) are not kept")

    # -- walking ---------------------------------------------------------------------------
    def _walk(self, top: str, changes: dict[str, Change] | None, budget: Budget, seen: dict[str, None],
              placeholders: bool = False) -> None:
        """List `top` (a directory) and everything below, watching each directory first."""
        stack = [top]
        root = self._root_of(top)
        while stack:
            if self.stopping:
                raise TooManyEntries()  # closing: the baseline is not wanted any more
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
                    if placeholders and e.is_file(follow_symlinks=False):
                        if len(self.entries) >= self.max_entries:
                            raise TooManyEntries()
                        seen[path] = None
                        self.entries[path] = PENDING_FILE
                        self._todo.append(path)
                        continue
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
                    if is_dir and (path in self.excluded or
                                   (self.exclusions and self.exclusions.matches(path, path[len(root) + 1:]))):
                        self._enter_excluded(path, st, changes)
                        continue
                    self._update(path, st, changes, budget)
                    if is_dir:
                        stack.append(path)

    def _enter_excluded(self, path: str, st: os.stat_result, changes: dict[str, Change] | None) -> None:
        """A left-out directory: watched throughout (a change inside is seen), its entries
        counted, none of them kept."""
        known = path in self.excluded and self.entries.get(path) is not None
        if not known:
            self.excluded[path] = [0, 0]
            if self.journal is not None:
                self.excluded[path][0] = self._watch_tree(path)
            old = self.entries.get(path)
            new = self._excluded_entry(path, st)
            self.entries[path] = new
            if changes is not None:
                _note(changes, path, old or NOTHING, new)

    def _watch_tree(self, top: str) -> int:
        """Watch every directory below `top`; how many entries there are."""
        count = 0
        stack = [top]
        while stack and self.journal is not None:
            d = stack.pop()
            self._watch(d)
            try:
                with os.scandir(d) as it:
                    for e in it:
                        count += 1
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
            except OSError:
                continue
        return count

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
        with self.lock, self.store.batch():
            if self.journal is not None:
                dirty, overflow = self.journal.drain()
                if overflow:
                    self.overflows += 1
                    self._rescan(changes, budget)
                else:
                    for path in sorted(dirty):
                        self._refresh(path, changes, budget)
                if self.journal is None:  # the watch limit was reached while refreshing
                    self._rescan(changes, budget)
            else:
                self._rescan(changes, budget)
            out = [c for c in changes.values() if changed(c)]
            for top, counts in self.excluded.items():  # changes inside left-out directories
                if counts[1] and top not in changes:
                    e = self.entries.get(top)
                    if e is not None:
                        e = replace(e, lost=f"{counts[1]:,} path(s) changed inside; {e.lost}")
                        out.append(Change(top, e, e))
                counts[1] = 0
        return out

    def _refresh(self, path: str, changes: dict[str, Change], budget: Budget) -> None:
        if not self.tracks(path):
            top = self._excluded_top(path)
            if top is not None and top != path and self._root_of(path) and not self._skip(path):
                self.excluded[top][1] += 1
                st = lstat(path)
                if st is not None and stat_mod.S_ISDIR(st.st_mode) and self.journal is not None \
                        and not self.journal.watches(path):
                    self.excluded[top][0] += self._watch_tree(path)
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
        if st is not None and stat_mod.S_ISDIR(st.st_mode) and old is None and self.exclusions \
                and self.exclusions.matches(path, path[len(self._root_of(path)) + 1:]):
            self._enter_excluded(path, st, changes)
            return
        new = self._update(path, st, changes, budget)
        if new.kind == DIR and path not in self.excluded and (
                old is None or old.kind != DIR or (self.journal is not None and not self.journal.watches(path))):
            self._walk(path, changes, budget, {})  # a new directory: what is already in it

    def _drop_subtree(self, top: str, changes: dict[str, Change]) -> None:
        prefix = top + "/"
        for p in [p for p in self.entries if p.startswith(prefix)]:
            old = self.entries.pop(p)
            if old.kind == DIR and self.journal is not None:
                self.journal.remove(p)
            self.excluded.pop(p, None)
            _note(changes, p, old, NOTHING)
        self.excluded.pop(top, None)
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
            self.excluded.pop(p, None)
        # A placeholder whose file has not changed since the baseline began (its ctime, which
        # nothing can set back, is older) is unchanged: its pre-image is what it holds now.
        margin = self.started_ns - 2_000_000_000
        for p, c in list(changes.items()):
            if c.before is PENDING_FILE and c.after.kind == FILE and c.after.key and c.after.key[4] < margin:
                del changes[p]

    # -- known paths (file tools) ----------------------------------------------------------
    def look(self, paths: Iterable[str], budget: Budget, defer_at: int | None = None) -> dict[str, Entry]:
        """The current state of `paths`, contents kept (cheap when the tracker already holds a
        file unchanged) — a file of `defer_at` bytes or more only named by its stat identity,
        its content left for the caller to keep (see `deferred`)."""
        out = {}
        with self.lock, self.store.batch():
            for p in paths:
                if os.path.realpath(os.path.dirname(p)) != os.path.dirname(p):
                    out[p] = Entry(OTHER, lost="a directory on its path is a symlink now")  # never read through it
                    continue
                st = lstat(p)
                if st is None:
                    out[p] = NOTHING
                    continue
                out[p] = self._entry(p, st, self.entries.get(p), budget, defer_at)
                if self.tracks(p) and self.mode != "off" and self.watched.is_set():
                    self.entries[p] = out[p]
        return out

    # -- persistence -----------------------------------------------------------------------
    def save_manifest(self) -> None:
        base = self._manifest_base
        if base is None:
            for root, manifest in self.manifests.items():
                manifest.save(self._manifest_rows(root, manifest))  # type: ignore[arg-type]
            return
        # the rows are those of `base`: only the entries replaced since change them (in
        # proportion to what changed, not to the tree)
        upsert: dict[str, dict] = {r: {} for r in self.manifests}
        gone: dict[str, list[str]] = {r: [] for r in self.manifests}
        changed = [(p, e) for p, e in self.entries.items() if base.get(p) is not e]
        changed += [(p, None) for p in base if p not in self.entries]
        for p, e in changed:
            root = self._root_of(p)
            if root not in upsert or e is PENDING_FILE:
                continue
            row = _manifest_row(e) if e is not None else None
            was = base.get(p)
            if row is not None:
                upsert[root][p] = row
            elif was is not None and was is not PENDING_FILE and _manifest_row(was) is not None:
                gone[root].append(p)
        for root, manifest in self.manifests.items():
            manifest.update(upsert[root], gone[root])
        self._manifest_base = dict(self.entries)

    def _manifest_rows(self, root: str, manifest: Manifest) -> dict:
        prefix = root + "/"
        current = {p: (e.key, e.hash) for p, e in self.entries.items()
                   if e.kind == FILE and e.hash and e.key and not e.hash.startswith(GIT_PREFIX)
                   and p.startswith(prefix)}
        # a file the fill had not reached (a session closed early) keeps what was saved for
        # it: only its stat identity matching it again lets the next session use it
        current.update({p: manifest.saved[p] for p, e in self.entries.items()
                        if e is PENDING_FILE and p in manifest.saved and p not in current})
        return current

    def close(self) -> None:
        self.stopping = True
        with self.lock:
            self._close_journal()
            if self.mode != "off" and self.filled.is_set():
                try:
                    self.save_manifest()
                    self.manifest_saved = True
                except Exception:  # noqa: BLE001 - a lost manifest only costs the next session a rehash
                    pass
            for reader in self._readers.values():
                reader.close()
            self._readers.clear()


def _manifest_row(e: Entry) -> tuple | None:
    """What the manifest keeps of an entry: a file's stat identity and its content in the store."""
    if e.kind == FILE and e.hash and e.key and not e.hash.startswith(GIT_PREFIX):
        return (e.key, e.hash)
    return None


def _dirty(path: str, dirty: set[str], root: str) -> bool:
    if not dirty:
        return False
    p = path
    while len(p) > len(root):
        if p in dirty:
            return True
        p = os.path.dirname(p)
    return p in dirty


def _note(changes: dict[str, Change], path: str, old: Entry, new: Entry) -> None:
    first = changes.get(path)
    changes[path] = Change(path, first.before if first else old, new)


def changed(c: Change) -> bool:
    """Whether a change changed anything (a file whose content was not kept, either side,
    changed when its stat identity did)."""
    b, a = c.before, c.after
    if b.kind == a.kind == FILE and (b.hash is None or a.hash is None):
        return b.key != a.key or b.mode != a.mode or b.hash != a.hash
    if b.kind == a.kind == FILE and b.hash != a.hash and (b.hash or "").startswith(GIT_PREFIX):
        return b.key != a.key or b.mode != a.mode  # a blob id and a store hash of the same file
    return not b.same_state(a)


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.0f} MB"


def _over_file_limit(size: int, limit: int) -> str:
    return f"{_mb(size)} is over the {_mb(limit)} a kept file may have (setting checkpoints.maxFileMB)"


_IOPRIO_SET = {"x86_64": 251, "aarch64": 30, "riscv64": 30, "ppc64le": 273, "s390x": 282, "i686": 289}


def preload() -> None:
    """Load, in the calling thread, the libraries the background baseline calls: a thread that
    opens a library (dlopen, or ctypes.util running ldconfig) while another thread forks a
    command can leave the child — which runs Python between fork and exec, the sandbox's set-up
    — waiting on a lock that no thread of it will ever release."""
    journal_mod.available()
    _ioprio_libc()


_LIBC: list = []


def _ioprio_libc():
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]


def _lower_priority() -> None:
    """This thread only (Linux keeps nice and I/O priority per thread): nice +10 and the lowest
    best-effort I/O priority, so the baseline yields to the agent's own work."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE))
    except (OSError, AttributeError):
        pass
    nr = _IOPRIO_SET.get(platform.machine())
    libc = _ioprio_libc() if nr is not None else None
    if libc is not None:
        try:
            libc.syscall(nr, 1, threading.get_native_id(), (2 << 13) | 7)  # IOPRIO_WHO_PROCESS, class BE, level 7
        except (OSError, AttributeError):
            pass
