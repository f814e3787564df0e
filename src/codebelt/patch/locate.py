"""Placing a file's chunks: headers and old lines found in order (four passes, `seek`), turned
into line edits; and, when a chunk cannot be placed, the error that shows the expected lines and
the most similar lines of the file."""

from __future__ import annotations

import difflib

from ..errors import PatchApplyError
from .parser import Chunk
from .seek import PASSES, LineIndex, seek, seek_header
from .text import Edit, PatchText


def _similar_region(index: LineIndex, old: list[str]) -> tuple[int, int] | None:
    """The window of the file most like `old`: a cheap rolling count of shared lines picks a few
    candidates, difflib ranks them."""
    n, k = len(index), max(1, len(old))
    if n == 0:
        return None
    k = min(k, n)
    keys = index.keys(3)
    wanted = {s for s in (_key(x) for x in old) if s}
    hits = [1 if s and s in wanted else 0 for s in keys]
    if not any(hits):
        if n > 50_000 or not old:
            return None
        first = _key(old[0]) or (old[0] if old else "")
        scores = [difflib.SequenceMatcher(None, first, s, autojunk=False).quick_ratio() for s in keys]
        best = max(range(n), key=scores.__getitem__)
        if scores[best] < 0.5:
            return None
        return best, min(n, best + k)
    window = sum(hits[:k])
    sums = [window]
    for i in range(1, n - k + 1):
        window += hits[i + k - 1] - hits[i - 1]
        sums.append(window)
    candidates = sorted(range(len(sums)), key=lambda i: (-sums[i], i))[:8]
    target = "\n".join(_key(x) for x in old)

    def ratio(i: int) -> float:
        return difflib.SequenceMatcher(None, target, "\n".join(keys[i:i + k]), autojunk=False).ratio()

    best = max(candidates, key=lambda i: (ratio(i), -i))
    return best, best + k


def _key(s: str) -> str:
    return PASSES[3][1](s)  # type: ignore[misc]


def _quote_block(lines: list[str], limit: int = 30) -> str:
    shown = lines[:limit]
    out = "\n".join(shown)
    if len(lines) > limit:
        out += f"\n… ({len(lines) - limit} more lines)"
    return out


def _not_found(display: str, chunk: Chunk, chunk_no: int, index: LineIndex, old: list[str],
               after: str | None) -> PatchApplyError:
    where = f" (chunk {chunk_no}, starting on patch line {chunk.line})"
    msg = [f"Failed to find expected lines in {display}{where}:", _quote_block(old)]
    if after:
        msg.append(f"(searched after the '@@ {after}' line and any earlier chunks)")
    region = _similar_region(index, old)
    if region is not None:
        a, b = region
        a2, b2 = max(0, a - 1), min(len(index), b + 1)
        width = len(str(b2))
        body = "\n".join(f"{i + 1:>{width}}| {index.lines[i]}" for i in range(a2, b2))
        msg.append(f"The most similar lines of {display} are lines {a + 1}-{b}:\n{body}")
    else:
        msg.append(f"Nothing in {display} resembles them.")
    msg.append("Read the file again and resend the whole patch with the ' ' and '-' lines copied exactly "
               "from it. No file was changed.")
    return PatchApplyError("\n".join(msg))


def _context_not_found(display: str, header: str, chunk: Chunk, index: LineIndex, start: int) -> PatchApplyError:
    msg = f"Failed to find context '{header}' in {display} (chunk starting on patch line {chunk.line}"
    msg += f", searching from line {start + 1})" if start else ")"
    close = difflib.get_close_matches(_key(header), [s for s in index.keys(3) if s], n=3, cutoff=0.6)
    if close:
        msg += "\nLines that look similar: " + "; ".join(repr(c) for c in close)
    return PatchApplyError(msg + "\nUse an '@@' line copied from the file, or drop it. No file was changed.")


def locate_edits(text: PatchText, chunks: list[Chunk], display: str) -> tuple[list[Edit], list[str]]:
    """Find every chunk in file order and turn it into line edits. Returns (edits, fuzzy passes used)."""
    index = LineIndex(text.lines)
    total = len(index)
    edits: list[Edit] = []
    fuzzy: list[str] = []
    line_index = 0
    for n, chunk in enumerate(chunks, 1):
        header_at = None
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
            edits.append((at, at, [t for _, t in ops]))
            continue
        found = seek(index, old, line_index, chunk.is_end_of_file)
        if found is None and header_at is not None:
            # '@@ def f():' followed by ' def f():' — the header line is the chunk's first line.
            found = seek(index, old, header_at, chunk.is_end_of_file)
        while found is None and ops and ops[-1] == (" ", ""):
            # A blank line ending the chunk usually separated chunks; retry without it (as Codex).
            ops = ops[:-1]
            old = [t for k, t in ops if k != "+"]
            if not old:
                break
            found = seek(index, old, line_index, chunk.is_end_of_file)
        if found is None or not old:
            raise _not_found(display, chunk, n, index, [t for k, t in chunk.ops if k != "+"],
                             chunk.contexts[-1] if chunk.contexts else None)
        at, pass_no = found
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
