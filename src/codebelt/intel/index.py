"""A persistent, incremental tree-sitter index of a workspace: definitions and references by name.

The first query starts a background build; queries made meanwhile answer from what is indexed so
far and say so in `Answer.note`. `refresh()` re-parses only files whose (mtime_ns, size) changed
and forgets deleted ones. Every query is bounded by its `limit`.
"""

from __future__ import annotations

import bisect
import itertools
import os
import posixpath
import re
import sqlite3
import stat
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Protocol, TypeVar

from ..errors import IntelError, PositionError
from tree_sitter import Node

from .extract import FileFacts, extract
from .languages import grammar, language_for, parse
from .listing import Listing, list_from, list_with_ripgrep
from .model import Answer, Location, Symbol, name_tier
from .pool import INLINE_BELOW, Job, Outcome, Parser, parse_one
from .rows import unpack_spots
from .sources import SourceSkipped, read_source
from .store import Store

if TYPE_CHECKING:
    from ..search.ripgrep import Ripgrep

BACKEND = "tree-sitter"
DEFAULT_MAX_FILES = 20_000
COMMIT_EVERY = 0.5  # seconds between commits during a build: queries see progress this often
# A query refreshes the index first when a change was reported (`mark_stale`) or the last
# refresh began more than MAX_AGE seconds ago (files also change under background commands and
# other editors), and waits up to REFRESH_WAIT for it; past that it answers from what is
# indexed and says the index is still being built.
MAX_AGE = 1.0
REFRESH_WAIT = 2.0
# How long close() waits for a build to stop (it stops before its next file; one parse is
# bounded by the parse budget, a blocked one is left behind in its daemon thread).
CLOSE_WAIT = 5.0
KIND_ORDER = {"class": 0, "interface": 0, "struct": 0, "trait": 0, "enum": 1, "type": 1,
              "function": 2, "method": 2, "module": 3, "macro": 3, "constant": 4, "variable": 5,
              "field": 6}
MAX_TEXT_FILES = 200  # files read per answer to fill in Location.text
MAX_FUZZY = 64  # query characters used for the in-order (fuzzy) match
IDENTIFIER_TYPES = frozenset({"name", "constant", "word", "variable_name", "command_name"})
T = TypeVar("T")
MAX_FRESH = 32  # files an answer from the store reads from disk because their stored rows are out of date
LISTED_SLACK_NS = 1_000_000_000  # a file changed this close to a listing may have missed it
STAT_TURN = 512  # files stat'ed between two looks at whether the background build must pause


class Pausing(Protocol):
    """What a build in the background gives way to (a session's calls: `tool.CallsRunning`)."""

    def busy(self) -> bool: ...

    def wait(self, who: str, go: Callable[[], bool] | None = None) -> None: ...


@dataclass
class RefreshStats:
    listed: int = 0
    parsed: int = 0  # files (re)parsed this time
    removed: int = 0
    unchanged: int = 0
    failed: int = 0  # parsed files recorded without symbols (binary, too large, parse error)
    capped: bool = False
    seconds: float = 0.0


class _Names:
    """All distinct symbol names of one index generation, for substring search in memory."""

    def __init__(self, rows: list[tuple[str, int]]):
        self.names = [n for n, _ in rows]
        self.counts = [c for _, c in rows]
        lowered = [n.lower() for n in self.names]
        self.blob = "\n".join(lowered)
        self.starts: list[int] = []
        pos = 0
        for n in lowered:
            self.starts.append(pos)
            pos += len(n) + 1

    def matching(self, q: str) -> list[int]:
        found, seen = [], set()
        find, starts = self.blob.find, self.starts
        i = find(q)
        while i != -1:
            k = bisect.bisect_right(starts, i) - 1
            if k not in seen:
                seen.add(k)
                found.append(k)
            # the query holds no newline, so the next hit is in a later name
            i = find(q, starts[k + 1]) if k + 1 < len(starts) else -1
        return found


@dataclass
class _Reads:
    """What one answer computed from the stored index learnt about the files it asked for:
    whether each one's stored rows are the file as it is on disk (checked once, against the
    answer's snapshot of the database), the symbols of those read now instead, and whether it
    read beyond a list of files (a search by name over every file, a scan of every path), which
    only a full refresh can vouch for."""

    listed_at: int | None  # when the stored listing began (ns since the epoch); None: never
    current: dict[str, tuple[bool, bool]] = field(default_factory=dict)  # rel -> (current, indexed)
    fresh: dict[str, list[Symbol]] = field(default_factory=dict)
    everything: bool = False


class _RestsOnEverything(Exception):
    """Raised inside an answer computed from the store once it reads beyond a list of files:
    that answer would be thrown away, so it stops there instead of being computed in full
    before the refresh and again after it."""


class _SeenPaths:
    """The indexed paths as an answer from the store sees them: `in` answers for the path as it
    is on disk now; going through them all means the answer rests on every path."""

    def __init__(self, index: "CodeIndex", paths: frozenset[str]):
        self._index = index
        self._paths = paths

    def __contains__(self, rel: object) -> bool:
        return isinstance(rel, str) and self._index._present(rel)

    def __iter__(self):
        self._index._reading_everything()
        return iter(self._paths)

    def __len__(self) -> int:
        self._index._reading_everything()
        return len(self._paths)


