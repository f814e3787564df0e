"""The question a person answers to allow a call, written so that no line of it can be forged.

Everything a call brings (its command, paths, patch text, and the reason and suggestion the
permission engine built from them) is untrusted: a command holding a newline and the words
"Why it asks: read-only" printed a line that looked like codebelt's own. So:

- every line that starts at the left edge is codebelt's own words (labels, counts);
- untrusted text appears only in quoted blocks, each of its lines behind the gutter `│ `, hard
  wrapped at WIDTH characters (continued behind `┆ `), so that neither a line break in the text
  nor a viewer that wraps at 80 columns can put its words at the left edge;
- inside a block, every character that could change how the text reads is shown as a visible
  escape: line breaks of any kind (CR, U+2028/2029, NEL), other controls (ANSI escape
  sequences), format characters (bidi overrides such as U+202E, zero-width characters), unusual
  spaces, private-use and unassigned code points: `⟨ESC⟩`, `⟨CR⟩`, `⟨TAB⟩`, `⟨U+202E⟩`. The
  escape's own bracket `⟨` is escaped too, so an escape in the output is always one of ours;
- blocks are bounded (lines and characters) and say how much was left out.

`Preview` is what a tool adds for calls a summary cannot describe (ApplyPatch: every file, its
operation and a diff): a heading of codebelt's words and titled untrusted sections.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Any

GUTTER = "│ "
CONTINUED = "┆ "
WIDTH = 76  # characters of untrusted text per line: with the gutter, within 80 columns
DETAIL_LINES = 40
DETAIL_CHARS = 4_000

_NAMED = {"\n": "LF", "\r": "CR", "\t": "TAB", "\x1b": "ESC", "\x00": "NUL", "\x7f": "DEL", "\u27e8": "U+27E8"}
# Letters and symbols that render as nothing.
_INVISIBLE = {"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\u034f"}


@dataclass(frozen=True)
class Preview:
    """More than a one-line summary, for the person asked: `heading` is codebelt's own words
    (operation names and counts, never text from the call); each section is (codebelt's title,
    untrusted text shown in a quoted block)."""

    heading: str
    sections: tuple[tuple[str, str], ...] = ()


def _escape(ch: str) -> str:
    name = _NAMED.get(ch)
    return f"⟨{name}⟩" if name else f"⟨U+{ord(ch):04X}⟩"


def _needs_escape(ch: str) -> bool:
    if ch in _NAMED or ch in _INVISIBLE:
        return True
    if " " <= ch <= "~":
        return False
    cat = unicodedata.category(ch)
    # Cc controls, Cf format (bidi, zero width), Cs lone surrogates, Co private use, Cn unassigned,
    # Zl/Zp line and paragraph separators, Zs spaces other than the plain one.
    return cat[0] == "C" or cat in ("Zl", "Zp", "Zs")


def visible(text: str) -> str:
    """`text` with every character that could change how it reads shown as an escape."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(_escape(c) if _needs_escape(c) else c for c in text)


def _columns(text: str) -> int:
    """Terminal columns, counted high: wide, full-width and ambiguous characters as two."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in "WFA" else 1 for c in text)


def _wrap(line: str, width: int) -> list[str]:
    """A visible line cut into pieces of at most `width` columns, never inside an escape."""
    if _columns(line) <= width:
        return [line]
    pieces, current, used = [], "", 0
    i = 0
    while i < len(line):
        j = line.find("⟩", i) + 1 if line[i] == "⟨" else i + 1
        token = line[i:j]
        cols = _columns(token)
        if current and used + cols > width:
            pieces.append(current)
            current, used = "", 0
        current += token
        used += cols
        i = j
    pieces.append(current)
    return pieces


def quoted(text: str, max_lines: int = DETAIL_LINES, max_chars: int = DETAIL_CHARS, width: int = WIDTH,
           one_line: bool = False) -> list[str]:
    """Untrusted `text` as prompt lines behind the gutter, at most `max_lines` of them and about
    `max_chars` characters; a last line says what was left out. `one_line`: the text is one
    entry (a reason), its line breaks shown as escapes, so that it cannot pass for two."""
    lines = [text] if one_line else text.split("\n")
    out: list[str] = []
    used = 0
    for n, line in enumerate(lines):
        pieces = _wrap(visible(line), width)
        for k, piece in enumerate(pieces):
            if len(out) >= max_lines - 1 or used + len(piece) > max_chars:
                if len(out) == max_lines - 1 and n == len(lines) - 1 and k == len(pieces) - 1 \
                        and used + len(piece) <= max_chars:
                    out.append((GUTTER if k == 0 else CONTINUED) + piece)  # the very last piece fits
                    return out
                left = len(lines) - n - 1
                rest = "the rest of this line" if k else ""
                more = f"{left:,} more line{'s' if left != 1 else ''}" if left else ""
                out.append(f"{CONTINUED}… {' and '.join(x for x in (rest, more) if x) or 'the rest'} not shown")
                return out
            out.append((GUTTER if k == 0 else CONTINUED) + piece)
            used += len(piece)
    return out


def render_question(request: Any) -> str:
    """The whole question about an `approvers.ApprovalRequest` (which renders itself through
    this): what the call would do, why it asks, how to stop being asked."""
    decision = request.decision
    tool = visible(request.tool)
    lines: list[str] = []
    if request.preview is not None:
        lines.append(f"codebelt wants to run {tool}:")
        lines.append(visible(request.preview.heading))
    else:
        lines.append(f"codebelt wants to run {tool}:")
        detail = request.detail if request.detail is not None else json.dumps(request.input, ensure_ascii=False)
        lines += quoted(detail)
    if request.preview is not None:
        for title, body in request.preview.sections:
            lines.append(f"{visible(title)}:")
            lines += quoted(body, max_lines=200, max_chars=16_000)
    reasons = list(dict.fromkeys(request.reasons or (decision.reason,)))
    lines.append("Why it asks:")
    for reason in reasons[:20]:
        lines += quoted(reason, max_lines=12, max_chars=2_000, one_line=True)
    if len(reasons) > 20:
        lines.append(f"{CONTINUED}… {len(reasons) - 20} more reasons not shown")
    if decision.suggestion:
        lines.append("To stop being asked:")
        lines += quoted(decision.suggestion, max_lines=12, max_chars=2_000, one_line=True)
    lines.append("Allow it (for the rest of this session)?" if getattr(request, "while_running", False)
                 else "Allow this call?")
    return "\n".join(lines)
