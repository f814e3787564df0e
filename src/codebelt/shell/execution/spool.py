"""Spool files: a command's combined stdout+stderr on disk, read back in bounded pieces.

The child writes straight into the spool file (no pipe, so nothing to drain and nothing a
stray grandchild can hold open). Everything here reads it back without ever holding more than
a fixed number of bytes in memory, whatever the command printed: progress tails, head/tail
summaries for evicted results, incremental reads for BashOutput.
"""

from __future__ import annotations

import codecs
import itertools
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...evicted import notice

if TYPE_CHECKING:
    from ...linear_regex import LinearPattern

CHUNK = 1 << 20  # bytes read at a time when scanning a spool file
SUMMARY_BYTES = 6_000  # bytes of head and of tail shown for an evicted output
SUMMARY_LINES = 40  # at most this many lines of head and of tail


def decode(data: bytes) -> str:
    """Output bytes as text: UTF-8, invalid bytes replaced (U+FFFD), never an exception."""
    return data.decode("utf-8", errors="replace")


def read_range(path: Path, start: int, end: int) -> bytes:
    """Bytes [start, end) of the file; the caller keeps end - start bounded."""
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(max(0, end - start))


def count_newlines(path: Path, start: int = 0, end: int | None = None) -> int:
    n = 0
    with open(path, "rb") as f:
        f.seek(start)
        remaining = None if end is None else end - start
        while remaining is None or remaining > 0:
            chunk = f.read(CHUNK if remaining is None else min(CHUNK, remaining))
            if not chunk:
                break
            n += chunk.count(b"\n")
            if remaining is not None:
                remaining -= len(chunk)
    return n


def line_count(newlines: int, size: int, last_byte: bytes) -> int:
    """Lines in a text of `size` bytes with `newlines` newlines (a last partial line counts)."""
    if size == 0:
        return 0
    return newlines + (0 if last_byte == b"\n" else 1)


@dataclass
class Progress:
    """What the progress callback gets: the latest lines, total lines and bytes so far."""

    last_lines: list[str]
    total_lines: int
    total_bytes: int


class SpoolTail:
    """Follows a growing spool file: counts lines incrementally and keeps the last few.

    Each `update()` reads only the bytes added since the previous one, in CHUNK pieces, so a
    1 GB output costs one sequential pass in total, spread over the progress ticks.
    """

    def __init__(self, path: Path, keep_lines: int = 5, keep_bytes: int = 4096):
        self.path = path
        self.keep_lines = keep_lines
        self.keep_bytes = keep_bytes
        self.offset = 0
        self.newlines = 0
        self._tail = b""
        self._last = b""

    def update(self) -> Progress:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                while True:
                    chunk = f.read(CHUNK)
                    if not chunk:
                        break
                    self.offset += len(chunk)
                    self.newlines += chunk.count(b"\n")
                    self._tail = (self._tail + chunk[-self.keep_bytes :])[-self.keep_bytes :]
                    self._last = chunk[-1:]
        except OSError:
            pass
        lines = decode(self._tail).rstrip("\n").split("\n")[-self.keep_lines :]
        return Progress(
            last_lines=[line for line in lines if line or len(lines) > 1],
            total_lines=line_count(self.newlines, self.offset, self._last),
            total_bytes=self.offset,
        )


@dataclass
class Rendered:
    """The model-facing form of a spool file: inline text, or a head/tail summary."""

    text: str
    truncated: bool
    total_bytes: int
    total_lines: int | None = None  # counted only when the output is summarised


def _head(path: Path, size: int) -> tuple[str, int]:
    data = read_range(path, 0, min(size, SUMMARY_BYTES))
    lines = data.split(b"\n")
    if len(data) < size and len(lines) > 1:
        lines = lines[:-1]  # drop the partial last line of the window
    lines = lines[:SUMMARY_LINES]
    return decode(b"\n".join(lines)), len(lines)


def _tail(path: Path, size: int) -> tuple[str, int]:
    start = max(0, size - SUMMARY_BYTES)
    data = read_range(path, start, size)
    if data.endswith(b"\n"):
        data = data[:-1]
    lines = data.split(b"\n")
    if start > 0 and len(lines) > 1:
        lines = lines[1:]  # drop the partial first line of the window
    lines = lines[-SUMMARY_LINES:]
    return decode(b"\n".join(lines)), len(lines)


def eviction_text(path: Path, size: int, total_lines: int, head: str, head_n: int,
                  tail: str, tail_n: int) -> str:
    omitted = max(0, total_lines - head_n - tail_n)
    return notice(path, f"{size:,} bytes", total_lines, head, tail, omitted)


def render(path: Path, max_chars: int, size: int | None = None) -> Rendered:
    """The output as text if it fits in `max_chars`, else an eviction summary pointing at `path`.

    Only outputs that could fit (at most 4 bytes per character) are ever read whole.
    """
    if size is None:
        size = os.path.getsize(path)
    if size <= 4 * max_chars:
        text = decode(read_range(path, 0, size)).rstrip("\n")
        if len(text) <= max_chars:
            return Rendered(text, False, size)
    last = read_range(path, size - 1, size) if size else b""
    total_lines = line_count(count_newlines(path, 0, size), size, last)
    head, head_n = _head(path, size)
    tail, tail_n = _tail(path, size)
    if head_n + tail_n >= total_lines:  # few but very long lines: no line is omitted whole
        tail_n = max(0, total_lines - head_n)
    text = eviction_text(path, size, total_lines, head, head_n, tail, tail_n)
    return Rendered(text, True, size, total_lines)


