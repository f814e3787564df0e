"""Large files' new contents, kept after the call that wrote them has returned.

A file tool's checkpoint holds the content the call left: a rewind compares the file with it,
and it is the pre-image of whatever changes the file next. Copying and hashing it costs more than
an edit of a large file itself (SHA-256 of 50 MB alone takes ~45 ms), so a file of `DEFER_BYTES`
or more is recorded by its stat identity (device, inode, size, mtime, ctime) and copied into the
store by a worker thread once the call has returned. The copy is read through a descriptor whose
identity must be the recorded one before and after the read; a file changed in between is
recorded as not kept, with the reason. Whoever looks at the workspace next (the next call's
checkpoint, a rewind, closing) first waits for the queue (`settle`), so nothing takes a file's
state while its content is still being kept.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, replace

from .entries import Entry
from .records import Records
from .store import Changed, ObjectStore, TooLarge, Unreadable

DEFER_BYTES = 4 << 20  # smaller files are kept on the call's path: a few ms at most

CHANGED = "not kept: the file changed again before its copy was made (right after the call that wrote it)"


@dataclass(frozen=True)
class Job:
    checkpoint: int
    path: str
    entry: Entry  # as recorded: its `lost` names the rows to settle


class Deferred:
    """One worker at a time, started when there is work and gone when there is none."""

    def __init__(self, store: ObjectStore, records: Records, limit: int | None):
        self.store = store
        self.records = records
        self.limit = limit
        self._cond = threading.Condition()
        self._queue: deque[Job] = deque()
        self._busy = False
        self._worker: threading.Thread | None = None
        self._done: list[tuple[str, Entry, Entry]] = []  # (path, as recorded, as settled), not yet taken

    def add(self, checkpoint: int, path: str, entry: Entry) -> None:
        with self._cond:
            self._queue.append(Job(checkpoint, path, entry))
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="codebelt-checkpoint-keep", daemon=True)
                self._worker.start()

    def settle(self) -> list[tuple[str, Entry, Entry]]:
        """Wait until every queued copy is made (each is bounded by the file size limit); the
        entries settled since the last call, as (path, as recorded, as settled)."""
        with self._cond:
            while self._queue or self._busy:
                self._cond.wait()
            done, self._done = self._done, []
        return done

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._queue:
                    self._worker = None
                    return
                job = self._queue.popleft()
                self._busy = True
            settled = job.entry
            try:
                settled = self._keep(job)
                self.records.settle(job.checkpoint, job.path, job.entry.lost or "", settled)
            except Exception as e:  # noqa: BLE001 - the worker never dies with jobs queued behind it
                settled = replace(job.entry, lost=f"not kept: {type(e).__name__}: {e}")
            finally:
                with self._cond:
                    self._busy = False
                    self._done.append((job.path, job.entry, settled))
                    self._cond.notify_all()

    def _keep(self, job: Job) -> Entry:
        try:
            digest, size = self.store.put_file(job.path, self.limit, expect=job.entry.key)
        except Changed:
            return replace(job.entry, lost=CHANGED)
        except TooLarge as e:
            return replace(job.entry, lost=f"not kept: it grew past the size limit ({int(e.args[0])} bytes)")
        except Unreadable as e:
            return replace(job.entry, lost=f"not kept: unreadable right after the call ({e})")
        return replace(job.entry, hash=digest, size=size, lost=None)
