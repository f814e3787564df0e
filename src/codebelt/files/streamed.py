"""One exact edit of a file without holding the file in memory.

The common Edit — one `old_string` that matches exactly (or after LF→CRLF), once or with
replace_all — is found by scanning the open file in chunks through one reused buffer, and the new
file is written as a stream of pieces: the unchanged ranges copied from the same descriptor, and
the new text in between. Nothing the size of the file is allocated, and the newlines before the
edit are counted once, during the scan, for the snippet's line numbers.

Everything is read from one descriptor whose stat passed the read-before-write check, and just
before the rename both that descriptor and the path must still show the same inode, size and
mtime — otherwise the write is abandoned with the "modified since read" error and the file is
untouched. Anything unusual (no match, several matches, a needle longer than half a chunk, an
encoding where bytes are not characters) returns None and the caller takes the in-memory path,
which also produces every error message.
"""

from __future__ import annotations

import errno
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .atomic import AtomicWriteError, FileChanged, write_atomic
from .beneath import ANYWHERE, Beneath
from .codec import SNIFF_BYTES, BinaryFile, TextFormat, apply_eol, sniff
from .lines import LineIndexCache, count_newlines
from .matching import EditError
from .state import HASH_LIMIT, MODIFIED, FileStates

CHUNK = 4 * 1024 * 1024  # bytes per read while scanning and copying
CONTEXT_PROBE = 64 * 1024  # bytes read at a time around the edit for the snippet


@dataclass
class StreamedEdit:
    size: int  # bytes of the new file
    count: int  # replacements made
    window: bytes  # the new file's bytes around the edited region (for the snippet)
    window_lo: int  # edited region within `window`
    window_hi: int
    line_base: int  # newlines in the new file before `window`
    region: tuple[int, int]  # edited region in the new file


def try_streamed_edit(
    path: Path,
    old_string: str,
    new_string: str,
    replace_all: bool,
    byte_safe: set[str],
    states: FileStates,
    show: Callable[[Path], str],
    write: Callable = write_atomic,
    line_indexes: LineIndexCache | None = None,
    max_bytes: int | None = None,
    beneath: Beneath = ANYWHERE,
) -> tuple[StreamedEdit, TextFormat] | None:
    """Apply one exact edit by streaming, or None when the in-memory path must decide.

    `write` is the atomic writer (the caller's, so the whole package writes through one place).
    `line_indexes`: the session's line indexes; one for this exact file state (Read builds them)
    gives the edit's line number without counting newlines during the scan. `beneath`: where the
    resolved path is opened (no symlink followed) and written."""
    if not old_string or old_string == new_string or path.suffix.lower() == ".ipynb":
        return None
    try:
        opened = beneath.open_regular(path)
    except OSError:
        return None
    try:
        if opened.st.st_size == 0:
            return None
        return _edit_open_file(opened.fd, opened.st, path, old_string, new_string, replace_all, byte_safe, states,
                               show, write, line_indexes, max_bytes, beneath)
    finally:
        opened.close_soon()  # the file it replaced is freed off the call's path