class CodeIndex:
    def __init__(
        self,
        root: Path,
        cache_dir: Path,
        *,
        list_files: Callable[[], Iterable[Path]] | None = None,
        include: Callable[[Path], bool] | None = None,
        max_file_bytes: int = 1_000_000,
        max_files: int = DEFAULT_MAX_FILES,
        workers: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        rg: "str | Ripgrep | None" = None,
        max_age: float | None = MAX_AGE,
        pause: Pausing | None = None,
    ):
        """`pause`: the background build gives way to it between steps (its warm-up, the
        listing, each file or chunk parsed) unless a caller waits for the build (`wait`); a
        refresh a caller runs itself never pauses."""
        try:
            self.root = Path(root).resolve(strict=True)
        except OSError as e:
            raise IntelError(f"the workspace root {root} cannot be indexed: {e}") from e
        if not self.root.is_dir():
            raise IntelError(f"the workspace root {root} is not a directory")
        if max_files < 1 or max_file_bytes < 1:
            raise IntelError("max_files and max_file_bytes must be positive")
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self.progress = progress
        self._list_files = list_files
        self._include = include
        self._rg = rg
        self._store = Store(Path(cache_dir), self.root)
        self._parser = Parser(max_file_bytes, workers)
        self._build_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._building = False
        self._progress = (0, 0)
        self._capped = False
        self._build_error: str | None = None
        self._built_once = False
        self.max_age = max_age  # None: queries never refresh by themselves (the caller does)
        self._stale = False
        self._refreshed_at = 0.0  # monotonic time the last successful refresh began
        self.generation = 0  # bumped on every commit: caches keyed on it go stale
        self._names: tuple[int, _Names] | None = None
        self._paths: tuple[int, tuple[frozenset[str], dict[str, list[str]]]] | None = None
        self._go_mods: dict[str, tuple[int, tuple[str, str] | None]] = {}
        # data derived from the index by other modules (the repo map's graph), keyed by name,
        # stored with the generation it was computed at
        self.derived: dict[str, tuple[int, object]] = {}
        self.last_refresh: RefreshStats | None = None
        self._closed = False
        # a build (background or a caller's refresh) holding the store, and whether close()
        # left it to close the store when it stops
        self._builder_active = False
        self._close_when_built = False
        self._local = threading.local()  # .reads: what the answer being computed here reads
        self._pause = pause
        self._wanted = 0  # callers waiting for the build now: it pauses for nobody meanwhile

    # -- building --------------------------------------------------------------------------------

    def start(self) -> None:
        """Build or refresh in a background thread (no-op while one is running)."""
        self._check_open()
        with self._state_lock:
            if self._closed or self._thread is not None and self._thread.is_alive():
                return
            self._building = True
            self._thread = threading.Thread(target=self._background, name="codebelt-intel-index",
                                            daemon=True)
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """True once no build is running (False when `timeout` ran out first). A build waited
        for does not pause meanwhile."""
        t = self._thread
        if t is None:
            return True
        if timeout is not None and timeout <= 0:
            return not t.is_alive()
        with self._waiting_for_build():
            t.join(timeout)
        return not t.is_alive()

    # -- giving way: the background build pauses between steps while `pause` is busy ------------
    def _go(self) -> bool:
        return self._wanted > 0 or self._stop.is_set()

    def _paused_here(self) -> bool:
        return self._pause is not None and threading.current_thread() is self._thread

    def _held(self) -> bool:
        """Whether the background build should begin nothing new now."""
        return self._paused_here() and not self._go() and self._pause.busy()  # type: ignore[union-attr]

    def _wait_turn(self) -> None:
        """Return once the background build may go on (at once for a caller's own refresh)."""
        if self._paused_here():
            self._pause.wait("code index", self._go)  # type: ignore[union-attr]

    def _yielding(self) -> "_Turns | None":
        return _Turns(self) if self._paused_here() else None

    def _background(self) -> None:
        try:
            self._wait_turn()
            with self._build_lock:  # a close waits for the warm-up as for a build: both read the store
                if not self._closed:
                    self._warm_up()
            self.refresh()
        except Exception as e:  # reported through notes: a background thread has no caller
            self._build_error = f"{type(e).__name__}: {e}"
        finally:
            self._building = False

    def _warm_up(self) -> None:
        """Off the first query's path: load the grammars of the languages the stored index
        holds (the query parses the file under the cursor; loading the grammar package costs
        5-10 ms) and the table of paths (modules are looked up in it)."""
        try:
            languages = [r[0] for r in self._db().execute("SELECT DISTINCT language FROM files")]
            self._paths_table()
        except sqlite3.Error:
            return  # the refresh meets the same problem and reports it
        for language in languages:
            try:
                grammar(language)
            except Exception:  # noqa: BLE001 - the query that needs it reports the problem
                pass

    def mark_stale(self) -> None:
        """Files may have changed: the next query refreshes first (however recent the last
        refresh was)."""
        self._stale = True

    def _ensure_started(self) -> None:
        self._check_open()
        if getattr(self._local, "reads", None) is not None:
            return  # answering from what is stored; the disk is checked afterwards
        if not self._built_once and self._thread is None:
            self.start()
            return  # the first build: queries answer from what it has so far
        if self._refresh_due():
            self._stale = False  # a change reported from now on is seen by the next query
            self.start()
            self.wait(REFRESH_WAIT)

    def _refresh_due(self) -> bool:
        """Whether a query now would bring the index up to date first."""
        if self._building or self.max_age is None:
            return False
        return self._stale or time.monotonic() - self._refreshed_at > self.max_age

    def settled(self) -> bool:
        """Whether a query now answers from the index as it is: no refresh runs and none is due."""
        return self._built_once and not self._building and self.wait(0) and not self._refresh_due()

    def from_store(self, answer: Callable[[], T]) -> T | None:
        """`answer()` computed without waiting for a refresh (one running, or one due), when it
        provably is what the files on disk say: each file whose rows it reads is checked
        against the disk by the refresh's own rule (mtime and size as stored), and one that
        differs, or that appeared since the stored listing, is read now instead (at most
        MAX_FRESH); a path it asks about is answered as it is on disk. All of it is read from one
        snapshot of the database, so a refresh committing meanwhile cannot mix two states. None
        when the answer read more than a list of files (a search by name, a scan of every path):
        the caller then waits for the refresh. A refresh that is due is started in the
        background either way."""
        self._check_open()
        db = self._db()
        own = not db.in_transaction
        self._local.generation = self.generation
        try:
            if own:
                db.execute("BEGIN")  # one snapshot for the whole answer
            row = db.execute("SELECT value FROM meta WHERE key = 'listed_at'").fetchone()
            reads = self._local.reads = _Reads(int(row[0]) if row else None)
            try:
                result = answer()
            except (IntelError, _RestsOnEverything):
                return None  # asked again the usual way, which says what is wrong
        finally:
            self._local.reads = self._local.generation = None
            if own and db.in_transaction:
                db.rollback()
            if self._refresh_due() or (not self._built_once and self._thread is None):
                self._stale = False
                self.start()  # not waited for: the next answer may need it
        return None if reads.everything else result

    def _current(self, rel: str) -> tuple[bool, bool]:
        """(whether the stored rows of `rel` are the file as it is on disk, whether the index
        has the file at all), for the answer being computed from the store."""
        reads = self._local.reads
        hit = reads.current.get(rel)
        if hit is None:
            row = self._db().execute("SELECT mtime_ns, size FROM files WHERE path = ?", (rel,)).fetchone()
            st = _stat(f"{self.root}{os.sep}{rel}")
            if row is None:
                # not indexed: right unless it is a file a listing takes that came after the
                # stored listing (one there before was left out by an ignore file, or the cap)
                current = not (self._listable(rel, st) and (
                    reads.listed_at is None or st.st_ctime_ns > reads.listed_at - LISTED_SLACK_NS))
            else:
                current = st is not None and (st.st_mtime_ns, st.st_size) == (row[0], row[1])
            hit = reads.current[rel] = (current, row is not None)
        return hit

    def _listable(self, rel: str, st: os.stat_result | None) -> bool:
        """Whether a listing would take this file, ignore files aside: a regular file of a
        language a grammar reads, admitted by `include`, reached through no symbolic link (the
        listing follows none: a linked directory may lead out of the workspace)."""
        if st is None or not stat.S_ISREG(st.st_mode) or language_for(rel) is None:
            return False
        path = self.root / rel
        if os.path.realpath(path) != str(path):
            return False
        return self._include is None or self._include(path)

    def _present(self, rel: str) -> bool:
        """Whether `rel` is a file of the index as it would be now (answers from the store)."""
        current, indexed = self._current(rel)
        return indexed if current else self._listable(rel, _stat(f"{self.root}{os.sep}{rel}"))

    def _fresh(self, rel: str) -> list[Symbol]:
        """The definitions of `rel` read from disk now (its stored rows are out of date)."""
        reads = self._local.reads
        syms = reads.fresh.get(rel)
        if syms is not None:
            return syms
        syms = []
        if len(reads.fresh) >= MAX_FRESH:
            reads.everything = True  # too much has changed: the refresh is the way
            raise _RestsOnEverything()
        p = self.root / rel
        lang = language_for(rel)
        if lang is not None and self._listable(rel, _stat(str(p))):
            try:
                facts = extract(self._read(p), lang)
                syms = [Symbol(n, k, p, line, ch, end, cont, sig)
                        for n, k, line, ch, end, cont, sig in facts.symbols]
            except Exception:  # noqa: BLE001 - as indexing it would: a file without symbols
                syms = []
        reads.fresh[rel] = syms
        return syms

    def _generation(self) -> int:
        """The generation a cache built now is labelled with: read before the data it is built
        from, so that a cache is never older than its label (an answer from the store reads a
        snapshot taken after it read the generation)."""
        snapshot = getattr(self._local, "generation", None)
        return self.generation if snapshot is None else snapshot

    def _reading_everything(self) -> None:
        """Note, for an answer computed from the store in this thread, that it reads rows of
        any file (a list of files is checked file by file instead: `_current`)."""
        reads = getattr(self._local, "reads", None)
        if reads is not None:
            reads.everything = True  # stays set should a caller swallow the exception
            raise _RestsOnEverything()

    def refresh(self) -> RefreshStats:
        """Bring the index up to date with the files on disk; returns what it did."""
        self._check_open()
        if threading.current_thread() is self._thread:
            self._build_lock.acquire()
        else:
            with self._waiting_for_build():  # a background build paused mid-way holds the lock
                self._build_lock.acquire()
        try:
            return self._refresh_locked()
        finally:
            self._build_lock.release()

    def _waiting_for_build(self) -> "_Wanted":
        """While a caller waits for the build (its end, or its lock), the build pauses for nobody."""
        return _Wanted(self)

    def _refresh_locked(self) -> RefreshStats:
        with self._state_lock:
            self._check_open()  # closed while this waited for the lock
            self._builder_active = True
        self._building = True
        started = time.monotonic()
        try:
            stats = self._refresh()
        except BaseException:
            self._store.rollback()  # the next refresh starts from the last commit
            raise
        finally:
            self._building = False
            with self._state_lock:
                self._builder_active = False
                close_store = self._close_when_built
            if close_store:  # close() did not wait for this build: it ends here
                self._store.close()
        self._built_once = True
        self._refreshed_at = started
        self._build_error = None
        self.last_refresh = stats
        return stats

    def _list(self) -> Listing:
        if self._list_files is not None:
            return list_from(self.root, self._list_files(), self._include, self.max_files)
        return list_with_ripgrep(self.root, self._include, self.max_files, self._rg)

    def _refresh(self) -> RefreshStats:
        started = time.monotonic()
        stats = RefreshStats()
        self._progress = (0, 0)
        store = self._store
        # Listing runs in a thread while the files indexed before are stat'ed and, when only a
        # few changed (an edit), parsed: a re-index after an edit then costs about the larger
        # of the two, not their sum. What the listing no longer has is dropped, parsed or not.
        prefix = f"{self.root}{os.sep}"
        self._wait_turn()
        listing_began = time.time_ns()
        with ThreadPoolExecutor(1, thread_name_prefix="codebelt-intel-listing") as pool:
            listed = pool.submit(self._list)  # bounded by the listing's own timeout
            known = store.known_files()
            early: dict[str, Job] = {}  # changed files indexed before
            unchanged: set[str] = set()
            for n, (rel, (_, mtime_ns, size, lang)) in enumerate(known.items()):
                if n % STAT_TURN == STAT_TURN - 1:
                    self._wait_turn()
                st = _stat(prefix + rel)
                if st is None:
                    continue  # gone: dropped below, as the listing will not have it
                if (st.st_mtime_ns, st.st_size) == (mtime_ns, size):
                    unchanged.add(rel)
                else:
                    early[rel] = Job(rel, prefix + rel, lang, st.st_size, st.st_mtime_ns)
            parsed_early: list[tuple[Job, Outcome]] = []
            if len(early) < INLINE_BELOW:
                for job in early.values():
                    self._wait_turn()
                    if self._stop.is_set():
                        break
                    parsed_early.append((job, parse_one(job, self.max_file_bytes)))
            listing = listed.result()
        self._capped = stats.capped = listing.capped
        stats.listed = len(listing.files)

        jobs: list[Job] = []
        present: set[str] = set()
        for rel, (path, lang) in listing.files.items():
            if rel in unchanged:
                present.add(rel)
                stats.unchanged += 1
                continue
            job = early.get(rel)
            if job is None or job.language != lang:
                st = _stat(path)
                if st is None:
                    continue  # gone since the listing: dropped below
                job = Job(rel, path, lang, st.st_size, st.st_mtime_ns)
            present.add(rel)
            jobs.append(job)
        chosen = {j.rel: j for j in jobs}
        ready = {j.rel: (j, o) for j, o in parsed_early if chosen.get(j.rel) is j}
        gone = [known[rel][0] for rel in known.keys() - present]
        stats.removed = len(gone)
        if gone:
            store.delete_files(gone)
            self._commit(changed=True)

        total = len(jobs)
        self._progress = (0, total)
        done = 0
        last_commit = time.monotonic()

        def on_result(job: Job, out: Outcome) -> None:
            nonlocal done, last_commit
            old = known.get(job.rel)
            store.put_file(job.rel, job.language, out.mtime_ns, out.size, out.rows, out.error,
                           old[0] if old else None)
            if out.error:
                stats.failed += 1
            done += 1
            self._progress = (done, total)
            now = time.monotonic()
            if now - last_commit >= COMMIT_EVERY:
                self._commit(changed=True)
                last_commit = now
            if self.progress is not None:
                self.progress(done, total)

        for rel, (job, out) in ready.items():
            on_result(job, out)
        self._parser.run([j for j in jobs if j.rel not in ready], on_result, self._stop, self._yielding())
        if not self._stop.is_set() and done == total:
            # every listed file is in: a file not indexed and older than this was not listed
            store.set_meta("listed_at", str(listing_began))
        self._commit(changed=done > 0)
        stats.parsed = done
        stats.seconds = time.monotonic() - started
        return stats

    def _commit(self, changed: bool) -> None:
        self._store.commit()
        if changed:  # a refresh that found nothing new keeps the caches built on this generation
            self.generation += 1

    # -- state -------------------------------------------------------------------------------------

    @property
    def building(self) -> bool:
        return self._building

    def note(self) -> str | None:
        """Why answers may be incomplete right now (None when they are not)."""
        parts = []
        if self._building and getattr(self._local, "reads", None) is None:
            # (an answer from the store is checked against the disk file by file instead)
            done, total = self._progress
            where = f"{done} of {total} files parsed" if total else "listing files"
            parts.append(f"the code index is still being built ({where}); answers may be "
                         "incomplete")
        if self._capped:
            parts.append(f"only the first {self.max_files} source files are indexed")
        if self._build_error:
            parts.append(f"the last index build failed: {self._build_error}")
        return "; ".join(parts) or None

    def has_earlier_build(self) -> bool:
        """Whether there is an index to answer from already: built in this process, or stored
        by an earlier session (a refresh may be bringing it up to date meanwhile)."""
        self._check_open()
        return self._built_once or self._db().execute("SELECT 1 FROM files LIMIT 1").fetchone() is not None

    def complete(self) -> bool:
        """Whether the index holds every file a listing found (not so while a first build runs,
        or after one was cut short): a module it lacks is then not in the workspace."""
        self._check_open()
        return self._db().execute("SELECT 1 FROM meta WHERE key = 'listed_at'").fetchone() is not None

    def _answer(self, **kw) -> Answer:
        return Answer(backend=BACKEND, note=self.note(), **kw)

    def _db(self) -> sqlite3.Connection:
        return self._store.reader()

    def absolute(self, rel: str) -> Path:
        return self.root / rel

    def relative(self, path: Path | str) -> str | None:
        p = Path(path)
        if not p.is_absolute():
            p = self.root / p
        try:
            return p.relative_to(self.root).as_posix()
        except ValueError:
            try:
                return p.resolve().relative_to(self.root).as_posix()
            except (ValueError, OSError):
                return None

    # -- queries -----------------------------------------------------------------------------------

    def definitions(self, name: str, *, limit: int = 50) -> Answer:
        self._ensure_started()
        self._reading_everything()
        limit = _check_limit(limit)
        db = self._db()
        total = db.execute("SELECT count(*) FROM symbols WHERE name = ?", (name,)).fetchone()[0]
        rows = db.execute(
            f"SELECT {_SYM_COLS} FROM symbols s JOIN files f ON f.id = s.file_id "
            "WHERE s.name = ? ORDER BY f.path, s.line LIMIT ?", (name, limit)).fetchall()
        symbols = [self._symbol(r) for r in rows]
        locations = self._locations(
            [(s.path, s.line, s.character, s.line, s.character + len(s.name)) for s in symbols])
        return self._answer(symbols=symbols, locations=locations, total=total,
                            truncated=total > len(symbols))

    def references(self, name: str, *, limit: int = 100,
                   include_definitions: bool = False) -> Answer:
        """Where `name` is used. Definition sites are left out unless `include_definitions`."""
        self._ensure_started()
        self._reading_everything()
        limit = _check_limit(limit)
        db = self._db()
        total = db.execute("SELECT coalesce(sum(count), 0) FROM refs WHERE name = ?",
                           (name,)).fetchone()[0]
        spots: list[tuple[Path, int, int, int, int]] = []
        if include_definitions:
            total += db.execute("SELECT count(*) FROM symbols WHERE name = ?",
                                (name,)).fetchone()[0]
            for path, line, char in db.execute(
                    "SELECT f.path, s.line, s.character FROM symbols s JOIN files f "
                    "ON f.id = s.file_id WHERE s.name = ? ORDER BY f.path, s.line LIMIT ?",
                    (name, limit)):
                spots.append((self.absolute(path), line, char, line, char + len(name)))
        room = limit - len(spots)
        # a file's groups (bare identifiers and the rest) are merged and ordered before the next
        # file's, so the first `room` positions in path order are the right ones
        rows = db.execute("SELECT f.path, r.spots FROM refs r JOIN files f ON f.id = r.file_id "
                          "WHERE r.name = ? ORDER BY f.path", (name,))
        for path, group in itertools.groupby(rows, key=lambda r: r[0]):
            if room <= 0:
                break
            p = self.absolute(path)
            here = sorted(spot for _, blob in group for spot in unpack_spots(blob))
            spots += [(p, line, char, line, char + len(name)) for line, char in here[:room]]
            room = limit - len(spots)
        spots.sort(key=lambda s: (str(s[0]), s[1], s[2]))
        return self._answer(locations=self._locations(spots), total=total,
                            truncated=total > len(spots))

    def document_symbols(self, path: Path | str, *, limit: int = 500) -> Answer:
        """The symbols of one file, in source order: from the index when it is current there,
        else parsed now."""
        self._check_open()
        limit = _check_limit(limit)
        p = Path(path)
        if not p.is_absolute():
            p = self.root / p
        lang = language_for(p)
        if lang is None:
            raise IntelError(f"no tree-sitter grammar reads {p.name}")
        rel = self.relative(p)
        if rel is not None:
            row = self._db().execute("SELECT id, mtime_ns, size, error FROM files WHERE path = ?",
                                     (rel,)).fetchone()
            try:
                st = os.stat(p, follow_symlinks=False)
            except OSError as e:
                raise IntelError(f"cannot read {p}: {e.strerror or e}") from e
            if row is not None and (row[1], row[2]) == (st.st_mtime_ns, st.st_size) \
                    and row[3] is None:
                rows = self._db().execute(
                    f"SELECT {_SYM_COLS} FROM symbols s JOIN files f ON f.id = s.file_id "
                    "WHERE s.file_id = ? ORDER BY s.line, s.character", (row[0],)).fetchall()
                syms = [self._symbol(r) for r in rows]
                return self._answer(symbols=syms[:limit], total=len(syms),
                                    truncated=len(syms) > limit)
        facts = extract(self._read(p), lang)
        syms = [Symbol(n, k, p, line, ch, end, cont, sig)
                for n, k, line, ch, end, cont, sig in facts.symbols]
        return Answer(backend=BACKEND, symbols=syms[:limit], total=len(syms),
                      truncated=len(syms) > limit or facts.truncated)

    def workspace_symbols(self, query: str, limit: int = 50) -> Answer:
        """Symbols whose name contains `query` (case-insensitive), best first: exact name, then
        prefix, then substring; shorter names and types before variables within a tier. With
        fewer hits than `limit`, names holding the query's letters in order come last."""
        self._ensure_started()
        self._reading_everything()
        limit = _check_limit(limit)
        q = query.strip().lower()
        if not q:
            raise IntelError("workspace_symbols needs a non-empty query")
        if "\n" in q:
            raise IntelError("the query must be one line")
        names = self._name_table()
        hits = names.matching(q)
        ranked = sorted(hits, key=lambda k: (name_tier(names.names[k], query.strip()),
                                             len(names.names[k]), names.names[k]))
        if sum(names.counts[k] for k in hits) < limit:
            ranked += _subsequence(names, q, set(hits), limit)
        total = sum(names.counts[k] for k in ranked)
        chosen: list[str] = []
        n = 0
        for k in ranked:
            if n >= limit:
                break
            chosen.append(names.names[k])
            n += names.counts[k]
        order = {name: i for i, name in enumerate(chosen)}
        rows: list[tuple] = []
        db = self._db()
        for i in range(0, len(chosen), 500):
            batch = chosen[i:i + 500]
            rows += db.execute(
                f"SELECT {_SYM_COLS} FROM symbols s JOIN files f ON f.id = s.file_id "
                f"WHERE s.name IN ({','.join('?' * len(batch))})", batch).fetchall()
        rows.sort(key=lambda r: (order.get(r[0], 1 << 30), KIND_ORDER.get(r[1], 9), r[7], r[2]))
        syms = [self._symbol(r) for r in rows[:limit]]
        answer = self._answer(symbols=syms, total=total, truncated=total > len(syms))
        skipped = self.skipped_note()
        if skipped:
            answer.note = f"{answer.note}; {skipped}" if answer.note else skipped
        return answer

    def skipped_files(self, limit: int = 3) -> tuple[int, list[tuple[str, str]]]:
        """How many listed source files have no symbols because they could not be read or
        parsed (binary, too large, a parse failure), and the first `limit` (path, why)."""
        self._reading_everything()
        db = self._db()
        count = db.execute("SELECT count(*) FROM files WHERE error IS NOT NULL").fetchone()[0]
        first = db.execute("SELECT path, error FROM files WHERE error IS NOT NULL ORDER BY path "
                           "LIMIT ?", (limit,)).fetchall() if count else []
        return count, first

    def skipped_note(self) -> str | None:
        """A sentence naming the files a search could not look into, or None."""
        count, first = self.skipped_files()
        if not count:
            return None
        named = ", ".join(f"{path} ({why})" for path, why in first)
        more = f" and {count - len(first)} more" if count > len(first) else ""
        return f"{count} source file(s) were skipped and not searched: {named}{more}"

    def identifier_at(self, path: Path | str, line: int, character: int | None = None) -> str | None:
        """The identifier under a 1-based (line, character) cursor; with `character` None, the
        first identifier on the line. None when the spot holds no identifier."""
        found = self.identifier_node(path, line, character)
        return None if found is None else found[2]

    def identifier_node(self, path: Path | str, line: int, character: int | None = None
                        ) -> tuple[Node, bytes, str] | None:
        """The identifier under the cursor (see `identifier_at`): its tree-sitter node, the
        file's source (UTF-8) it was parsed from, and the name. In a string that names types
        (`-> "Text"`) the node is the string's contents and the name the word under the
        cursor."""
        self._check_open()
        p = Path(path)
        if not p.is_absolute():
            p = self.root / p
        lang = language_for(p)
        if lang is None:
            raise IntelError(f"no tree-sitter grammar reads {p.name}")
        data = self._read(p)
        lines = data.split(b"\n")
        if data.endswith(b"\n"):
            lines.pop()
        if not isinstance(line, int) or line < 1 or line > len(lines):
            raise PositionError(f"line {line} is outside {p.name} (1..{len(lines)})")
        text = lines[line - 1].decode("utf-8", "replace").rstrip("\r")
        tree = parse(lang, data)
        row = line - 1
        if character is None:
            node = _first_identifier(tree.root_node, row)
            return None if node is None else (node, data, _node_text(node))
        if not isinstance(character, int) or character < 1 or character > len(text) + 1:
            raise PositionError(f"character {character} is outside line {line} "
                                f"(1..{len(text) + 1})")
        start_col = len(text[:character - 1].encode("utf-8"))
        at = tree.root_node.descendant_for_point_range((row, start_col), (row, start_col))
        node = _identifier_node(at)
        if node is not None:
            return node, data, _node_text(node)
        word = _word_in_type_string(at, text, character)
        return None if word is None else (at, data, word)

    def source_bytes(self, path: Path | str) -> bytes:
        """A file's source as UTF-8, decoded as the index decodes it (bounded like indexing)."""
        self._check_open()
        p = Path(path)
        return self._read(p if p.is_absolute() else self.root / p)

    def definitions_in(self, name: str, rels: list[str] | None, *, limit: int = 500
                       ) -> list[Symbol]:
        """Definitions named `name`, in the files `rels` (relative paths) or anywhere (None)."""
        self._ensure_started()
        if rels is not None and getattr(self._local, "reads", None) is not None:
            return self._definitions_now(name, rels, limit)
        self._reading_everything()
        db = self._db()
        if rels is None:
            rows = db.execute(
                f"SELECT {_SYM_COLS} FROM symbols s JOIN files f ON f.id = s.file_id "
                "WHERE s.name = ? ORDER BY f.path, s.line LIMIT ?", (name, limit)).fetchall()
        else:
            rows = []
            for i in range(0, len(rels), 500):
                batch = rels[i:i + 500]
                rows += db.execute(
                    f"SELECT {_SYM_COLS} FROM symbols s JOIN files f ON f.id = s.file_id "
                    f"WHERE s.name = ? AND f.path IN ({','.join('?' * len(batch))}) "
                    "ORDER BY f.path, s.line LIMIT ?", (name, *batch, limit)).fetchall()
        return [self._symbol(r) for r in rows]

    def _definitions_now(self, name: str, rels: list[str], limit: int) -> list[Symbol]:
        """`definitions_in` for an answer from the store: the stored rows of the files that
        are current, the others read now."""
        stored: list[str] = []
        out: list[Symbol] = []
        for rel in dict.fromkeys(rels):
            if self._current(rel)[0]:
                stored.append(rel)
            else:
                out += [s for s in self._fresh(rel) if s.name == name]
        db = self._db()
        for i in range(0, len(stored), 500):
            batch = stored[i:i + 500]
            out += [self._symbol(r) for r in db.execute(
                f"SELECT {_SYM_COLS} FROM symbols s JOIN files f ON f.id = s.file_id "
                f"WHERE s.name = ? AND f.path IN ({','.join('?' * len(batch))}) "
                "ORDER BY f.path, s.line LIMIT ?", (name, *batch, limit))]
        out.sort(key=lambda s: (self.relative(s.path) or "", s.line))
        return out[:limit]

    def all_paths(self) -> frozenset[str] | _SeenPaths:
        """Every indexed file's relative path (cached per index generation). While an answer is
        computed from the store, a view that answers for the paths as they are on disk."""
        paths = self._paths_table()[0]
        return paths if getattr(self._local, "reads", None) is None else _SeenPaths(self, paths)

    def shortest_ending(self, suffixes: list[str]) -> list[str]:
        """The shortest indexed paths equal to one of `suffixes` or ending with "/" + one, in
        path order (a module's file: the copy nearest the root)."""
        paths, by_name = self._paths_table()
        found = []
        for suffix in suffixes:
            base = suffix.rpartition("/")[2]
            found += [p for p in by_name.get(base, ()) if p == suffix or p.endswith("/" + suffix)]
        best = min(map(len, found), default=None)
        if getattr(self._local, "reads", None) is not None:
            # From the store: only the suffixes themselves can be looked at one by one; any
            # other path ending so is at least two characters longer (a directory and a
            # slash) and could appear anywhere, so it must be longer than the answer.
            on_disk = [s for s in suffixes if self._present(s)]
            best = min(map(len, on_disk), default=None)
            if best is None or any(len(s) + 2 <= best for s in suffixes):
                self._reading_everything()
            found = on_disk
        return sorted(p for p in found if len(p) == best)

    def _paths_table(self) -> tuple[frozenset[str], dict[str, list[str]]]:
        gen = self._generation()
        cached = self._paths
        if cached is not None and cached[0] == gen:
            return cached[1]
        paths = [r[0] for r in self._db().execute("SELECT path FROM files")]
        by_name: dict[str, list[str]] = {}
        for p in paths:
            by_name.setdefault(p.rpartition("/")[2], []).append(p)
        table = (frozenset(paths), by_name)
        self._paths = (gen, table)
        return table

    def go_module(self, rel: str) -> tuple[str, str] | None:
        """(directory holding go.mod, module path) for the Go file `rel`: the nearest go.mod
        above it, read once per index generation."""
        d = posixpath.dirname(rel)
        while True:
            key = d
            hit = self._go_mods.get(key)
            if hit is None or hit[0] != self.generation:
                mod = None
                try:
                    with open(self.root / d / "go.mod", "rb") as f:
                        head = f.read(64 * 1024).decode("utf-8", "replace")
                    m = re.search(r"(?m)^\s*module\s+\"?([^\s\"]+)", head)
                    mod = (d, m.group(1)) if m else None
                except OSError:
                    mod = None
                hit = self._go_mods[key] = (self.generation, mod)
            if hit[1] is not None:
                return hit[1]
            if not d:
                return None
            d = posixpath.dirname(d)

    def file_facts(self, path: Path | str) -> FileFacts:
        """One file's definitions and references, parsed now (bounded like indexing)."""
        self._check_open()
        p = Path(path) if Path(path).is_absolute() else self.root / path
        lang = language_for(p)
        if lang is None:
            raise IntelError(f"no tree-sitter grammar reads {p.name}")
        return extract(self._read(p), lang)

    def locations(self, spots: list[tuple[Path, int, int, int, int]]) -> list[Location]:
        """Locations with their source lines, for (path, line, char, end_line, end_char) spots."""
        return self._locations(spots)

    # -- helpers ---------------------------------------------------------------------------------

    def _read(self, p: Path) -> bytes:
        try:
            return read_source(p, self.max_file_bytes).data
        except SourceSkipped as e:
            raise IntelError(f"cannot read {p}: {e}") from e

    def _symbol(self, r: tuple) -> Symbol:
        name, kind, line, ch, end, cont, sig, path = r
        return Symbol(name, kind, self.absolute(path), line, ch, end, cont, sig)

    def _locations(self, spots: list[tuple[Path, int, int, int, int]]) -> list[Location]:
        texts: dict[Path, list[str] | None] = {}
        out = []
        for path, line, ch, end_line, end_ch in spots:
            if path not in texts and len(texts) >= MAX_TEXT_FILES:
                texts[path] = None  # enough reading for one answer: the rest go without text
            elif path not in texts:
                try:
                    texts[path] = read_source(path, self.max_file_bytes).data.decode(
                        "utf-8", "replace").splitlines()
                except SourceSkipped:
                    texts[path] = None
            lines = texts[path]
            text = lines[line - 1] if lines is not None and 0 < line <= len(lines) else ""
            out.append(Location(path, line, ch, end_line, end_ch, text))
        return out

    def _name_table(self) -> _Names:
        gen = self._generation()
        cached = self._names
        if cached is not None and cached[0] == gen:
            return cached[1]
        rows = self._db().execute("SELECT name, count(*) FROM symbols GROUP BY name").fetchall()
        names = _Names(rows)
        self._names = (gen, names)
        return names

    def graph_rows(self) -> tuple[list[tuple], list[tuple]]:
        """For the repository map: definitions (path, name, kind, line, signature, container)
        and per-file reference counts (path, name, plain, count)."""
        self._ensure_started()
        self._reading_everything()
        db = self._db()
        defs = db.execute(
            "SELECT f.path, s.name, s.kind, s.line, s.signature, s.container FROM symbols s "
            "JOIN files f ON f.id = s.file_id").fetchall()
        refs = db.execute(
            "SELECT f.path, r.name, r.plain, r.count FROM refs r "
            "JOIN files f ON f.id = r.file_id"
        ).fetchall()
        return defs, refs

    def _check_open(self) -> None:
        if self._closed:
            raise IntelError("the code index is closed")

    def close(self, wait: float | None = None) -> str | None:
        """Close the index. A build under way is told to stop, which it does before its next
        file (the listing, bounded by its own timeout, is waited for); close waits for it at
        most `wait` seconds. A build still busy then (a parse that blocks) is left to stop in
        its daemon thread, and closes the store itself when it does: nothing is lost — what it
        parsed is stored and committed then, and what it had not is parsed at the next build.
        Returns None, or the sentence that says so when the build was left running."""
        wait = CLOSE_WAIT if wait is None else wait
        with self._state_lock:
            if self._closed:
                return None
            self._closed = True  # no build starts from now on
        self._stop.set()
        if self._build_lock.acquire(timeout=max(wait, 0.0)):
            try:
                self._store.close()
            finally:
                self._build_lock.release()
            t = self._thread  # between steps (paused, or about to find the index closed): ends now
            if t is not None and t is not threading.current_thread():
                t.join(max(wait, 0.0))
            return None
        with self._state_lock:
            if self._builder_active:
                self._close_when_built = True
                return (f"the code index build did not stop within {wait:g} s (a file is still being "
                        "parsed); it stops before its next file and closes the index then. Nothing is "
                        "lost: what it parsed is stored, what it had not is parsed at the next build.")
        self._store.close()  # the build ended between the wait and now
        return None

    def __enter__(self) -> "CodeIndex":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_SYM_COLS = ("s.name, s.kind, s.line, s.character, s.end_line, s.container, s.signature, f.path")


