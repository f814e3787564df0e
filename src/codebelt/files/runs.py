"""Finding a run of lines in a list of lines, in time linear in the list: ApplyPatch's seek and
Edit's no-match diagnosis both look for a block of (normalised) lines in a file."""

from __future__ import annotations

_MAX_CANDIDATES = 64  # candidate starts checked by slicing before switching to a rolling hash
_MOD = (1 << 61) - 1
_BASE = 1_000_003


def find_run(keys: list[str], pat: list[str], lo: int, hi: int) -> int | None:
    """First i in [lo, hi] with keys[i:i+len(pat)] == pat.

    The common case is one C-speed `list.index` for the first line plus a slice compare. When
    the first line keeps matching without the rest (5,000 repeated context lines against a
    40,000-line file took 47 s), the search switches to a rolling hash: linear in the file."""
    n = len(pat)
    first = pat[0]
    i = lo
    tries = 0
    while i <= hi:
        try:
            i = keys.index(first, i, hi + 1)
        except ValueError:
            return None
        if n == 1 or keys[i + 1:i + n] == pat[1:]:
            return i
        i += 1
        tries += 1
        if tries >= _MAX_CANDIDATES:
            return find_run_rolling(keys, pat, i, hi)
    return None


def find_run_rolling(keys: list[str], pat: list[str], lo: int, hi: int) -> int | None:
    """Rabin–Karp over lines: each window's hash is updated in O(1), slices are compared only
    where the hashes agree."""
    n = len(pat)
    if lo > hi:
        return None
    ids: dict[str, int] = {}

    def line_id(s: str) -> int:
        v = ids.get(s)
        if v is None:
            v = ids[s] = (hash(s) & ((1 << 60) - 1)) + 1
        return v

    top = pow(_BASE, n - 1, _MOD)
    want = 0
    for s in pat:
        want = (want * _BASE + line_id(s)) % _MOD
    h = 0
    for s in keys[lo:lo + n]:
        h = (h * _BASE + line_id(s)) % _MOD
    i = lo
    while True:
        if h == want and keys[i:i + n] == pat:
            return i
        if i >= hi:
            return None
        h = ((h - line_id(keys[i]) * top) * _BASE + line_id(keys[i + n])) % _MOD
        i += 1
