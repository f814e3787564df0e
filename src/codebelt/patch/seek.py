"""Find a run of lines in a file, with four passes of decreasing strictness.

1. exact; 2. ignoring trailing whitespace; 3. ignoring leading and trailing whitespace;
4. with typographic punctuation normalised to ASCII (dashes, quotes, odd spaces).

The first pass that finds the run wins, scanning forward from `start`. An End-of-File chunk is
tried at the very end of the file first (every pass), then anywhere after `start`.

Each pass compares precomputed keys of the file's lines, so a search is one C-speed
`list.index` scan for candidates plus a short slice comparison, not a Python loop per line.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..files.runs import find_run as _find

_PUNCT = {c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"}
_PUNCT.update({c: "'" for c in "\u2018\u2019\u201a\u201b"})
_PUNCT.update({c: '"' for c in "\u201c\u201d\u201e\u201f"})
_PUNCT.update({c: " " for c in "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"})
_PUNCT_TABLE = str.maketrans(_PUNCT)


def normalise(s: str) -> str:
    """Pass-4 key: trimmed, typographic punctuation and odd spaces mapped to ASCII."""
    return s.translate(_PUNCT_TABLE).strip()


PASSES: list[tuple[str, Callable[[str], str] | None]] = [
    ("exact", None),
    ("trailing whitespace", str.rstrip),
    ("surrounding whitespace", str.strip),
    ("unicode punctuation", normalise),
]


class LineIndex:
    """The lines of one file with lazily computed comparison keys for each pass."""

    def __init__(self, lines: Sequence[str]):
        self.lines = list(lines)
        self._keys: dict[int, list[str]] = {0: self.lines}

    def keys(self, pass_no: int) -> list[str]:
        k = self._keys.get(pass_no)
        if k is None:
            fn = PASSES[pass_no][1]
            assert fn is not None
            k = self._keys[pass_no] = [fn(s) for s in self.lines]
        return k

    def __len__(self) -> int:
        return len(self.lines)


def seek(index: LineIndex, pattern: Sequence[str], start: int = 0, eof: bool = False) -> tuple[int, int] | None:
    """Where `pattern` starts in the file at or after `start`, and which pass found it.

    Returns (line index, pass number 0-3) or None. An empty pattern matches at `start`
    (at the end of the file when `eof`).
    """
    total = len(index)
    if not pattern:
        return (total if eof else min(start, total)), 0
    n = len(pattern)
    if n > total:
        return None
    last = total - n
    ranges = [(last, last)] if eof else []
    if start <= last:
        ranges.append((start, last))
    for lo, hi in ranges:
        for pass_no, (_, fn) in enumerate(PASSES):
            pat = list(pattern) if fn is None else [fn(p) for p in pattern]
            at = _find(index.keys(pass_no), pat, lo, hi)
            if at is not None:
                return at, pass_no
    return None


def seek_header(index: LineIndex, header: str, start: int = 0) -> tuple[int, int] | None:
    """Where an '@@ header' line is, at or after `start`.

    The four passes first (the whole line); then, as a fifth pass, a line that starts with the
    header ('@@ class A' for 'class A(Base):'), because models often abbreviate headers. The old
    lines must still match after it, so a loose header cannot place a change by itself.
    """
    found = seek(index, [header], start)
    if found is not None:
        return found
    want = normalise(header)
    if not want:
        return None
    keys = index.keys(3)
    for i in range(max(start, 0), len(keys)):
        if keys[i].startswith(want):
            return i, 4
    return None