class IncrementalReader:
    """Reads what was added to a spool file since the last read (BashOutput).

    Keeps a UTF-8 decoder so a character split across two reads is not mangled. With a
    filter, only complete lines are consumed while the command runs (a half-written line is
    left for the next read); lines that do not match are consumed and dropped. A line longer
    than LONG_LINE bytes is judged (and shown) by its first LONG_LINE bytes and the rest of it
    skipped, so memory stays bounded whatever the command prints.
    """

    LONG_LINE = CHUNK

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._skipping = False  # inside an over-long line whose head was already judged

    def read(self, size: int, finished: bool, max_bytes: int,
             pattern: "LinearPattern | None" = None) -> tuple[str, int, bool]:
        """(text, bytes consumed, truncated). At most `max_bytes` of new output is returned
        inline; when more arrived, the middle is skipped (counted) and head/tail kept."""
        start, end = self.offset, size
        if end <= start:
            return "", 0, False
        if pattern is not None:
            return self._read_filtered(start, end, finished, max_bytes, pattern)
        truncated = False
        if end - start > max_bytes:
            half = max_bytes // 2
            head = read_range(self.path, start, start + half)
            tail = read_range(self.path, end - half, end)
            skipped = end - start - 2 * half
            self._decoder.reset()
            text = (
                decode(head)
                + f"\n... [{skipped:,} bytes of output skipped; the full output is in {self.path}] ...\n"
                + decode(tail)
            )
            truncated = True
        else:
            text = self._decoder.decode(read_range(self.path, start, end), final=finished)
        self.offset = end
        return text, end - start, truncated

    def _read_filtered(self, start: int, end: int, finished: bool, max_bytes: int,
                       pattern: "LinearPattern") -> tuple[str, int, bool]:
        kept: list[str] = []
        budget = [max_bytes, False]  # bytes still allowed inline, whether a match was left out

        def keep(lines: bytes) -> None:
            # One pass of the (linear-time) pattern over many lines; text is judged as decoded,
            # and a line by its first LONG_LINE bytes however it arrived.
            if len(lines) > self.LONG_LINE and any(len(x) > self.LONG_LINE for x in lines.split(b"\n")):
                lines = b"\n".join(x[:self.LONG_LINE] for x in lines.split(b"\n"))
            blob = lines.decode("utf-8", "replace").encode("utf-8")
            for a, b in pattern.matching_lines(blob):
                if b - a <= budget[0]:
                    kept.append(blob[a:b].decode("utf-8"))
                    budget[0] -= b - a + 1
                else:
                    budget[1] = True

        pos = start
        carry = b""
        with open(self.path, "rb") as f:
            f.seek(start)
            while pos < end:
                chunk = f.read(min(CHUNK, end - pos))
                if not chunk:
                    break
                pos += len(chunk)
                if self._skipping:
                    nl = chunk.find(b"\n")
                    if nl < 0:
                        continue
                    chunk = chunk[nl + 1:]
                    self._skipping = False
                data = carry + chunk
                cut = data.rfind(b"\n")
                if cut >= 0:
                    keep(data[:cut])
                    carry = data[cut + 1:]
                else:
                    carry = data
                if len(carry) > self.LONG_LINE:
                    keep(carry[:self.LONG_LINE])
                    carry = b""
                    self._skipping = True
        consumed_to = pos - len(carry)
        if carry and finished:
            keep(carry)
            consumed_to = pos
        self.offset = consumed_to
        self._decoder.reset()
        text = "\n".join(kept)
        if budget[1]:
            text += "\n... [more matching lines were skipped: too much output for one read] ..."
        return text, consumed_to - start, budget[1]


class SpoolDir:
    """Hands out fresh spool files and deletes used ones, keeping file-system latency off the
    call path: creating and unlinking a file costs more than running `true` on some
    filesystems (ext4 with `discard`: 0.2-0.6 ms each). A daemon thread keeps a couple of
    empty files ready and does the unlinks. A file is never reused for a second command: a
    process that escaped its group may still hold it open and write into it.
    """

    SPARES = 2

    def __init__(self, path: Path, prefix: str = "cmd"):
        self.path = path
        self.path.mkdir(parents=True, exist_ok=True)
        self._prefix = prefix
        self._seq = itertools.count(1)
        self._lock = threading.Lock()
        self._spares: list[Path] = []
        self._jobs: "queue.SimpleQueue[Path | None]" = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._closed = False

    def _new_path(self) -> Path:
        return self.path / f"{self._prefix}-{next(self._seq)}.log"

    def take(self) -> Path:
        """A spool path for a new command (an empty file, or a fresh name)."""
        with self._lock:
            spare = self._spares.pop() if self._spares else None
            self._ensure_worker()
        self._jobs.put(None)  # top the spares up
        return spare or self._new_path()

    def discard(self, path: Path) -> None:
        """The output in `path` is no longer needed (deleted in the background)."""
        self._jobs.put(path)

    def _ensure_worker(self) -> None:
        if self._worker is None and not self._closed:
            self._worker = threading.Thread(target=self._work, name="codebelt-spool", daemon=True)
            self._worker.start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if self._closed:
                return
            if job is not None:
                try:
                    os.unlink(job)
                except OSError:
                    pass
                continue
            with self._lock:
                missing = self.SPARES - len(self._spares)
            for _ in range(max(0, missing)):
                p = self._new_path()
                try:
                    os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
                except OSError:
                    break
                with self._lock:
                    self._spares.append(p)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            spares, self._spares = self._spares, []
        self._jobs.put(None)
        for p in spares:
            try:
                os.unlink(p)
            except OSError:
                pass
