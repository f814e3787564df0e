"""Placing a file's chunks: headers and old lines found in order (four passes, `seek`), turned
into line edits; and, when a chunk cannot be placed, the error that shows the expected lines and
the most similar lines of the file."""

from __future__ import annotations

import difflib
import heapq

from ..errors import PatchApplyError
from .parser import Chunk
from .seek import PASSES, LineIndex, ambiguity_error, other_places, seek, seek_header
from .text import Edit, PatchText


# Bounds on the work of the "most similar lines" report, so a failed patch costs about as much
# as a successful one whatever the file and the patch (40,000 equal lines against 5,000 context
# lines took minutes when whole windows were compared character by character).
_CANDIDATES = 8  # windows ranked closely
_RANK_LINES = 400  # lines of a window compared line by line
_RANK_CHARS = 600  # a window this short is also compared character by character
_LINE_CHARS = 300  # characters of a line looked at when no line is shared
_SCAN_LINES = 50_000  # lines scanned character by character when no line is shared
_SHOW_LINES = 30  # lines of the most similar window quoted in the error


def _similar_region(index: LineIndex, old: list[str]) -> tuple[int, int] | None:
    """The window of the file most like `old`: a rolling count of shared lines picks a few
    candidates (linear), which are then ranked by a line-level diff of at most _RANK_LINES lines
    and, for short windows, a character-level one; when no line is shared, the single line most
    like the first old line (each compared on its first _LINE_CHARS characters)."""
    n, k = len(index), max(1, len(old))
    if n == 0 or not old:
        return None
    k = min(k, n)
    keys = index.keys(3)
    target = [_key(x) for x in old]
    wanted = {s for s in target if s}
    hits = [1 if s and s in wanted else 0 for s in keys]
    if not any(hits):
        return _similar_line(keys, target[0] or old[0], k)
    window = sum(hits[:k])
    sums = [window]
    for i in range(1, n - k + 1):
        window += hits[i + k - 1] - hits[i - 1]
        sums.append(window)
    candidates = heapq.nsmallest(_CANDIDATES, range(len(sums)), key=lambda i: (-sums[i], i))
    head = target[:_RANK_LINES]
    joined = "\n".join(target)

    def score(i: int) -> tuple[float, float, int]:
        lines = difflib.SequenceMatcher(None, head, keys[i:i + min(k, _RANK_LINES)]).ratio()
        chars = 0.0
        text = "\n".join(keys[i:i + k]) if k <= 20 else ""
        if text and len(text) <= _RANK_CHARS and len(joined) <= _RANK_CHARS:
            chars = difflib.SequenceMatcher(None, joined, text, autojunk=False).ratio()
        return lines, chars, -i

    best = max(candidates, key=score)
    return best, best + k


def _similar_line(keys: list[str], first: str, k: int) -> tuple[int, int] | None:
    n = len(keys)
    if n > _SCAN_LINES:
        return None
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(first[:_LINE_CHARS])  # the fixed side: its character counts are kept
    best, best_score = -1, 0.0
    for i, s in enumerate(keys):
        matcher.set_seq1(s[:_LINE_CHARS])
        if matcher.real_quick_ratio() > best_score and matcher.quick_ratio() > best_score:
            best, best_score = i, matcher.quick_ratio()
    if best_score < 0.5:
        return None
    return best, min(n, best + k)


def _key(s: str) -> str:
    return PASSES[3][1](s)  # type: ignore[misc]


