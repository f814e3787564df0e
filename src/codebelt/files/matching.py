"""Search-and-replace for Edit and MultiEdit: find `old_string`, tolerantly but never loosely.

Strategies, in order, stopping at the first that finds the text:
  1. exact;
  2. line endings: the model's LF mapped to the file's CRLF;
  3. typographic quotes and dashes normalised to ASCII on both sides (a 1:1 character map, so
     positions in the normalised text are positions in the file); where new_string repeats the
     replaced text, its quotes and dashes are written as the file has them there (a curly
     apostrophe in a comment stays curly), what it adds is written as given (code stays code);
  4. the `cat -n` line-number prefix (`    12\\t`) stripped from every line of old_string (and of
     new_string when all its lines carry one), then 1–3 again.
Nothing else: whitespace differences are never matched, only diagnosed (tabs vs spaces).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..errors import EditError
from .codec import apply_eol, endings_for
from .runs import find_run

QUOTE_MAP = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-",
}
_QUOTE_TABLE = str.maketrans(QUOTE_MAP)
_CURLY = re.compile("[\u2018-\u201f]")
_LINE_PREFIX = re.compile(r"^ *\d+(?:\.\d+)?(?:\t|\u2192)")


@dataclass
class Applied:
    text: str
    count: int  # replacements made
    start: int  # where the first replacement starts (same in old and new text)
    end: int  # where the last replacement ends, in the new text
    how: str  # "exact" | "line endings" | "quotes" | "line numbers" …
    note: str | None = None  # what was changed in new_string to fit the file, for the result


def normalise_quotes(s: str) -> str:
    return s.translate(_QUOTE_TABLE)


def strip_line_numbers(s: str) -> str | None:
    """`s` without Read's line-number prefixes, or None if not every line has one."""
    lines = s.split("\n")
    if not all(_LINE_PREFIX.match(line) for line in lines if line):
        return None
    if not any(lines):
        return None
    return "\n".join(_LINE_PREFIX.sub("", line, count=1) for line in lines)


def style_quotes(new: str, matched: str, old: str) -> tuple[str, list[str]]:
    """new_string with the file's typographic characters where, and only where, it repeats the
    text it replaces: a quote, apostrophe or dash of `new` that lines up with one of `old` (the
    model's old_string, which matched the file's `matched` text only once both were normalised)
    is written as the file has it there. Anything `new` adds is written as given — code stays
    code (`d['other']` never becomes `d[‘other’]`) — except that curly characters the model
    wrote where the file has straight ones are straightened wherever they appear.

    Returns the text and the characters that were changed (for the result to say so)."""
    out = list(new)
    changed: list[str] = []
    lined_up: set[int] = set()
    for i, j in _lined_up(normalise_quotes(old), normalise_quotes(new)):
        if new[j] in QUOTE_MAP or new[j] in "'\"-":
            lined_up.add(j)
            if matched[i] != new[j]:
                out[j] = matched[i]
                changed.append(matched[i])
    if any(c in QUOTE_MAP and m not in QUOTE_MAP for c, m in zip(old, matched)):
        for j, ch in enumerate(new):
            if j not in lined_up and ch in QUOTE_MAP:
                out[j] = QUOTE_MAP[ch]
                changed.append(QUOTE_MAP[ch])
    return "".join(out), changed


_ALIGN_CELLS = 4_000_000  # character comparisons one line pair may cost; longer pairs are not aligned


def _lined_up(a: str, b: str) -> list[tuple[int, int]]:
    """(index in a, index in b) of characters the two texts share in place: lines matched first,
    then characters within each pair of changed lines (bounded, so a huge edit stays cheap)."""
    la, lb = a.splitlines(keepends=True), b.splitlines(keepends=True)
    oa = [0]
    for x in la:
        oa.append(oa[-1] + len(x))
    ob = [0]
    for x in lb:
        ob.append(ob[-1] + len(x))
    pairs: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        if tag == "equal":
            pairs += [(oa[i1] + k, ob[j1] + k) for k in range(oa[i2] - oa[i1])]
        elif tag == "replace":
            for x, y in zip(range(i1, i2), range(j1, j2)):
                if len(la[x]) * len(lb[y]) > _ALIGN_CELLS:
                    continue
                for m in difflib.SequenceMatcher(None, la[x], lb[y], autojunk=False).get_matching_blocks():
                    pairs += [(oa[x] + m.a + k, ob[y] + m.b + k) for k in range(m.size)]
    return pairs


