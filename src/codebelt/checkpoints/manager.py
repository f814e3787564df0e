"""One workspace's checkpoints, for one session: record calls, list, rewind, undo, reset.

    book = Checkpoints(store_dir, roots, session_id, Limits(...))
    rec = book.begin_files("Edit", "src/a.py", [path])   # file tools: their paths
    rec = book.begin_command("Bash", "sed -i …")         # commands: what the tracker sees
    ... the call runs ...
    checkpoint_id = rec.finish()                          # None when nothing changed
    book.rewind(checkpoint_id, dry_run=True)              # what would be done, as a diff

Background tasks: `open_task(task_id, label)` when a command goes on after its call returned;
what changes while no call runs is added to the newest open task's checkpoint, which
`close_task` closes when the task ends. With no task open, changes between calls are someone
else's (the person's editor): they become the new baseline, and a rewind never overwrites them.
"""

from __future__ import annotations

import difflib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from . import keeping
from .deferred import DEFER_BYTES, Deferred
from .entries import ABSENT, FILE, Entry, is_deferred, kind_of, lstat, stat_key
from .manifest import Manifest, live_hashes
from .records import Change, Checkpoint, Records
from .rewind import Plan, Result, apply, plan
from .store import ObjectStore, connect
from .tracker import PENDING_FILE, Budget, Tracker, changed

GC_EVERY_S = 3600.0


@dataclass(frozen=True)
class Limits:
    max_store_bytes: int = 2048 << 20
    max_age_s: float = 7 * 86400
    max_file_bytes: int = 64 << 20
    max_call_bytes: int = 1024 << 20
    max_entries: int = 500_000


@dataclass
class RewindReport:
    checkpoints: list[int]
    restored: list[str]
    conflicts: list[tuple[str, str]]  # path, why it was left
    checkpoint: int | None = None  # the rewind's own checkpoint (undo it to redo)
    dry_run: bool = False
    diff: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"checkpoints": self.checkpoints, "restored": self.restored,
                "conflicts": [{"path": p, "why": w} for p, w in self.conflicts],
                "checkpoint": self.checkpoint, "dryRun": self.dry_run, "diff": self.diff}

    def text(self, relative: Callable[[str], str] = lambda p: p) -> str:
        verb = "Would restore" if self.dry_run else "Restored"
        ids = ", ".join(map(str, self.checkpoints)) or "none"
        lines = [f"{verb} {len(self.restored)} path(s), undoing checkpoint(s) {ids}."]
        lines += [f"  {relative(p)}" for p in self.restored[:200]]
        if self.conflicts:
            lines.append(f"Left as they are ({len(self.conflicts)}; pass force to overwrite those changed by someone else):")
            lines += [f"  {relative(p)}: {w}" for p, w in self.conflicts[:200]]
        if self.checkpoint is not None:
            lines.append(f"This rewind is checkpoint {self.checkpoint}: rewind it (or undo) to redo.")
        if self.diff:
            lines += ["", self.diff]
        return "\n".join(lines)


class Recording:
    """One call being recorded; `finish()` stores its checkpoint."""

    def __init__(self, book: "Checkpoints", tool: str, label: str, paths: list[str] | None,
                 before: dict[str, Entry]):
        self.book, self.tool, self.label, self.paths, self.before = book, tool, label, paths, before
        self.started = time.time()
        self.id: int | None = None

    def finish(self) -> int | None:
        self.id = self.book._finish(self)
        return self.id