def _quote_block(lines: list[str], around: int = 0, limit: int = _SHOW_LINES) -> str:
    """At most `limit` of `lines`: the first ones, or those around line `around` of a long block."""
    first = max(0, min(around - limit // 2, len(lines) - limit))
    out = "\n".join(lines[first:first + limit])
    if first:
        out = f"… ({first} lines before)\n" + out
    if len(lines) > first + limit:
        out += f"\n… ({len(lines) - first - limit} more lines)"
    return out


def _not_found(display: str, chunk: Chunk, chunk_no: int, index: LineIndex, old: list[str],
               after: str | None) -> PatchApplyError:
    where = f" (chunk {chunk_no}, starting on patch line {chunk.line})"
    region = _similar_region(index, old)
    differs = 0  # in a long chunk, where the patch and the most similar lines part
    if region is not None and len(old) > _SHOW_LINES:
        a, b = region
        keys, target = index.keys(3), [_key(x) for x in old]
        differs = next((j for j in range(min(b - a, len(target))) if keys[a + j] != target[j]), 0)
    msg = [f"Failed to find expected lines in {display}{where}:", _quote_block(old, differs)]
    if after:
        msg.append(f"(searched after the '@@ {after}' line and any earlier chunks)")
    if region is not None:
        a, b = region
        a2, b2 = max(0, a - 1), min(len(index), b + 1)
        where = f"lines {a + 1}-{b}"
        if b2 - a2 > _SHOW_LINES:
            a2 = max(a2, min(a + differs - _SHOW_LINES // 2, b2 - _SHOW_LINES))
            b2 = min(b2, a2 + _SHOW_LINES)
            where += f" (shown: {a2 + 1}-{b2}; line {a + differs + 1} is the first that differs from the patch)"
        width = len(str(b2))
        body = "\n".join(f"{i + 1:>{width}}| {index.lines[i]}" for i in range(a2, b2))
        msg.append(f"The most similar lines of {display} are {where}:\n{body}")
    else:
        msg.append(f"Nothing in {display} resembles them.")
    msg.append("Read the file again and resend the whole patch with the ' ' and '-' lines copied exactly "
               "from it. No file was changed.")
    return PatchApplyError("\n".join(msg))


def _clip(line: str, limit: int = 200) -> str:
    return line if len(line) <= limit else line[:limit] + "…"


def _close_lines(word: str, lines: list[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """difflib.get_close_matches, bounded: every line (its first _LINE_CHARS characters, at most
    _SCAN_LINES distinct ones) gets the linear quick ratio, and only the _CANDIDATES best get
    the full, quadratic one."""
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word[:_LINE_CHARS])
    quick: list[tuple[float, str]] = []
    for x in list(dict.fromkeys(s[:_LINE_CHARS] for s in lines if s))[:_SCAN_LINES]:
        matcher.set_seq1(x)
        if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
            quick.append((matcher.quick_ratio(), x))
    scored = []
    for _, x in heapq.nlargest(_CANDIDATES, quick, key=lambda q: q[0]):
        matcher.set_seq1(x)
        if matcher.ratio() >= cutoff:
            scored.append((matcher.ratio(), x))
    return [x for _, x in heapq.nlargest(n, scored, key=lambda q: q[0])]


def _context_not_found(display: str, header: str, chunk: Chunk, index: LineIndex, start: int) -> PatchApplyError:
    msg = f"Failed to find context '{_clip(header)}' in {display} (chunk starting on patch line {chunk.line}"
    msg += f", searching from line {start + 1})" if start else ")"
    close = _close_lines(_key(header), index.keys(3))
    if close:
        msg += "\nLines that look similar: " + "; ".join(repr(_clip(c)) for c in close)
    return PatchApplyError(msg + "\nUse an '@@' line copied from the file, or drop it. No file was changed.")


def _without_trailing_blanks(index: LineIndex, ops: list, start: int, eof: bool):
    """A blank context line ending a chunk usually separated it from the next one: retry with
    fewer of them (as Codex does), keeping as many as still match. Dropping lines only makes a
    match easier, so the fewest to drop is found by bisection: log(blank lines) searches, not
    one per line. Returns (ops, old lines, where found or None)."""
    blanks = 0
    while blanks < len(ops) and ops[len(ops) - 1 - blanks] == (" ", ""):
        blanks += 1

    def attempt(drop: int):
        kept = ops[:len(ops) - drop]
        old = [t for k, t in kept if k != "+"]
        return kept, old, (seek(index, old, start, eof) if old else None)

    lo, hi = 1, blanks
    last = attempt(hi)
    if last[2] is None:
        return last
    while lo < hi:
        mid = (lo + hi) // 2
        tried = attempt(mid)
        if tried[2] is not None:
            hi, last = mid, tried
        else:
            lo = mid + 1
    return last


def _refuse_if_ambiguous(index: LineIndex, old: list[str], at: int, pass_no: int, start: int, chunk: Chunk,
                         chunk_no: int, display: str, on_header: bool = False) -> None:
    others = other_places(index, old, at, pass_no, start=start, headers=chunk.contexts,
                          from_header_line=on_header)
    if others:
        raise ambiguity_error(display, chunk_no, chunk.line, index, at, others, old, chunk.contexts)


def locate_edits(text: PatchText, chunks: list[Chunk], display: str) -> tuple[list[Edit], list[str]]:
    """Find every chunk in file order and turn it into line edits. Returns (edits, fuzzy passes used)."""
    index = LineIndex(text.lines)
    total = len(index)
    edits: list[Edit] = []
    fuzzy: list[str] = []
    line_index = 0
    for n, chunk in enumerate(chunks, 1):
        header_at = None
        start = line_index  # what the previous chunk leaves open; the headers narrow it
        for header in chunk.contexts:
            found = seek_header(index, header, line_index)
            if found is None:
                raise _context_not_found(display, header, chunk, index, line_index)
            header_at = found[0]
            if found[1]:
                fuzzy.append("header prefix" if found[1] == 4 else PASSES[found[1]][0])
            line_index = header_at + 1
        ops = chunk.ops
        old = [t for k, t in ops if k != "+"]
        if not old:
            # Pure addition: at the end of the file, or right after its '@@' context.
            at = total if (chunk.is_end_of_file or header_at is None) else line_index
            if not chunk.is_end_of_file:
                _refuse_if_ambiguous(index, old, at, 0, start, chunk, n, display)
            edits.append((at, at, [t for _, t in ops]))
            continue
        found = seek(index, old, line_index, chunk.is_end_of_file)
        on_header = False
        if found is None and header_at is not None:
            # '@@ def f():' followed by ' def f():' — the header line is the chunk's first line.
            found = seek(index, old, header_at, chunk.is_end_of_file)
            on_header = found is not None
        if found is None and ops and ops[-1] == (" ", ""):
            ops, old, found = _without_trailing_blanks(index, ops, line_index, chunk.is_end_of_file)
        if found is None or not old:
            raise _not_found(display, chunk, n, index, [t for k, t in chunk.ops if k != "+"],
                             chunk.contexts[-1] if chunk.contexts else None)
        at, pass_no = found
        if not (chunk.is_end_of_file and at == total - len(old)):  # `*** End of File` decides
            _refuse_if_ambiguous(index, old, at, pass_no, start, chunk, n, display, on_header)
        if pass_no:
            fuzzy.append(PASSES[pass_no][0])
        j, run_start, new = at, None, []
        for kind, t in ops:
            if kind == " ":
                if run_start is not None:
                    edits.append((run_start, j, new))
                    run_start, new = None, []
                j += 1
            else:
                if run_start is None:
                    run_start = j
                if kind == "-":
                    j += 1
                else:
                    new.append(t)
        if run_start is not None:
            edits.append((run_start, j, new))
        line_index = at + len(old)
    edits.sort(key=lambda e: (e[0], e[1]))
    for (s1, e1, _), (s2, _, _) in zip(edits, edits[1:]):
        if s2 < e1:
            raise PatchApplyError(f"two chunks for {display} change the same lines (around line {s2 + 1}); "
                                  "merge them into one chunk. No file was changed.")
    return edits, fuzzy