class _Wanted:
    def __init__(self, index: CodeIndex):
        self._index = index

    def __enter__(self) -> None:
        with self._index._state_lock:
            self._index._wanted += 1

    def __exit__(self, *exc) -> None:
        with self._index._state_lock:
            self._index._wanted -= 1


class _Turns:
    """The background build's turns, as the parser asks for them (`pool.Yielding`)."""

    def __init__(self, index: CodeIndex):
        self._index = index

    def held(self) -> bool:
        return self._index._held()

    def wait(self) -> None:
        self._index._wait_turn()


def _check_limit(limit: int) -> int:
    if not isinstance(limit, int) or limit < 1:
        raise IntelError(f"limit must be a positive integer, not {limit!r}")
    return min(limit, 10_000)


def _subsequence(names: _Names, q: str, skip: set[int], limit: int) -> list[int]:
    """Names starting with the query's first character and holding the rest in order. Each
    step is `[^\nX]*X`, which cannot match in more than one way, so a hostile query cannot make
    the regex backtrack wildly; anchoring at line starts keeps the scan linear."""
    q = q[:MAX_FUZZY]
    pattern = "(?m)^" + re.escape(q[0]) + "".join(
        f"[^\n{re.escape(c)}]*{re.escape(c)}" for c in q[1:])
    out: list[int] = []
    starts = names.starts
    seen = set(skip)
    for m in re.finditer(pattern, names.blob):
        k = bisect.bisect_right(starts, m.start()) - 1
        if k in seen:
            continue
        seen.add(k)
        out.append(k)
        if len(out) >= limit:
            break
    out.sort(key=lambda k: (len(names.names[k]), names.names[k]))
    return out