def _edit_open_file(fd, st, path, old_string, new_string, replace_all, byte_safe, states, show, write,
                    line_indexes, max_bytes, beneath):
    size = st.st_size
    try:
        head = os.pread(fd, SNIFF_BYTES, 0)
        fmt = sniff(head, at_eof=size <= SNIFF_BYTES)
    except (OSError, BinaryFile):
        return None
    if fmt.encoding not in byte_safe or (fmt.eol == "mixed" and "\n" in new_string):
        return None
    if states.check(path, st, fd=fd):
        return None  # the in-memory path raises the exact message
    start = len(fmt.bom) if fmt.bom and head.startswith(fmt.bom) else 0
    try:
        new = apply_eol(new_string, "\r\n") if fmt.eol == "\r\n" else new_string
        new_b = new.encode(fmt.encoding, fmt.errors)
        old_b = old_string.encode(fmt.encoding, fmt.errors)
        alt = None
        if "\n" in old_string:
            alt = (apply_eol(old_string, "\r\n").encode(fmt.encoding, fmt.errors),
                   apply_eol(new_string, "\r\n").encode(fmt.encoding, fmt.errors))
    except UnicodeEncodeError:
        return None
    index = line_indexes.peek(path, st) if line_indexes is not None else None
    count = index is None or index.scanned < size
    buf = bytearray(CHUNK)
    found = _scan(fd, size, start, old_b, replace_all, buf, count)
    if found is None:
        return None
    starts, newlines = found
    if not starts and alt is not None and alt[0] != old_b:
        old_b, new_b = alt
        found = _scan(fd, size, start, old_b, replace_all, buf, count)
        if found is None:
            return None
        starts, newlines = found
    if not starts or (len(starts) > 1 and not replace_all):
        return None
    if not count:
        newlines = index.newlines_before(fd, starts[0])

    # The new file as pieces: ("src", offset, length) copied from fd, or literal bytes.
    pieces: list[tuple[int, int] | bytes] = []
    prev = 0
    for s in starts:
        if s > prev:
            pieces.append((prev, s - prev))
        if new_b:
            pieces.append(new_b)
        prev = s + len(old_b)
    if prev < size:
        pieces.append((prev, size - prev))
    new_size = size + len(starts) * (len(new_b) - len(old_b))
    if max_bytes is not None and new_size > max_bytes:
        raise EditError(
            f"The edit would make the file {new_size:,} bytes long, over the limit of {max_bytes:,} "
            "(setting edit.maxFileMB); nothing was written. Replace fewer occurrences, or a longer "
            "old_string with a shorter new_string.")
    lo = starts[0]
    hi = starts[-1] + len(new_b) + (len(starts) - 1) * (len(new_b) - len(old_b))

    window, wlo, line_base = _window(fd, pieces, lo, hi, new_size, newlines)
    digest = hashlib.sha256() if new_size <= HASH_LIMIT else None

    def stream() -> Iterator[bytes | memoryview]:
        # Small pieces (replace_all: one between each two matches) are gathered into blocks of
        # about CHUNK bytes, read through one block of the file: a write and a read per block,
        # not per piece (a million of each for a 2 MB file of short lines).
        view = memoryview(buf)
        blocks = _Blocks(fd, path, show)
        out = bytearray()
        for piece in pieces:
            if isinstance(piece, bytes):
                out += piece
            elif piece[1] < CHUNK // 4:
                out += blocks.read(*piece)
            else:
                if out:
                    yield from _counted(out, digest)
                    out = bytearray()
                off, length = piece
                while length:
                    n = _pread_into(fd, view[:min(length, len(buf))], off, path, show)
                    yield from _counted(view[:n], digest)
                    off += n
                    length -= n
            if len(out) >= CHUNK:
                yield from _counted(out, digest)
                out = bytearray()
        if out:
            yield from _counted(out, digest)

    def unchanged() -> None:
        """The bytes copied are the bytes checked: the descriptor still shows the same inode,
        size and mtime (the writer then checks the path holds that same file)."""
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) != (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns):
            raise EditError(MODIFIED, reason="modified")

    written = _write(write, path, stream(), unchanged, show, beneath, st)
    states.record_written(path, fmt, digest.hexdigest() if digest is not None else None, written)
    edit = StreamedEdit(new_size, len(starts), window, lo - wlo, hi - wlo, line_base, (lo, hi))
    return edit, fmt


def _write(write, path, chunks, before_replace, show, beneath, st):
    try:
        return write(path, chunks, before_replace=before_replace, beneath=beneath, expect=st)
    except FileChanged as e:
        if e.errno == errno.ENOENT:
            raise EditError(f"{show(path)} was deleted. {MODIFIED}") from None
        raise EditError(MODIFIED, reason="modified") from None
    except AtomicWriteError as e:
        reason = str(e).replace(str(path), show(path))
        raise EditError(f"Could not write {show(path)}: {reason}. The file is unchanged.") from None


def _counted(chunk, digest) -> Iterator[bytes | memoryview]:
    if digest is not None:
        digest.update(chunk)
    yield chunk


