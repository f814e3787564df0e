"""Line index and paging for text files of any size.

`LineIndex` streams a file once, counting newlines per fixed-size block (bytes.count runs at memory
speed), and keeps one checkpoint per block: (byte offset, newlines before it). Finding line L is a
binary search over checkpoints plus a scan of one block, so a page deep inside a 2 GB file costs a
block read, never the whole file in memory. The index grows lazily: it scans only as far as the
deepest line asked for, and knows the total line count once it has reached the end.

`LineIndexCache` keeps recent indexes per session, keyed by (path, device, inode, size, mtime), so
a second read of a nearby page skips the scan. `read_page` renders `cat -n` rows from an offset.

Lines are split on "\\n" only (like `cat -n` and `wc -l`); a trailing "\\r" is not shown.
"""

from __future__ import annotations

import bisect
import codecs
import os
import queue
import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable

from .codec import TextFormat, for_display

BLOCK_SIZE = 256 * 1024  # bytes per checkpoint and per read while scanning: 4k checkpoints (64 KB of index) per GB
CHUNK_SIZE = 8 * 1024 * 1024  # bytes scanned between checks for cancellation
MAX_LINE_CHARS = 5000  # longer lines become continuation rows N.1, N.2, …
PIECE_BYTES = 64 * 1024  # a long line is read in pieces of this size
OVERLAP_AFTER = 1024 * 1024  # bytes a scan reads itself before a reader thread reads ahead for it
# Bytes per read of that thread (one preadv into several block buffers) and groups of buffers (one
# counted while the other is read: 4 MB in all). Each group costs two hand-offs and the GIL changing
# hands; 478 MB scanned took 125 ms serially, 115 ms with 1 MB reads, 90 ms with 2 MB and 4 MB ones.
READ_UNIT = 2 * 1024 * 1024
READ_AHEAD = 2
MAX_BUFFERS = 64  # buffers per preadv, far below any IOV_MAX (tiny block sizes)
_CAN_OVERLAP = hasattr(os, "preadv")


def count_newlines(buf, start: int = 0, end: int | None = None) -> int:
    """Newlines in buf[start:end] (a block of up to a few MB).

    `bytes.count` of one byte is a plain C loop (~2.7 GB/s here), while `bytes.replace` finds
    the byte with memchr (SIMD); so for text with ordinary lines, "length minus length without
    newlines" is ~2.5x faster. With short lines memchr's per-call cost wins the other way, so
    the replace is capped at one newline per 48 bytes and a denser block is counted directly:
    the worst case costs about twice a plain count, never the ~40x an uncapped replace would."""
    if end is None:
        end = len(buf)
    if end - start < 4096:
        return buf.count(b"\n", start, end)
    part = buf[start:end] if (start or end != len(buf)) else buf
    cap = len(part) // 48
    removed = len(part) - len(part.replace(b"\n", b"", cap))
    if removed >= cap:
        return part.count(b"\n")
    return removed