def normalise_quotes_only(s: str) -> str:
    return _CURLY.sub(lambda m: QUOTE_MAP[m.group()], s)


def _find_all(hay: str, needle: str) -> list[int]:
    out = []
    i = hay.find(needle)
    while i != -1:
        out.append(i)
        i = hay.find(needle, i + len(needle))
    return out


# The largest result an edit may produce (characters or bytes); `apply_edits` sets it from the
# `edit.maxFileMB` setting. Checked before the result is built: `replace_all` of a short string
# with a long one multiplies a file (200 KB → 396 MB was seen).
DEFAULT_MAX_RESULT = 256 * 1024 * 1024


def _splice(text: str, starts: list[int], length: int, new: str | list[str],
            limit: int | None = DEFAULT_MAX_RESULT) -> tuple[str, int]:
    if limit is not None:
        grown = len(text) + sum((len(new[k]) if isinstance(new, list) else len(new)) - length for k in range(len(starts)))
        if grown > limit:
            raise EditError(
                f"The edit would make the file {grown:,} {'bytes' if isinstance(text, bytes) else 'characters'} "
                f"long, over the limit of {limit:,} (setting edit.maxFileMB); nothing was written. Replace "
                "fewer occurrences, or a longer old_string with a shorter new_string.")
    parts = []
    prev = 0
    end = 0
    # Bytes are sliced through a memoryview, so the join is the only copy of a big file.
    src = memoryview(text) if isinstance(text, bytes) else text
    for k, s in enumerate(starts):
        rep = new[k] if isinstance(new, list) else new
        parts.append(src[prev:s])
        parts.append(rep)
        end += (s - prev) + len(rep)
        prev = s + length
    parts.append(src[prev:])
    return type(text)().join(parts), end


def _attempts(text: str, old: str, new: str, eol: str):
    """(needle, replacement, haystack, how, the old_string form the needle was made from) in
    the order they are tried."""
    # In a CRLF file, new text gets CRLF too (the model writes LF).
    base_new = apply_eol(new, "\r\n") if eol == "\r\n" else new
    yield old, base_new, text, "exact", old
    crlf_file = "\r\n" in text
    if crlf_file and "\n" in old:
        yield apply_eol(old, "\r\n"), apply_eol(new, "\r\n"), text, "line endings", apply_eol(old, "\r\n")
    norm_text = None
    if _CURLY.search(text) or _CURLY.search(old) or "\u2013" in text or "\u2014" in text or any(
        c in old for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
    ):
        norm_text = normalise_quotes(text)
        yield normalise_quotes(old), base_new, norm_text, "quotes", old
        if crlf_file and "\n" in old:
            crlf_old = apply_eol(old, "\r\n")
            yield normalise_quotes(crlf_old), apply_eol(new, "\r\n"), norm_text, "quotes", crlf_old


def replace(text: str, old: str, new: str, *, replace_all: bool = False, eol: str = "\n",
            limit: int | None = DEFAULT_MAX_RESULT) -> Applied:
    """Apply one edit to `text`, or raise EditError."""
    if old == new:
        raise EditError(
            "No changes to make: old_string and new_string are exactly the same. "
            "Give the text as it should be in new_string.", reason="no_change"
        )
    if old == "":
        if text == "":
            body = apply_eol(new, "\r\n") if eol == "\r\n" else new
            return Applied(body, 1, 0, len(body), "fill empty file")
        raise EditError(
            "old_string is empty, but the file is not empty: an empty old_string only creates a "
            "new file (or fills an empty one). Give the exact text to replace, or use Write to "
            "replace the whole file.", reason="exists"
        )
    candidates = [(old, new, "")]
    stripped_old = strip_line_numbers(old)
    if stripped_old is not None and stripped_old != old:
        stripped_new = strip_line_numbers(new) if new else new
        candidates.append((stripped_old, stripped_new if stripped_new is not None else new, "line numbers"))
    for cand_old, cand_new, suffix in candidates:
        if cand_old == "":
            continue
        for needle, replacement, hay, how, source in _attempts(text, cand_old, cand_new, eol):
            starts = _find_all(hay, needle)
            if not starts:
                continue
            if len(starts) > 1 and not replace_all:
                line = text.count("\n", 0, starts[0]) + 1
                lines = ", ".join(str(text.count("\n", 0, s) + 1) for s in starts[:10])
                raise EditError(
                    f"Found {len(starts)} matches of old_string (at lines {lines}"
                    f"{', …' if len(starts) > 10 else ''}), but replace_all is false. "
                    "To replace every occurrence, set replace_all to true. To replace one, add "
                    "more surrounding lines to old_string so it matches exactly once "
                    f"(the first match is at line {line}).",
                    reason="several", count=len(starts), lines=lines + (", …" if len(starts) > 10 else ""),
                )
            if not replace_all:
                starts = starts[:1]
            note = None
            if how == "quotes":
                styled = [style_quotes(replacement, text[s:s + len(needle)], source) for s in starts]
                reps = [r for r, _ in styled]
                note = _styled_note([c for _, changed in styled for c in changed])
            else:
                reps = replacement
            if eol == "mixed":
                reps = [_endings_like(text, s, s + len(needle), r)
                        for s, r in zip(starts, reps if isinstance(reps, list) else [reps] * len(starts))]
            result, end = _splice(text, starts, len(needle), reps, limit)
            label = how if not suffix else (f"{suffix}, {how}" if how != "exact" else suffix)
            return Applied(result, len(starts), starts[0], end, label, note)
    raise EditError(_not_found_message(text, stripped_old or old), reason="not_found",
                    hint=_whitespace_hint(text, stripped_old or old))


