"""Find a run of lines in a file, with four passes of decreasing strictness.

1. exact; 2. ignoring trailing whitespace; 3. ignoring leading and trailing whitespace;
4. with typographic punctuation normalised to ASCII (dashes, quotes, odd spaces).

The first pass that finds the run wins, scanning forward from `start`. An End-of-File chunk is
tried at the very end of the file first (every pass), then anywhere after `start`.

`other_places` answers the question a first match leaves open: would the run also fit somewhere
else that nothing in the patch rules out? A patch applied at the first of several look-alike
places is silently wrong when another was meant, so such a chunk is refused (`ambiguity_error`).

Each pass compares precomputed keys of the file's lines, so a search is one C-speed
`list.index` scan for candidates plus a short slice comparison, not a Python loop per line.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

from ..errors import PatchApplyError
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
        self._counts: dict[int, Counter[str]] = {}
        # Lines the uniqueness checks may scan before counting every line once instead: a patch
        # of a few chunks scans, one of hundreds of chunks counts (linear either way).
        self._scan_budget = 4 * len(self.lines) + 4_096

    def keys(self, pass_no: int) -> list[str]:
        k = self._keys.get(pass_no)
        if k is None:
            fn = PASSES[pass_no][1]
            assert fn is not None
            k = self._keys[pass_no] = [fn(s) for s in self.lines]
        return k

    def __len__(self) -> int:
        return len(self.lines)

    def has_unique_line(self, pass_no: int, pat: list[str]) -> bool:
        """Whether a line of `pat` (already keyed for the pass) occurs once in the whole file, so
        `pat` fits at one place at most. False also means "not counted yet": then scan."""
        counts = self._counts.get(pass_no)
        if counts is None:
            if self._scan_budget > 0:
                return False
            counts = self._counts[pass_no] = Counter(self.keys(pass_no))
        return any(counts[k] == 1 for k in pat)

    def charge(self, scanned: int) -> None:
        self._scan_budget -= max(0, scanned)


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


# -- is the place decided? ------------------------------------------------------------------------

def _keyed(lines: Sequence[str], pass_no: int) -> list[str]:
    fn = PASSES[pass_no][1]
    return list(lines) if fn is None else [fn(x) for x in lines]


def _header_hit(index: LineIndex, header: str, pass_no: int, lo: int) -> int | None:
    """The first line at or after `lo` that `header` names in pass `pass_no` (4: prefix)."""
    if pass_no == 4:
        want = normalise(header)
        keys = index.keys(3)
        return next((i for i in range(max(lo, 0), len(keys)) if keys[i].startswith(want)), None)
    keys = index.keys(pass_no)
    try:
        return keys.index(_keyed([header], pass_no)[0], max(lo, 0))
    except ValueError:
        return None


def anchors(index: LineIndex, headers: Sequence[str], start: int) -> list[int]:
    """The lines the last of a chunk's '@@' headers may stand on, in order; the first is where
    `seek_header` puts it. The first header may be any line after `start` it names (in the pass
    that found it); each later header narrows to its nearest match after the one before."""
    found: list[int] = []
    lo = start
    for level, header in enumerate(headers):
        hit = seek_header(index, header, lo)
        if hit is None:
            return []
        at, pass_no = hit
        if level == 0:
            found, i = [], at
            while i is not None:
                found.append(i)
                i = _header_hit(index, header, pass_no, i + 1)
        else:
            narrowed: list[int] = []
            for p in found:
                if narrowed and p < narrowed[-1]:
                    continue  # its nearest match is the previous one's
                q = _header_hit(index, header, pass_no, p + 1)
                if q is None:
                    break
                if not narrowed or q != narrowed[-1]:
                    narrowed.append(q)
            found = narrowed
        lo = at + 1
    return found


def other_places(index: LineIndex, old: Sequence[str], at: int, pass_no: int, *, start: int,
                 headers: Sequence[str] = (), from_header_line: bool = False, limit: int = 5) -> list[int]:
    """Where else the chunk whose old lines `old` were found at `at` (in pass `pass_no`) could go,
    with nothing in the patch deciding against it: up to `limit` other starting lines.

    Without '@@' headers, any other match after `start` (the end of the previous chunk). With
    headers, the chunk goes to the nearest match after its header line, so each other line the
    headers may stand on (`anchors`) offers its own nearest match. A chunk with no old lines is
    inserted after its header: then the other header lines are the other places.
    """
    if not old:
        if not headers:
            return []
        return [p + 1 for p in anchors(index, headers, start)[1:limit + 1]]
    n = len(old)
    hi = len(index) - n
    pat = _keyed(old, pass_no)
    keys = index.keys(pass_no)
    places: list[int] = []
    if not headers:
        if index.has_unique_line(pass_no, pat):
            return []
        index.charge(hi - start)
        i = start
        while len(places) < limit:
            q = _find(keys, pat, i, hi) if i <= hi else None
            if q is None:
                break
            if q != at:
                places.append(q)
            i = q + 1
        return places
    offset = 0 if from_header_line else 1
    last = None
    for p in anchors(index, headers, start):
        lo = p + offset
        if last is not None and lo <= last:
            continue  # no match between the previous anchor and `last`: the same place
        q = _find(keys, pat, lo, hi) if lo <= hi else None
        index.charge((q if q is not None else hi) - lo)
        if q is None:
            break  # later anchors only search less of the file
        last = q
        if q != at and q not in places:
            places.append(q)
            if len(places) >= limit:
                break
    return places


def _enclosing(index: LineIndex, i: int, reach: int = 300) -> int | None:
    """The nearest line above `i` indented less than it (its function or class, usually)."""
    lines = index.lines
    here = next((lines[j] for j in range(i, min(len(lines), i + 5)) if lines[j].strip()), "")
    indent = len(here) - len(here.lstrip())
    for j in range(i - 1, max(-1, i - 1 - reach), -1):
        s = lines[j]
        if s.strip() and len(s) - len(s.lstrip()) < indent:
            return j
    return None


def ambiguity_error(display: str, chunk_no: int, patch_line: int, index: LineIndex, at: int,
                    others: list[int], old: Sequence[str], headers: Sequence[str]) -> PatchApplyError:
    """The refusal for a chunk that fits several places: each one (with the line that encloses
    it, a ready-made '@@' anchor), and how to say which is meant."""
    places = sorted([at, *others])
    what = "its '@@' line and its lines" if headers else "its lines"
    more = " or more" if len(others) >= 5 else ""
    rows = []
    width = len(str(max(places) + 1))
    for p in places:
        row = f"  line {p + 1:>{width}}: {index.lines[p].strip()[:80] if p < len(index) else '(end of file)'}"
        up = _enclosing(index, p)
        if up is not None:
            row += f"   (under line {up + 1}: {index.lines[up].strip()[:80]})"
        rows.append(row)
    shown = "\n".join(f"  {x}" for x in list(old)[:8]) + ("\n  …" if len(old) > 8 else "")
    return PatchApplyError(
        f"Chunk {chunk_no} of {display} (starting on patch line {patch_line}) fits {len(places)}{more} "
        f"places: {what} match at each of them, and nothing in the patch says which one is meant.\n"
        + (f"Its lines:\n{shown}\n" if old else "")
        + "Places:\n" + "\n".join(rows) + "\n"
        "Add context lines that occur only at the intended place (the lines just above or below the "
        "change, copied from the file), or an '@@' line naming the function or class that holds it "
        "(as the file has it, indentation included). No file was changed."
    )