class LineIndex:
    """Checkpoints (offset, newlines before offset) every `block_size` bytes of one file."""

    def __init__(self, path: Path, size: int, block_size: int = BLOCK_SIZE):
        self.path = path
        self.size = size
        self.block_size = block_size
        self.offsets = array("q", [0])
        self.lines_before = array("q", [0])
        self.scanned = 0  # bytes counted so far (a multiple of block_size until the end)
        self.newlines = 0  # newlines in the scanned bytes
        self.ends_with_newline = False
        self.lock = threading.Lock()

    @property
    def complete(self) -> bool:
        return self.scanned >= self.size

    @property
    def total_lines(self) -> int | None:
        """Line count as `cat -n` numbers them (None until the index reached the end)."""
        if not self.complete:
            return None
        return self.newlines + (1 if self.size and not self.ends_with_newline else 0)

    def extend(self, f, *, until_newlines: int | None = None, cancel=None) -> None:
        """Scan forward until at least `until_newlines` newlines are counted (None: to the end).

        The first OVERLAP_AFTER bytes of a call are read one pread per block (a shallow page of
        a big file reads no further than it needs); past that a reader thread reads ahead into
        reused buffers while this thread counts, so the copy out of the page cache (which
        releases the GIL) and the count (which holds it) run at the same time. Blocks, checkpoints
        and the handling of a file that shrinks are the same either way."""
        if self.complete or (until_newlines is not None and self.newlines >= until_newlines):
            return
        since_cancel = 0
        blocks = self._blocks(f.fileno())
        try:
            for buf, length in blocks:
                if self.scanned and self.offsets[-1] != self.scanned:
                    self.offsets.append(self.scanned)
                    self.lines_before.append(self.newlines)
                self.newlines += count_newlines(buf) if length == len(buf) else count_newlines(buf, 0, length)
                self.ends_with_newline = buf[length - 1] == 0x0A
                self.scanned += length
                if until_newlines is not None and self.newlines >= until_newlines:
                    break
                since_cancel += length
                if cancel is not None and since_cancel >= CHUNK_SIZE:
                    since_cancel = 0
                    cancel()
        finally:
            blocks.close()  # stops and joins the reader thread, whatever ended the scan

    def _blocks(self, fd: int):
        """(buffer, length) of each next block from `self.scanned`, up to `self.size`.

        A short read means the file shrank (a regular file reads short only at its end): the
        size becomes where it ended, set before the block is handed out. A buffer is counted by
        the caller before the next one is asked for, so the reader may refill it after that."""
        pos = self.scanned
        if not _CAN_OVERLAP or self.size - pos <= OVERLAP_AFTER:
            yield from self._read_here(fd, pos, self.size)
            return
        pos = yield from self._read_here(fd, pos, pos + OVERLAP_AFTER)
        if pos >= self.size:
            return
        try:
            reader = _ReadAhead(fd, pos, self.size, self.block_size)
        except RuntimeError:  # no thread to be had (a process or memory limit): read here
            yield from self._read_here(fd, pos, self.size)
            return
        try:
            while True:
                got = reader.next()
                if got is None:
                    return
                group, n, want = got
                if n < want:
                    self.size = pos + n
                for buf in group:
                    if n <= 0:
                        break
                    length = min(len(buf), n)
                    yield buf, length
                    pos += length
                    n -= length
                reader.release(group)
                if pos >= self.size:
                    return
        finally:
            reader.close()

    def _read_here(self, fd: int, pos: int, end: int):
        """Blocks read one pread each, from `pos` up to `end` (or the size, if less); returns
        where it stopped."""
        while pos < min(end, self.size):
            want = min(self.block_size, self.size - pos)
            block = os.pread(fd, want, pos)
            if len(block) < want:
                self.size = pos + len(block)
            if not block:
                break
            yield block, len(block)
            pos += len(block)
        return pos

    def newlines_before(self, fd: int, offset: int) -> int | None:
        """Newlines in the file's bytes [0, offset), from the index and one block read through
        `fd`; None when the index has not scanned that far."""
        with self.lock:
            if offset > self.scanned:
                return None
            i = bisect.bisect_right(self.offsets, offset) - 1
            base, before = self.offsets[i], self.lines_before[i]
        return before + os.pread(fd, offset - base, base).count(b"\n")

    def line_start(self, f, line: int, cancel=None) -> int | None:
        """Byte offset where 0-based `line` starts, or None if the file has fewer lines."""
        if line == 0:
            return 0 if self.size else None
        self.extend(f, until_newlines=line, cancel=cancel)
        if self.newlines < line:
            return None
        if self.newlines == line and self.complete and self.ends_with_newline:
            return None  # the newline ends the last line; nothing starts after it
        # The last checkpoint with fewer than `line` newlines before it holds the line-th newline.
        i = bisect.bisect_left(self.lines_before, line) - 1
        base, before = self.offsets[i], self.lines_before[i]
        f.seek(base)
        block = f.read(self.block_size)
        pos = -1
        for _ in range(line - before):
            pos = block.index(b"\n", pos + 1)
        return base + pos + 1


