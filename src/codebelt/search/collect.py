"""Consumers that turn rg's NUL-separated output into bounded, ordered result pages.

rg is always run with `--null` (`-0`): a path is followed by a NUL byte instead of `:`, so
colons, spaces and non-UTF-8 bytes in file names parse unambiguously. Paths arrive relative to
the directory rg ran in, prefixed with `./`.

Memory stays bounded: file lists keep only the best `keep` entries in a heap (plus a count),
content keeps at most the page being built.
"""

from __future__ import annotations

import heapq
import os
from dataclasses import dataclass
from typing import Callable

from .ripgrep import RecordReader

# visible(abs_path_str) -> bool: False hides a result (a Read deny rule covers it).
Visible = Callable[[str], bool]


def decode_path(raw: bytes) -> str:
    """A file name as rg printed it, as a filesystem str (non-UTF-8 bytes kept via surrogates)."""
    if raw.startswith(b"./"):
        raw = raw[2:]
    return os.fsdecode(raw)


def display(path: str) -> str:
    """What the model sees: valid text, undecodable bytes shown as \\xNN."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")


def path_key(path: str) -> tuple[bytes, ...]:
    """rg's `--sort path` order: component by component, bytewise (so `a/b` < `a-c`)."""
    return tuple(os.fsencode(path).split(b"/"))


class TopK:
    """The `k` smallest entries seen so far (k=None keeps all); counts everything.

    Entries are tuples compared as they are (key first; keys are unique). They are appended
    to a buffer that is cut back to the best `k` with `heapq.nsmallest` (C code) whenever it
    reaches 2k + 1024 entries: memory stays O(k) and the per-entry cost is one append, much
    less than a heap push through Python comparison methods.
    """

    def __init__(self, k: int | None):
        self.k = k
        self.buf: list[tuple] = []
        self.seen = 0
        self._prune_at = None if k is None else 2 * k + 1024

    def add(self, entry: tuple) -> None:
        self.seen += 1
        self.buf.append(entry)
        if self._prune_at is not None and len(self.buf) >= self._prune_at:
            self.prune()

    def extend(self, entries: list[tuple]) -> None:
        self.seen += len(entries)
        self.buf += entries
        if self._prune_at is not None and len(self.buf) >= self._prune_at:
            self.prune()

    def prune(self) -> None:
        if self.k is not None and len(self.buf) > self.k:
            self.buf = heapq.nsmallest(self.k, self.buf)

    def sorted(self) -> list[tuple]:
        self.prune()
        return sorted(self.buf)

    def clear(self) -> None:
        self.buf = []
        self.seen = 0


class _Filtered(RecordReader):
    def __init__(self, cwd: str, visible: Visible | None, sep: bytes):
        super().__init__(sep, max_record=64 * 1024)
        self.cwd = cwd
        self.visible = visible
        self.hidden = 0
        self._verdicts: dict[str, bool] = {}

    def _shown(self, rel: str) -> bool:
        if self.visible is None:
            return True
        v = self._verdicts.get(rel)
        if v is None:
            v = self._verdicts[rel] = bool(self.visible(os.path.join(self.cwd, rel)))
            if not v:
                self.hidden += 1
        return v

    def reset(self) -> None:
        super().reset()
        self.hidden = 0
        self._verdicts.clear()


class NewestFiles(_Filtered):
    """Paths (`rg --files -0` or `rg -l -0`), newest first by mtime (or oldest first), ties by path.

    Each path is stat'ed as it arrives, while rg keeps walking on the other cores; only the
    best `keep` stay in memory. Paths stay bytes (and are stat'ed relative to a directory fd)
    until the page is known: stat'ing is most of the cost of a big listing.
    Use as a context manager (it holds that directory fd).
    """

    def __init__(self, cwd: str, keep: int | None, visible: Visible | None = None, oldest_first: bool = False):
        super().__init__(cwd, visible, b"\0")
        self.top = TopK(keep)
        self._fd: int | None = None
        self._sign = 1 if oldest_first else -1  # oldest first: Claude Code's Glob order

    def __enter__(self) -> "NewestFiles":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def on_record(self, record: bytes, clipped: bool) -> bool:
        if not clipped:
            self.on_records([record])
        return True

    def on_records(self, records: list[bytes]) -> bool:
        # one tight loop per chunk: stat is most of the cost of a big listing
        if self.visible is not None:
            records = [r for r in records if r and self._shown(decode_path(r))]
        if self._fd is None:
            self._fd = os.open(self.cwd, os.O_RDONLY | os.O_DIRECTORY)
        fd, stat, sign = self._fd, os.stat, self._sign
        last = 1 << 62 if sign > 0 else 0
        entries = []
        for rec in records:
            if rec:
                try:
                    entries.append((sign * stat(rec, dir_fd=fd).st_mtime_ns, rec))
                except OSError:
                    entries.append((last, rec))  # vanished or unreadable: a match, sorted last
        self.top.extend(entries)
        return True

    @property
    def total(self) -> int:
        return self.top.seen

    def paths(self) -> list[str]:
        return [decode_path(r) for _, r in self.top.sorted()]

    def reset(self) -> None:
        super().reset()
        self.top.clear()

