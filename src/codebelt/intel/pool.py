"""Parse many files, in worker processes when there are enough of them to pay for it.

Measured on 2 cores (CPython `Lib/`): extraction is mostly Python-level work under the GIL, so
threads do not scale and processes do. Workers are plain subprocesses we start ourselves
(`python -P -m codebelt.intel.worker`: explicit interpreter, argv list, own session, cwd `/`),
not multiprocessing, whose spawn would re-run an unguarded `__main__` of the host program.
A chunk that stalls past its timeout gets its worker's group killed; a worker that dies on
hostile input (a crash inside a grammar) costs its chunk a retry file by file, and the file that
kills a worker again is recorded as failed while the rest of the index carries on.
"""

from __future__ import annotations

import marshal
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from .extract import extract
from .frames import HEADER, write_frame
from .rows import FileRows
from .sources import SourceSkipped, read_source

CHUNK_FILES = 16  # files per request: amortises the round trip
CHUNK_BYTES = 1 << 20  # source bytes per request: keeps one answer's size moderate
CHUNK_TIMEOUT = 60.0  # seconds a chunk may take before its worker is presumed stuck
INLINE_BELOW = 48  # fewer changed files than this are parsed in the calling thread
MAX_RESPONSE = 256 << 20  # a worker answer larger than this is treated as a crash
POLL = 0.1  # how often `stop` is looked at while waiting on workers


@dataclass(frozen=True)
class Job:
    rel: str
    path: str  # absolute
    language: str
    size: int = 0  # as listed: sizes chunks, and is recorded for a file that is skipped
    mtime_ns: int = 0


@dataclass
class Outcome:
    mtime_ns: int
    size: int
    rows: FileRows | None
    error: str | None


CRASHED = "parse failed: the parser crashed or hung on this file"


def parse_one(job: Job, max_bytes: int) -> Outcome:
    try:
        src = read_source(job.path, max_bytes)
    except SourceSkipped as e:
        # recorded with the listed stat: not read again until it changes
        return Outcome(job.mtime_ns, job.size, None, str(e))
    try:
        return Outcome(src.mtime_ns, src.size, FileRows.of(extract(src.data, job.language)), None)
    except Exception as e:  # a grammar or query bug must cost one file, not the index
        return Outcome(src.mtime_ns, src.size, None, f"parse failed: {type(e).__name__}: {e}")


def default_workers() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:
        n = os.cpu_count() or 1
    return max(1, min(n, 4))


OnResult = Callable[[Job, Outcome], None]


class Yielding(Protocol):
    """Work done ahead of need gives way to the work someone waits for: `held()` says to begin
    nothing new now, `wait()` returns once new work may begin."""

    def held(self) -> bool: ...

    def wait(self) -> None: ...