class _ReadAhead:
    """A thread that reads [start, end) of a file into a fixed set of reused buffers, a group of
    blocks per preadv, at most READ_AHEAD groups ahead of the thread that counts them.

    Reused buffers keep memory bounded and spare the page faults of a fresh allocation per
    block; one read per group keeps the hand-offs (and the GIL changing hands) few. `close`
    stops the thread and waits for it: it never outlives the scan, also on cancel or error."""

    def __init__(self, fd: int, start: int, end: int, block_size: int):
        per = max(1, min(MAX_BUFFERS, READ_UNIT // block_size))
        self._free: queue.SimpleQueue = queue.SimpleQueue()
        self._ready: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(READ_AHEAD):
            self._free.put([bytearray(block_size) for _ in range(per)])
        self._stop = False
        self._thread = threading.Thread(target=self._run, args=(fd, start, end, block_size * per),
                                        name="codebelt-line-scan", daemon=True)
        self._thread.start()

    def _run(self, fd: int, pos: int, end: int, unit: int) -> None:
        try:
            while pos < end:
                group = self._free.get()
                if self._stop:
                    return
                want = min(unit, end - pos)
                # Bytes past `end` (the file grew) are not the index's: it covers the size it was made for.
                n = min(os.preadv(fd, group, pos), want)
                self._ready.put((group, n, want))
                if n < want:
                    return
                pos += n
        except BaseException as e:  # noqa: BLE001 - handed to the counting thread, raised there
            self._ready.put(e)
        finally:
            self._ready.put(None)

    def next(self) -> tuple[list[bytearray], int, int] | None:
        """The next group read: (buffers, bytes read, bytes asked for); None once the thread ended."""
        item = self._ready.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def release(self, group: list[bytearray]) -> None:
        self._free.put(group)

    def close(self) -> None:
        self._stop = True
        self._free.put(None)  # wakes the thread if it waits for a buffer
        self._thread.join()


@dataclass
class Page:
    """Rendered `cat -n` rows and where they came from."""

    text: str
    start_line: int  # 1-based first line shown
    end_line: int  # 1-based last line (partly) shown; start_line - 1 when nothing was shown
    rows: int
    total_lines: int | None  # None: the file is big and was not scanned to its end
    next_offset: int | None  # where to continue, or None when the page reached the end
    stopped_by: str | None = None  # "limit" | "budget" | None
    cut_line: int | None = None  # a line too long for the budget, only partly shown
    notes: list[str] = field(default_factory=list)


def format_row(number: str, text: str) -> str:
    """One `cat -n` row as Claude Code's Read shows it: the number, a tab, the line."""
    return f"{number}\t{text}"


Row = Callable[[str, str], str]  # (line number, line) → one rendered row


def row_format(template: str | None) -> Row:
    """The row renderer of a template over `number` and `text` (a compat profile's; older Claude
    Code releases padded the number and used an arrow, `{number:>6}→{text}`)."""
    if template is None or template == "{number}\t{text}":
        return format_row  # the common case stays a plain f-string
    return lambda number, text: template.format(number=number, text=text)


def _rows_of_line(pieces, fmt: TextFormat):
    """Yield the display rows (≤ MAX_LINE_CHARS each) of one line given as byte pieces."""
    decoder = codecs.getincrementaldecoder(fmt.encoding)(fmt.errors)
    pending = ""
    for piece, last in pieces:
        pending += decoder.decode(piece, final=last)
        if last:
            if pending.endswith("\n"):
                pending = pending[:-1]
            if pending.endswith("\r"):
                pending = pending[:-1]
        while len(pending) > MAX_LINE_CHARS or (last and pending):
            yield for_display(pending[:MAX_LINE_CHARS])
            pending = pending[MAX_LINE_CHARS:]
    # An empty line yields one empty row.


def _line_pieces(f):
    """Byte pieces of the next line: [(bytes, is_last_piece)]; empty list at end of file."""
    while True:
        piece = f.readline(PIECE_BYTES)
        if not piece:
            return
        last = piece.endswith(b"\n") or len(piece) < PIECE_BYTES
        if not last:
            # readline stopped at the size limit; peek to see whether the file ends right here.
            if not f.peek(1)[:1]:
                last = True
        yield piece, last
        if last:
            return


FAST_CHUNK = 256 * 1024  # lines are split from chunks this size; longer lines are streamed


def render_rows(f, fmt: TextFormat, first_line: int, limit: int, max_chars: int, row: Row = format_row) -> Page:
    """Rows from the current position of `f` (a buffered binary file at the start of a line).

    Lines are cut from 256 KB chunks with bytes.split and decoded one by one; a line longer than
    a chunk is streamed in pieces, so even a 2 GB single line costs only what is shown."""
    out: list[str] = []
    used = rows = 0
    stopped_by: str | None = None
    cut_line: int | None = None
    line = first_line - 1  # the line being rendered
    last_shown = first_line - 1
    encoding = fmt.encoding

    def emit(number: str, text: str) -> bool:
        nonlocal used, rows, stopped_by, last_shown
        rendered = row(number, text)
        if rows >= limit:
            stopped_by = "limit"
        elif used + len(rendered) + 1 > max_chars and rows > 0:
            stopped_by = "budget"
        if stopped_by:
            return False
        out.append(rendered)
        used += len(rendered) + 1
        rows += 1
        last_shown = line
        return True

    def emit_line(text: str) -> bool:
        nonlocal cut_line
        if len(text) <= MAX_LINE_CHARS:
            return emit(str(line), text)
        for k in range(0, len(text), MAX_LINE_CHARS):
            if not emit(str(line) if k == 0 else f"{line}.{k // MAX_LINE_CHARS}", text[k:k + MAX_LINE_CHARS]):
                if k:
                    cut_line = line
                return False
        return True

    pos = f.tell()
    done = False
    while not done:
        f.seek(pos)
        data = f.read(FAST_CHUNK)
        if not data:
            break
        at_eof = len(data) < FAST_CHUNK
        parts = data.split(b"\n")
        tail = parts.pop()
        if at_eof and tail:
            parts.append(tail)  # the last line has no newline
        if not parts:
            # One line longer than a chunk: stream it in pieces.
            line += 1
            f.seek(pos)
            for k, piece in enumerate(_rows_of_line(_line_pieces(f), fmt)):
                if not emit(str(line) if k == 0 else f"{line}.{k}", piece):
                    if k:
                        cut_line = line
                    done = True
                    break
            pos = f.tell()
            continue
        for raw in parts:
            line += 1
            if not emit_line(raw.removesuffix(b"\r").decode(encoding, "replace")):
                done = True
                break
            pos += len(raw) + 1
        if at_eof:
            break
    next_offset = None
    if stopped_by:
        if cut_line is not None and cut_line == first_line:
            next_offset = cut_line + 1  # the line alone outgrows a page: move past it
        elif cut_line is not None:
            next_offset = cut_line
        else:
            next_offset = last_shown + 1
    return Page(
        text="\n".join(out),
        start_line=first_line,
        end_line=last_shown,
        rows=rows,
        total_lines=None,
        next_offset=next_offset,
        stopped_by=stopped_by,
        cut_line=cut_line,
    )


def read_page(
    source: Path | BinaryIO,
    fmt: TextFormat,
    index: LineIndex,
    offset: int,
    limit: int,
    max_chars: int,
    cancel=None,
    row: Row = format_row,
) -> Page:
    """Render up to `limit` rows from 1-based line `offset`, within `max_chars` characters.

    `source` is the file: an open buffered binary file (the caller's, left open), or a path."""
    if not isinstance(source, (str, os.PathLike)):
        return _read_page(source, fmt, index, offset, limit, max_chars, cancel, row)
    with open(source, "rb", buffering=PIECE_BYTES) as f:
        return _read_page(f, fmt, index, offset, limit, max_chars, cancel, row)


def _read_page(f, fmt: TextFormat, index: LineIndex, offset: int, limit: int, max_chars: int, cancel,
               row: Row) -> Page:
    with index.lock:
        start = index.line_start(f, offset - 1, cancel=cancel)
        if start is None:
            index.extend(f, cancel=cancel)
    if start is None:
        return Page("", offset, offset - 1, 0, index.total_lines, None)
    if start == 0 and fmt.bom:
        start = len(fmt.bom)  # the BOM is not content
    f.seek(start)
    page = render_rows(f, fmt, offset, limit, max_chars, row)
    if page.next_offset is None:
        # The page reached the end of the file, so the line count is known without a scan.
        page.total_lines = page.end_line
    else:
        page.total_lines = index.total_lines
    return page


def read_page_text(text: str, offset: int, limit: int, max_chars: int, row: Row = format_row) -> Page:
    """Paging for files decoded whole (UTF-16): same rows, from a string."""
    import io

    data = io.BufferedReader(io.BytesIO(text.encode("utf-8", "surrogateescape")))
    total = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    if offset > total:
        return Page("", offset, offset - 1, 0, total, None)
    # Skip to the line, then reuse the byte renderer on the UTF-8 form of the text.
    pos = 0
    for _ in range(offset - 1):
        pos = text.index("\n", pos) + 1
    data.seek(len(text[:pos].encode("utf-8", "surrogateescape")))
    page = render_rows(data, TextFormat("utf-8"), offset, limit, max_chars, row)
    page.total_lines = total
    return page


class LineIndexCache:
    """A per-session LRU of LineIndex objects (a session service)."""

    capacity = 16

    def __init__(self) -> None:
        self._items: OrderedDict[tuple, LineIndex] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, path: Path, st: os.stat_result, block_size: int = BLOCK_SIZE) -> LineIndex:
        key = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, block_size)
        with self._lock:
            index = self._items.get(key)
            if index is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return index
            self.misses += 1
            # Drop stale indexes of the same path: the file changed.
            for old in [k for k in self._items if k[0] == key[0]]:
                del self._items[old]
            index = LineIndex(path, st.st_size, block_size)
            self._items[key] = index
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
            return index

    def peek(self, path: Path, st: os.stat_result, block_size: int = BLOCK_SIZE) -> LineIndex | None:
        """The index of exactly this file state if one exists (never creates one)."""
        key = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, block_size)
        with self._lock:
            return self._items.get(key)

    def close(self) -> None:
        with self._lock:
            self._items.clear()