class Counts(_Filtered):
    """`rg --count -0` records `path NUL N`, sorted by path; the total counts every file."""

    def __init__(self, cwd: str, keep: int | None, visible: Visible | None = None):
        super().__init__(cwd, visible, b"\n")
        self.top = TopK(keep)
        self.total_matches = 0
        self.notes: list[str] = []

    def on_record(self, record: bytes, clipped: bool) -> bool:
        path, nul, n = record.partition(b"\0")
        if not nul:
            if record.strip():
                self.notes.append(record.decode("utf-8", "replace"))
            return True
        rel = decode_path(path)
        if not self._shown(rel):
            return True
        try:
            count = int(n)
        except ValueError:
            return True
        self.total_matches += count
        self.top.add((path_key(rel), rel, count))
        return True

    @property
    def total_files(self) -> int:
        return self.top.seen

    def entries(self) -> list[tuple[str, int]]:
        return [(rel, count) for _, rel, count in self.top.sorted()]

    def reset(self) -> None:
        super().reset()
        self.top.clear()
        self.total_matches = 0
        self.notes.clear()


@dataclass
class Line:
    path: str  # relative to rg's cwd, filesystem str
    number: int
    is_match: bool
    text: str
    sep_before: bool = False  # a `--` separator precedes this line within its file


def _parse_line(record: bytes) -> tuple[bytes, int, bool, str] | None:
    """`path NUL N:text` (match) or `path NUL N-text` (context) → parts; None if not a line."""
    path, nul, rest = record.partition(b"\0")
    if not nul:
        return None
    i = 0
    n = len(rest)
    while i < n and 48 <= rest[i] <= 57:
        i += 1
    if i == 0 or i >= n or rest[i] not in (58, 45):  # ':' or '-'
        return None
    return path, int(rest[:i]), rest[i] == 58, rest[i + 1 :].decode("utf-8", "replace")


class ContentLines(_Filtered):
    """`rg -n -0` content output (matches, context lines, `--` separators).

    Two ways to run, see `search.grep`:
    - `ordered=False` (rg ran in parallel, files arrive in any order): keep every line up to
      `cap` lines / `byte_cap` bytes; if either is passed, stop (`overflow`) so the caller can
      rerun with `--sort path`. Otherwise `page()` sorts files by path and slices the page.
    - `ordered=True` (rg ran with `--sort path`): skip `offset` lines without storing them, keep
      the page, read one more line to know whether more remain, then stop.
    Lines of a file denied to Read are dropped before they are counted.
    """

    def __init__(
        self,
        cwd: str,
        *,
        offset: int,
        limit: int | None,
        max_chars: int,
        ordered: bool,
        visible: Visible | None = None,
        cap: int | None = None,
        byte_cap: int = 4 << 20,
    ):
        super().__init__(cwd, visible, b"\n")
        self.offset, self.limit, self.max_chars, self.ordered = offset, limit, max_chars, ordered
        self.cap, self.byte_cap = cap, byte_cap
        self.notes: list[str] = []
        self._reset_state()

    def _reset_state(self) -> None:
        self.lines: list[Line] = []
        self.count = 0  # lines seen (after filtering)
        self.more = False  # ordered: a line beyond the page exists
        self.overflow = False  # unordered: too much to sort in memory
        self._bytes = 0
        self._page_chars = 0
        self._last_path: bytes | None = None
        self._pending_sep = False

    def reset(self) -> None:
        super().reset()
        self.notes.clear()
        self._reset_state()

    def on_record(self, record: bytes, clipped: bool) -> bool:
        if record == b"--":
            self._pending_sep = True
            return True
        parsed = _parse_line(record)
        if parsed is None:
            if record.strip():  # e.g. "path: binary file matches (found "\0" byte …)"
                self.notes.append(record.decode("utf-8", "replace").removeprefix("./"))
            return True
        raw_path, number, is_match, text = parsed
        same_file = raw_path == self._last_path
        sep = self._pending_sep and same_file
        self._pending_sep = False
        self._last_path = raw_path
        rel = decode_path(raw_path)
        if not self._shown(rel):
            return True
        if clipped:
            text += " [... line clipped]"
        self.count += 1
        line = Line(rel, number, is_match, text, sep)
        if not self.ordered:
            self.lines.append(line)
            self._bytes += len(record)
            if (self.cap is not None and self.count > self.cap) or self._bytes > self.byte_cap:
                self.overflow = True
                return False
            return True
        if self.count <= self.offset:
            return True
        if (self.limit is not None and len(self.lines) >= self.limit) or (
            self._page_chars >= self.max_chars
        ):
            self.more = True
            return False
        self.lines.append(line)
        # a lower bound of the formatted length, so that stopping here always leaves the
        # formatter more than max_chars to cut (and say so)
        self._page_chars += len(rel) + len(text) + 3
        return True

    def progress(self) -> float:
        """Ordered mode: the fraction of the page found so far (1.0 = complete)."""
        by_chars = self._page_chars / self.max_chars if self.max_chars > 0 else 0.0
        if self.limit is None:
            return by_chars
        return max(self.count / (self.offset + self.limit + 1), by_chars)

    def page(self) -> list[Line]:
        """The requested page (unordered mode sorts by file path first, keeping line order)."""
        if self.ordered:
            return self.lines
        order: dict[str, int] = {}
        for ln in self.lines:
            order.setdefault(ln.path, len(order))
        ranked = sorted(order, key=path_key)
        rank = {p: i for i, p in enumerate(ranked)}
        ordered = sorted(self.lines, key=lambda ln: rank[ln.path])  # stable: keeps line order
        end = None if self.limit is None else self.offset + self.limit
        return ordered[self.offset : end]