def _is_identifier(node) -> bool:
    t = node.type
    return node.child_count == 0 and node.is_named and ("identifier" in t or t in IDENTIFIER_TYPES)


def _identifier_node(node) -> Node | None:
    # the cursor may sit on an identifier's leaf or on a wrapper node whose only child it is
    for _ in range(4):
        if node is None:
            return None
        if _is_identifier(node):
            return node
        if node.named_child_count == 1 and node.child_count == 1:
            node = node.named_children[0]
            continue
        return None
    return None


def _node_text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _word_in_type_string(node: Node | None, line_text: str, character: int) -> str | None:
    """The identifier under the cursor inside a string that is a type annotation."""
    if node is None or node.type != "string_content":
        return None
    p = node.parent.parent if node.parent is not None else None
    if p is None or p.type != "type":
        return None
    i = character - 1
    if i >= len(line_text) or not (line_text[i].isalnum() or line_text[i] == "_"):
        return None
    start = i
    while start > 0 and (line_text[start - 1].isalnum() or line_text[start - 1] == "_"):
        start -= 1
    end = i
    while end < len(line_text) and (line_text[end].isalnum() or line_text[end] == "_"):
        end += 1
    word = line_text[start:end]
    return word if word.isidentifier() else None


def _first_identifier(root, row: int) -> Node | None:
    # depth-first, pruning subtrees that do not touch the row
    stack = [root]
    visited = 0
    while stack and visited < 100_000:
        node = stack.pop()
        visited += 1
        if node.end_point[0] < row or node.start_point[0] > row:
            continue
        if _is_identifier(node) and node.start_point[0] == row:
            return node
        stack.extend(reversed(node.children))
    return None


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path, follow_symlinks=False)
    except OSError:
        return None