class Checkpoints:
    def __init__(self, store_dir: Path, roots: Iterable[str | os.PathLike[str]], session: str,
                 limits: Limits = Limits(), *, use_journal: bool = True, placeholders: Iterable[str] = (),
                 ignore: Iterable[str | os.PathLike[str]] = (), exclude: Iterable[str] = (), use_git: bool = True):
        self.dir = Path(store_dir)
        self.roots = [os.path.realpath(r) for r in roots]
        self.workspace = self.roots[0]
        self.session = session
        self.limits = limits
        self._lock = threading.RLock()
        self._db_lock = threading.RLock()
        self.conn = connect(self.dir / "checkpoints.db")
        self.store = ObjectStore(self.dir, self.conn, self._db_lock)
        self.records = Records(self.conn, self._db_lock)
        # never tracked: the store itself and the caller's own working directories (a session's
        # temp files), should they lie inside a root
        skipped = tuple(os.path.realpath(d) for d in (self.dir, *ignore))
        self._skip = lambda p: any(p == d or p.startswith(d + "/") for d in skipped)
        self._skipped = skipped
        self._kept_as: str | None = None  # the key the tracker's state was asked for under
        self._use_journal = use_journal
        # empty directories a sandbox creates as mount points (not the command's doing)
        self._placeholders = {os.path.realpath(p) for p in placeholders}
        self._exclude = tuple(exclude)
        self._use_git = use_git
        self.tracker: Tracker | None = None
        self._baseline: threading.Thread | None = None
        self._tasks: dict[str, int] = {}  # background task id → its open checkpoint
        self._deferred = Deferred(self.store, self.records, limits.max_file_bytes)
        self._closed = False
        self.collect_if_due()

    # -- recording -------------------------------------------------------------------------
    def begin_files(self, tool: str, label: str, paths: Iterable[str]) -> Recording:
        """A call that writes the given paths (file tools): their state now, contents kept."""
        # never a repository's own files: a rewind never writes into .git
        paths = [p for p in dict.fromkeys(os.path.abspath(p) for p in paths) if ".git" not in p.split("/")]
        self._settle()
        with self._lock:
            if self._tasks and self.tracker is not None:  # what running tasks wrote so far is theirs
                self._absorb(self.tracker.sync(self._budget()))
            before = self._look(paths, self._budget())
        return Recording(self, tool, label, paths, before)

    def begin_command(self, tool: str, label: str) -> Recording:
        """A call that may write anywhere in the roots (a command): what changed since the last
        look is someone else's (or a running task's), what changes from now on is this call's.
        Waits for the baseline's watches, not for its contents (see `start_background`)."""
        tracker = self._tracker()
        self._settle()
        with self._lock:
            if tracker.mode != "off":
                self._absorb(tracker.sync(self._budget()))
        return Recording(self, tool, label, None, {})

    def _finish(self, rec: Recording) -> int | None:
        self._settle()
        with self._lock:
            budget = self._budget()
            notes: list[str] = []
            if rec.paths is not None:  # a large file's new content is kept after the call returns
                after = self._look(rec.paths, budget, defer_at=DEFER_BYTES)
                changes = [Change(p, rec.before[p], after[p]) for p in rec.paths]
                changes = [c for c in changes if changed(c)]
            else:
                tracker = self.tracker
                assert tracker is not None  # begin_command made it
                changes = tracker.sync(budget) if tracker.mode != "off" else []
                changes = [c for c in changes if not (c.path in self._placeholders and c.before.kind == ABSENT
                                                      and c.after.kind == "dir")]
                if tracker.mode == "off":
                    notes.append(f"what this command changed was not recorded: {tracker.reason}")
            changes = self._materialized(changes)
            notes += _notes(changes, self.relative)
            if not changes and not notes:
                return None
            cid = self.records.add(self.workspace, self.session, "call", rec.tool, rec.label, changes, notes,
                                   started=rec.started)
            for c in changes:
                if is_deferred(c.after):
                    self._deferred.add(cid, c.path, c.after)
            return cid

    def _settle(self) -> None:
        """Wait for the contents being kept after earlier calls (see `deferred`); the tracker
        takes their entries. Called before the lock is taken: the copies do not need it, and
        every other call would stall behind a wait made with it held."""
        done = self._deferred.settle()
        if not done:
            return
        with self._lock:
            tracker = self.tracker
            for path, recorded, settled in done:
                if tracker is not None and tracker.entries.get(path) is recorded:
                    tracker.entries[path] = settled

    def _absorb(self, changes: list[Change]) -> None:
        """Changes seen between calls: a running task's, else someone else's (kept as baseline)."""
        if changes and self._tasks:
            self.records.extend(list(self._tasks.values())[-1], self._materialized(changes))

    def _materialized(self, changes: list[Change]) -> list[Change]:
        """Pre-images that name a git blob, read into the store: a checkpoint holds its own
        contents (the blob may be gone from the repository by the time of a rewind)."""
        tracker = self.tracker
        if tracker is None or not tracker.git:
            return changes
        budget = self._store_room()
        return [Change(c.path, tracker.materialize(c.before, budget), c.after) for c in changes]

    def _store_room(self) -> Budget:
        room = self.limits.max_store_bytes - self.store.total_bytes()
        return Budget(max(0, room), why=f"the checkpoint store is full ({self.limits.max_store_bytes >> 20} MB, "
                      "setting checkpoints.maxStoreMB)")

    def open_task(self, task_id: str, label: str) -> int:
        with self._lock:
            cid = self.records.add(self.workspace, self.session, "task", "Bash", label, [], open_=True)
            self._tasks[task_id] = cid
            return cid

    def close_task(self, task_id: str) -> int | None:
        """The task ended: what changed since the last look is its own; close its checkpoint."""
        self._settle()
        with self._lock:
            cid = self._tasks.pop(task_id, None)
            if cid is None:
                return None
            tracker = self.tracker
            changes = tracker.sync(self._budget()) if tracker is not None and tracker.mode != "off" else []
            changes = self._materialized(changes)
            self.records.extend(cid, changes, _notes(changes, self.relative), close=True)
            return cid

    def _budget(self) -> Budget:
        room = self.limits.max_store_bytes - self.store.total_bytes()
        if room < self.limits.max_call_bytes:
            return Budget(max(0, room), why=f"the checkpoint store is full ({self.limits.max_store_bytes >> 20} MB, "
                          "setting checkpoints.maxStoreMB)")
        return Budget(self.limits.max_call_bytes, why=f"the call changed more than {self.limits.max_call_bytes >> 20} MB "
                      "(setting checkpoints.maxCallMB)")

    def _tracker(self) -> Tracker:
        """The tracker, its directories watched (a command may run); its baseline of contents
        may still be filling in the background. Not called with the lock held."""
        begun = self.tracker is not None
        tracker = self.start_background(ahead=False)
        tracker.watched.wait()
        # Without a journal nothing tells what a command changed while the baseline fills; and a
        # baseline this command began (a session that began none at its start: the command
        # line's one call) has had no head start: every file it changes would be "not kept".
        if tracker.mode == "scan" or not begun:
            tracker.filled.wait()
        return tracker

    def start_background(self, ahead: bool = True) -> Tracker:
        """Begin the baseline in a thread of its own, if not begun: the watches first, then each
        file's pre-image at a lower priority. A command that runs before it is done waits only
        for the watches; files it changes that had no pre-image yet are recorded as not kept."""
        with self._lock:
            if self.tracker is None:
                manifests = {r: Manifest(self.conn, self._db_lock, r) for r in self.roots}
                self.tracker = Tracker(self.roots, self.store, manifests, file_limit=self.limits.max_file_bytes,
                                       max_entries=self.limits.max_entries, skip=self._skip,
                                       use_journal=self._use_journal, exclude=self._exclude, use_git=self._use_git,
                                       lock=self._lock)
                if self._closed:
                    self.tracker.mode, self.tracker.reason = "off", "closed"
                    self.tracker.watched.set()
                    self.tracker.filled.set()
                elif self._adopt_kept(self.tracker):
                    pass  # the previous process's watches and entries: nothing to walk
                else:
                    self._baseline = threading.Thread(target=self._build_baseline, args=(self.tracker, ahead),
                                                      name="codebelt-checkpoint-baseline", daemon=True)
                    self._baseline.start()
            return self.tracker

    def _build_baseline(self, tracker: Tracker, ahead: bool) -> None:
        budget = self._store_room()
        try:
            tracker.watch_all()
            # at a lower priority only while nobody waits for it (begun ahead of the commands)
            tracker.fill(budget, background=ahead and tracker.mode == "journal")
        except Exception as e:  # noqa: BLE001 - a baseline that fails leaves tracking off, said
            tracker.mode, tracker.reason = "off", f"the baseline failed: {e}"
        finally:
            tracker.watched.set()
            tracker.filled.set()
        if budget.limit is not None and budget.used >= budget.limit:
            tracker.reason += (f"; the checkpoint store is full ({self.limits.max_store_bytes >> 20} MB, setting "
                               "checkpoints.maxStoreMB): files past it were not kept")

    # -- kept between processes (see `keeping`) ---------------------------------------------
    def kept_key(self) -> str | None:
        """What a kept state must have been built with to serve this book: the roots (by path
        and identity: a directory replaced is another tree), the store, the limits and
        exclusions that shaped its entries, and the skipped directories inside the roots.
        None when a root is not a directory."""
        ids = []
        for r in self.roots:
            st = lstat(r)
            if st is None:
                return None
            ids.append((r, st.st_dev, st.st_ino))
        inside = sorted(d for d in self._skipped if any(d == r or d.startswith(r + "/") for r in self.roots))
        return repr((ids, os.path.realpath(self.dir), self.limits.max_file_bytes, self.limits.max_entries,
                     self._exclude, self._use_git, inside))

    def _adopt_kept(self, tracker: Tracker) -> bool:
        keeper = keeping.current()
        if keeper is None or not self._use_journal:
            return False
        key = self._kept_as = self.kept_key()
        kept = keeper.take(key) if key is not None else None
        if kept is None:
            return False
        if tracker.adopt(kept):
            return True
        os.close(kept.journal.fd)  # this process's copy
        keeper.give(key, None)  # not usable: the walk begins anew, and its state is kept at close
        return False

    def _close_tracker(self, tracker: Tracker) -> None:
        """Close the tracker; with a keeper, its state goes to the keeper for the next process
        (after the manifest is saved, so that the next process finds the two matching)."""
        keeper = keeping.current() if self._use_journal else None
        if keeper is None:
            tracker.close()
            return
        key = self.kept_key()
        # a root replaced meanwhile: this state is of another tree than the one it was taken for
        kept = tracker.keep() if key is not None and key == self._kept_as else None
        try:
            tracker.close()
            if kept is not None and tracker.manifest_saved:
                kept.stamps = {r: m.stamp for r, m in tracker.manifests.items()}
                keeper.give(key or "", kept)
            else:
                keeper.give(self._kept_as or "", None)
        finally:
            if kept is not None:
                try:
                    os.close(kept.journal.fd)
                except OSError:
                    pass

    def start_tracking(self) -> str:
        """Build the whole baseline now, contents included. Says how changes are found."""
        tracker = self.start_background(ahead=False)  # waited for: at the caller's priority
        tracker.filled.wait()
        return f"{tracker.mode}: {tracker.reason}"

    def _look(self, paths: list[str], budget: Budget, defer_at: int | None = None) -> dict[str, Entry]:
        if self.tracker is not None and self.tracker.watched.is_set():
            return self.tracker.look(paths, budget, defer_at)
        probe = Tracker(self.roots, self.store, {}, file_limit=self.limits.max_file_bytes, max_entries=0,
                        use_journal=False)
        return probe.look(paths, budget, defer_at)

    def _restored(self, paths: list[str], targets: dict[str, Entry]) -> dict[str, Entry]:
        """What restored paths hold: the target each was written from, with its new stat
        identity (no need to read back what was just written); anything else is looked at."""
        out: dict[str, Entry] = {}
        rest = []
        for p in paths:
            st = lstat(p)
            t = targets[p]
            if st is not None and kind_of(st) == t.kind and t.kind == FILE:
                out[p] = t.with_key(stat_key(st))
                if self.tracker is not None and self.tracker.tracks(p):
                    self.tracker.entries[p] = out[p]
            else:
                rest.append(p)
        out.update(self._look(rest, Budget(None)))
        return out

    # -- reading ---------------------------------------------------------------------------
    def list(self, session: str | None = None, limit: int = 1000) -> list[Checkpoint]:
        """This workspace's checkpoints, oldest first (of one session when given)."""
        return self.records.list(self.workspace, session, limit=limit)

    def get(self, cid: int) -> Checkpoint | None:
        cp = self.records.get(cid)
        return cp if cp is not None and cp.workspace == self.workspace else None

    # -- rewinding -------------------------------------------------------------------------
    def rewind(self, cid: int, *, session: str | None = None, force: bool = False, dry_run: bool = False,
               diff: bool = False) -> RewindReport:
        """Back to the state before checkpoint `cid`: it and every later checkpoint (of
        `session`, when given) undone, newest first. Raises KeyError for an unknown id."""
        self._settle()
        with self._lock:
            if self.get(cid) is None:
                raise KeyError(cid)
            if self._tasks and self.tracker is not None:  # what running tasks wrote so far is theirs
                self._absorb(self.tracker.sync(self._budget()))
            todo = [cp for cp in self.records.list(self.workspace, session, since=cid)]
            return self._undo(todo, force, dry_run, diff, f"rewind to before checkpoint {cid}")

    def undo(self, *, session: str | None = None, force: bool = False, dry_run: bool = False,
             diff: bool = False) -> RewindReport:
        """Undo the last checkpoint (of `session`, when given); undoing a rewind redoes."""
        last = self.records.list(self.workspace, session, limit=1)
        if not last:
            return RewindReport([], [], [], dry_run=dry_run)
        return self.rewind(last[-1].id, session=session, force=force, dry_run=dry_run, diff=diff)

    def _undo(self, todo: list[Checkpoint], force: bool, dry_run: bool, diff: bool, label: str) -> RewindReport:
        look_budget = Budget(None)

        def look(paths: list[str]) -> dict[str, Entry]:
            now = self._look(paths, look_budget)
            if self.tracker is None or not self.tracker.git:
                return now
            return {p: self.tracker.materialize(e, look_budget) for p, e in now.items()}

        p: Plan = plan(todo, look, force=force)
        report = RewindReport([cp.id for cp in todo], [s.path for s in p.actions],
                              [(s.path, s.problem or "") for s in p.conflicts], dry_run=dry_run)
        if diff or dry_run:
            report.diff = self._diff(p)
        if dry_run or not p.actions:
            return report
        result: Result = apply(p.actions, self.store, self.roots)
        report.restored = [s.path for s in result.done]
        report.conflicts += [(s.path, why) for s, why in result.failed]
        done = result.done
        if done:
            after = self._restored([s.path for s in done], {s.path: s.target for s in done})
            changes = [Change(s.path, s.current, after[s.path]) for s in done]
            report.checkpoint = self.records.add(self.workspace, self.session, "rewind", "rewind", label, changes)
        return report

    def _diff(self, p: Plan, max_chars: int = 200_000) -> str:
        out: list[str] = []
        size = 0
        for s in p.actions:
            rel = self.relative(s.path)
            a, b = self._text(s.current), self._text(s.target)
            if a is None or b is None:
                out.append(f"{rel}: {s.current.describe()} → {s.target.describe()}")
                continue
            lines = list(difflib.unified_diff(a, b, f"a/{rel}", f"b/{rel}", lineterm=""))
            if not lines and s.current.mode != s.target.mode:
                lines = [f"{rel}: mode {s.current.mode:o} → {s.target.mode:o}"]
            out += lines
            size += sum(len(x) for x in lines)
            if size > max_chars:
                out.append("… (diff cut)")
                break
        return "\n".join(out)

    def _text(self, e: Entry) -> list[str] | None:
        if e.kind == ABSENT:
            return []
        if e.kind != FILE or not e.hash or e.size > 1 << 20:
            return None
        try:
            return self.store.read(e.hash).decode("utf-8").splitlines()
        except (UnicodeDecodeError, KeyError):
            return None

    def relative(self, path: str) -> str:
        for r in self.roots:
            if path.startswith(r + "/"):
                return path[len(r) + 1:] if r == self.workspace else path
        return path

    # -- storage ---------------------------------------------------------------------------
    def collect_if_due(self) -> None:
        marker = self.dir / "last-gc"
        try:
            if time.time() - marker.stat().st_mtime < GC_EVERY_S:
                return
        except FileNotFoundError:
            pass
        marker.touch()
        self.collect()

    def collect(self, grace_s: float = 3600.0) -> int:
        """Drop checkpoints past the age cap, then the oldest while the store is over its size
        cap; remove contents nothing refers to. Bytes freed."""
        self.records.expire(time.time() - self.limits.max_age_s)
        freed = self.store.collect(self.records.hashes() | live_hashes(self.conn, self._db_lock), grace_s)
        while self.store.total_bytes() > self.limits.max_store_bytes:
            oldest = self.records.oldest(max(1, self.records.count() // 10))
            if not oldest:
                break
            self.records.delete(oldest)
            more = self.store.collect(self.records.hashes() | live_hashes(self.conn, self._db_lock), grace_s)
            freed += more
            if not more:
                break  # what is left is a baseline, or in use within the grace period: nothing to gain
        return freed

    def close(self) -> None:
        self._settle()  # the copies being made are finished, not dropped: a later rewind needs them
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for task_id in list(self._tasks):
                try:
                    self.close_task(task_id)
                except Exception:  # noqa: BLE001 - closing never fails the session's close
                    pass
            if self.tracker is not None:
                self.tracker.stopping = True
            baseline = self._baseline
        if baseline is not None:
            baseline.join(timeout=10)  # outside the lock: a batch it is settling needs it
        with self._lock:
            if self.tracker is not None:
                self._close_tracker(self.tracker)
            self.store.close()
            self.conn.close()


def _notes(changes: list[Change], relative: Callable[[str], str]) -> list[str]:
    """What a checkpoint says about contents it does not hold, in a line each."""
    notes = []
    early = [c for c in changes if c.before is PENDING_FILE or c.before.lost == PENDING_FILE.lost]
    if early:
        notes.append(f"{len(early)} changed file(s) not kept: the checkpoint baseline had not reached them yet "
                     "(it is built in the background from the session's start): "
                     + ", ".join(relative(c.path) for c in early[:10]) + (" …" if len(early) > 10 else ""))
    for c in changes:
        if c.before.kind == "dir" and c.before.lost:
            notes.append(f"{relative(c.path)}: {c.before.lost}")
        elif c.after.kind == "dir" and c.after.lost and c.before.kind == ABSENT:
            notes.append(f"{relative(c.path)} (new): {c.after.lost}")
    return notes