def _styled_note(changed: list[str]) -> str | None:
    if not changed:
        return None
    n = len(changed)
    return (f"{n} character{'s' if n != 1 else ''} of new_string written as the file has "
            f"{'them' if n != 1 else 'it'}: {' '.join(sorted(set(changed)))}")


def _endings_like(text: str, start: int, end: int, new: str) -> str:
    """In a file with mixed line endings, the line breaks of `new` (replacing text[start:end])
    follow `codec.endings_for`, as ApplyPatch's do: each takes the ending of the line break it
    replaces. A new_string that already holds CRLF is written as given."""
    if "\n" not in new or "\r\n" in new:
        return new
    replaced = ["\r\n" if i > 0 and text[i - 1] == "\r" else "\n"
                for i in range(start, end) if text[i] == "\n"]
    line_end = text.find("\n", start)
    own = None if line_end == -1 else ("\r\n" if line_end > 0 and text[line_end - 1] == "\r" else "\n")
    pieces = new.split("\n")
    endings = endings_for(len(pieces) - 1, replaced, own, "\n")
    return "".join(p + e for p, e in zip(pieces, endings)) + pieces[-1]


def _not_found_message(text: str, old: str) -> str:
    base = "String to replace not found in file."
    hint = _whitespace_hint(text, old)
    if hint:
        return f"{base} {hint}"
    return (
        f"{base} old_string must match the file exactly, including whitespace, indentation and "
        "line breaks. Read the file again to see its current content, then copy the text exactly."
    )


def _whitespace_hint(text: str, old: str) -> str | None:
    """Explain a match that only fails on leading whitespace (tabs vs spaces) or trailing spaces."""
    needle = [ln.rstrip("\r") for ln in old.split("\n")]
    while needle and not needle[-1].strip():
        needle.pop()
    first = next((i for i, ln in enumerate(needle) if ln.strip()), len(needle))
    needle = needle[first:]
    if not needle:
        return None
    lines = [ln.rstrip("\r") for ln in text.split("\n")]
    key = [ln.strip() for ln in needle]
    # Linear whatever the file: a huge old_string against a file of repeated lines was
    # compared window by window (lines × old lines).
    found = find_run([ln.strip() for ln in lines], key, 0, len(lines) - len(key))
    if found is not None:
        i = found
        window = lines[i:i + len(key)]
        file_indent = "".join(w[: len(w) - len(w.lstrip())] for w in window)
        old_indent = "".join(n[: len(n) - len(n.lstrip())] for n in needle)
        where = f"lines {i + 1}-{i + len(key)}" if len(key) > 1 else f"line {i + 1}"
        if "\t" in file_indent and "\t" not in old_indent:
            return (
                f"The text is at {where}, but the file indents with tabs and old_string uses spaces. "
                "Copy the indentation exactly (use tab characters)."
            )
        if "\t" in old_indent and "\t" not in file_indent:
            return (
                f"The text is at {where}, but the file indents with spaces and old_string uses tabs. "
                "Copy the indentation exactly (use spaces)."
            )
        if [w.lstrip() for w in window] == [n.lstrip() for n in needle]:
            return (
                f"The text is at {where}, but its indentation differs from old_string. "
                "Copy the leading whitespace exactly as the file has it."
            )
        return (
            f"The text is at {where}, but whitespace differs (trailing spaces or spacing inside "
            "lines). Copy the lines exactly as the file has them."
        )
    return None