class _Blocks:
    """Reads of small ranges at rising offsets of `fd`, through one block of CHUNK bytes."""

    def __init__(self, fd: int, path: Path | None = None, show=None):
        self.fd, self.path, self.show = fd, path, show
        self.base, self.data = 0, b""

    def read(self, off: int, length: int) -> bytes:
        if not (self.base <= off and off + length <= self.base + len(self.data)):
            if length > CHUNK:
                return self._pread(length, off)
            self.base, self.data = off, self._pread(CHUNK, off, at_least=length)
        return self.data[off - self.base:off - self.base + length]

    def _pread(self, length: int, off: int, at_least: int | None = None) -> bytes:
        try:
            data = os.pread(self.fd, length, off)
        except OSError as e:
            if self.show is None:
                raise
            raise EditError(f"Cannot read {self.show(self.path)}: {e.strerror}. The file is unchanged.") from None
        if len(data) < (length if at_least is None else at_least):
            raise EditError(MODIFIED, reason="modified")  # it shrank under us
        return data


def _pread_into(fd: int, view: memoryview, offset: int, path: Path, show) -> int:
    try:
        n = os.preadv(fd, [view], offset)
    except OSError as e:
        raise EditError(f"Cannot read {show(path)}: {e.strerror}. The file is unchanged.") from None
    if n <= 0:
        raise EditError(MODIFIED, reason="modified")  # it shrank under us
    return n


def _scan(fd: int, size: int, start: int, needle: bytes, want_all: bool, buf: bytearray, count: bool = True):
    """(match offsets, newlines before the first match — 0 unless `count`), stopping at a second
    match unless `want_all`; None when the needle is too long to scan for in chunks."""
    m = len(needle)
    if m > len(buf) // 2:
        return None
    view = memoryview(buf)
    starts: list[int] = []
    newlines = 0
    counted = start if count else -1  # newlines are counted in [start, counted) until the first match
    base = start  # file offset of buf[0]
    pos = start  # where the next search begins
    while base < size:
        n = os.preadv(fd, [view[:min(len(buf), size - base)]], base)
        if n <= 0:
            return None  # shrank while scanning: let the in-memory path report it
        i = max(pos - base, 0)  # pos may lie before the overlap start
        while True:
            j = buf.find(needle, i, n)
            if j < 0:
                break
            if not starts and counted >= 0:
                newlines += count_newlines(buf, counted - base, j)
                counted = -1
            starts.append(base + j)
            if len(starts) > 1 and not want_all:
                return starts, newlines
            i = j + m
        pos = base + i
        if base + n >= size:
            break
        nxt = max(pos, base + n - (m - 1))  # keep an overlap so a match across chunks is found
        if counted >= 0:
            newlines += count_newlines(buf, counted - base, nxt - base)
            counted = nxt
        base = nxt
    return starts, newlines


def _window(fd, pieces, lo: int, hi: int, new_size: int, newlines_before_lo: int):
    """Bytes of the new file from a few lines before `lo` to a few lines after `hi`, where the
    window starts (in the new file) and the newlines before it. The bytes before `lo` are the
    original's, so they are read from fd directly."""
    want = 5  # context (up to 4: older Claude Code releases' snippets) + the edited line's own start
    back = CONTEXT_PROBE
    while True:
        a = max(0, lo - back)
        before = os.pread(fd, lo - a, a)
        cut = len(before)
        for _ in range(want):
            cut = before.rfind(b"\n", 0, cut)
            if cut < 0:
                break
        if cut >= 0 or a == 0:
            wlo = a + cut + 1 if cut >= 0 else 0
            break
        back *= 4
    prefix = before[wlo - a:]
    line_base = newlines_before_lo - prefix.count(b"\n")
    # Forward: the edited region and a few lines after it.
    out = [prefix]
    pos = lo
    end = min(new_size, max(hi, lo))
    out.append(_read_new(fd, pieces, lo, end))
    pos = end
    seen = 0
    while pos < new_size and seen <= want:
        piece = _read_new(fd, pieces, pos, min(new_size, pos + CONTEXT_PROBE))
        out.append(piece)
        seen += piece.count(b"\n")
        pos += len(piece)
    return b"".join(out), wlo, line_base


def _read_new(fd, pieces, a: int, b: int) -> bytes:
    """Bytes [a, b) of the new file described by `pieces`."""
    out = []
    at = 0
    blocks = _Blocks(fd)
    for piece in pieces:
        length = len(piece) if isinstance(piece, bytes) else piece[1]
        lo, hi = max(a, at), min(b, at + length)
        if lo < hi:
            if isinstance(piece, bytes):
                out.append(piece[lo - at:hi - at])
            else:
                out.append(blocks.read(piece[0] + lo - at, hi - lo))
        at += length
        if at >= b:
            break
    return b"".join(out)