class _Worker:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "codebelt.intel.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd="/", start_new_session=True, close_fds=True,
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.fd = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.buf = bytearray()
        self.chunk: list[Job] | None = None
        self.deadline = 0.0

    def send(self, chunk: list[Job], max_bytes: int) -> None:
        self.chunk = chunk
        self.deadline = time.monotonic() + CHUNK_TIMEOUT
        payload = marshal.dumps((max_bytes, [(j.path, j.language, j.size, j.mtime_ns)
                                             for j in chunk]))
        write_frame(self.proc.stdin, payload)  # type: ignore[arg-type]

    def read(self) -> list | None:
        """Read what is there; the decoded answer once complete. Raises EOFError on a dead or
        misbehaving worker."""
        try:
            data = os.read(self.fd, 1 << 20)
        except BlockingIOError:
            return None
        if not data:
            raise EOFError("worker exited")
        self.buf += data
        if len(self.buf) < HEADER.size:
            return None
        (n,) = HEADER.unpack_from(self.buf)
        if n > MAX_RESPONSE:
            raise EOFError("worker answer too large")
        if len(self.buf) < HEADER.size + n:
            return None
        payload = bytes(self.buf[HEADER.size:HEADER.size + n])
        del self.buf[:HEADER.size + n]
        try:
            return marshal.loads(payload)
        except (EOFError, ValueError, TypeError) as e:
            raise EOFError(f"worker answer unreadable: {e}") from e

    def kill(self) -> None:
        for kill in (os.killpg, os.kill):
            try:
                kill(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._reap()

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.kill()
        self._reap()

    def _reap(self) -> None:
        try:
            self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()  # type: ignore[union-attr]
            except OSError:
                pass


def _outcome(raw: tuple) -> Outcome:
    mtime_ns, size, error, symbols, refs, truncated = raw
    rows = None if symbols is None else FileRows(symbols, refs, truncated)
    return Outcome(mtime_ns, size, rows, error)


class Parser:
    def __init__(self, max_bytes: int, workers: int | None = None):
        self.max_bytes = max_bytes
        self.workers = workers if workers is not None else default_workers()

    def run(self, jobs: Sequence[Job], on_result: OnResult, stop: threading.Event,
            yielding: Yielding | None = None) -> None:
        """`yielding`: between files (in this thread) or chunks (in workers) the parse gives way:
        no new file or chunk begins while it is held; chunks under way finish."""
        if self.workers <= 1 or len(jobs) < INLINE_BELOW:
            for job in jobs:
                if yielding is not None:
                    yielding.wait()
                if stop.is_set():
                    return
                on_result(job, parse_one(job, self.max_bytes))
            return
        lost: list[Job] = []
        self._run_chunks(_chunks(jobs), on_result, stop, lost, yielding)
        # files from chunks whose worker died or hung: one per request, so only the culprit fails
        if lost and not stop.is_set():
            again: list[Job] = []
            self._run_chunks([[j] for j in lost], on_result, stop, again, yielding)
            for j in again:
                on_result(j, Outcome(j.mtime_ns, j.size, None, CRASHED))

    def _run_chunks(self, chunks: list[list[Job]], on_result: OnResult, stop: threading.Event,
                    lost: list[Job], yielding: Yielding | None = None) -> None:
        queue = list(reversed(chunks))
        workers: list[_Worker] = []
        sel = selectors.DefaultSelector()
        try:
            while queue or any(w.chunk for w in workers):
                if yielding is not None and queue and not any(w.chunk for w in workers):
                    yielding.wait()  # nothing under way: wait here rather than spin
                if stop.is_set():
                    return
                # hand out work: reuse idle workers, start more up to the limit (none while held)
                idle = [w for w in workers if w.chunk is None]
                handing = queue and not (yielding is not None and yielding.held())
                while handing and queue and (idle or len(workers) < self.workers):
                    if idle:
                        w = idle.pop()
                    else:
                        w = _Worker()
                        workers.append(w)
                        sel.register(w.fd, selectors.EVENT_READ, w)
                    chunk = queue.pop()
                    try:
                        w.send(chunk, self.max_bytes)
                    except OSError:
                        lost.extend(chunk)
                        self._drop(w, workers, sel)
                now = time.monotonic()
                busy = [w for w in workers if w.chunk]
                if not busy:
                    continue
                timeout = min(min(w.deadline for w in busy) - now, POLL)
                for key, _ in sel.select(max(timeout, 0.0)):
                    w = key.data
                    try:
                        answer = w.read()
                    except EOFError:
                        lost.extend(w.chunk or [])
                        self._drop(w, workers, sel)
                        continue
                    if answer is None:
                        continue
                    chunk, w.chunk = w.chunk or [], None
                    if len(answer) != len(chunk):
                        lost.extend(chunk)
                        self._drop(w, workers, sel)
                        continue
                    for job, raw in zip(chunk, answer):
                        on_result(job, _outcome(raw))
                now = time.monotonic()
                for w in [w for w in workers if w.chunk and now >= w.deadline]:
                    lost.extend(w.chunk or [])
                    self._drop(w, workers, sel)
        finally:
            sel.close()
            for w in workers:
                if stop.is_set():
                    w.kill()
                else:
                    w.close()

    @staticmethod
    def _drop(w: _Worker, workers: list[_Worker], sel: selectors.BaseSelector) -> None:
        try:
            sel.unregister(w.fd)
        except (KeyError, ValueError):
            pass
        w.kill()
        w.chunk = None
        workers.remove(w)


def _chunks(jobs: Sequence[Job]) -> list[list[Job]]:
    out: list[list[Job]] = []
    cur: list[Job] = []
    size = 0
    for j in jobs:
        if cur and (len(cur) >= CHUNK_FILES or size + j.size > CHUNK_BYTES):
            out.append(cur)
            cur, size = [], 0
        cur.append(j)
        size += j.size
    if cur:
        out.append(cur)
    return out
