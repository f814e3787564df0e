"""Applying a list of edits to one file: load, check, replace, encode, write atomically.

Shared by Edit (one edit) and MultiEdit (several, all or nothing). The file is decoded with the
encoding it has (see codec), edited as text, and encoded back the same way, so bytes outside the
replaced regions are identical. Nothing is written unless every edit applies.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .atomic import ABSENT, AtomicWriteError, FileChanged, write_atomic
from .beneath import ANYWHERE, Beneath, NotRegularFile, SymlinkInPath
from .codec import (
    SNIFF_BYTES,
    UTF8,
    BinaryFile,
    TextFormat,
    apply_eol,
    for_display,
    sniff,
)
from .lines import LineIndexCache, Row, format_row
from .lookup import did_you_mean
from .matching import DEFAULT_MAX_RESULT, EditError, _find_all, _splice, replace
from .state import MODIFIED, FileStates, state_reason
from .streamed import try_streamed_edit


@dataclass
class EditSpec:
    old_string: str
    new_string: str
    replace_all: bool = False


@dataclass
class EditOutcome:
    text: str | bytes  # the new content: decoded text, or the file's bytes (fast path)
    data: bytes
    fmt: TextFormat
    created: bool
    replacements: list[int]  # per edit
    how: list[str]  # matching strategy per edit
    region: tuple[int, int]  # changed span in `text`
    notes: list[str] = field(default_factory=list)
    size: int = -1  # bytes of the new file (len(data) unless streamed)
    line_base: int = 0  # newlines before `text` (when `text` is a window of a streamed file)

    def __post_init__(self) -> None:
        if self.size < 0:
            self.size = len(self.data)


def notebook_refusal(shown: str) -> str:
    return (
        f"{shown} is a Jupyter notebook. Edit and MultiEdit do not change .ipynb files, because a "
        "text replacement can break the notebook's JSON: use NotebookEdit."
    )


def load_for_edit(
    path: Path, first_old: str, states: FileStates, show: Callable[[Path], str], beneath: Beneath = ANYWHERE,
) -> tuple[os.stat_result | None, bytes, TextFormat]:
    """(stat, bytes, format) of the file to edit; (None, b"", UTF8) for a file to create. The
    file is opened once, beneath its root without following symlinks; its bytes and its stat
    come from that descriptor."""
    try:
        opened = beneath.open_regular(path)
    except FileNotFoundError:
        if first_old == "":
            return None, b"", UTF8
        raise EditError(
            f"File does not exist: {show(path)}.{did_you_mean(path, show, beneath)} "
            "To create a new file, use Write (or Edit with an empty old_string).", reason="file_missing"
        ) from None
    except IsADirectoryError:
        raise EditError(f"{show(path)} is a directory, not a file. Give the path of a file inside it.",
                        reason="directory") from None
    except NotRegularFile:
        raise EditError(f"{show(path)} is not a regular file (device, FIFO or socket); it cannot be edited.") from None
    except SymlinkInPath as e:
        raise EditError(swapped_message(path, e, show)) from None
    except OSError as e:
        raise EditError(f"Cannot access {show(path)}: {e.strerror}.") from None
    with opened:
        st = opened.st
        if path.suffix.lower() == ".ipynb":
            raise EditError(notebook_refusal(show(path)), reason="notebook")
        try:
            data = opened.read_bytes()
        except OSError as e:
            raise EditError(f"Cannot read {show(path)}: {e.strerror}.") from None
        try:
            fmt = sniff(data[:SNIFF_BYTES], at_eof=len(data) <= SNIFF_BYTES)
        except BinaryFile as b:
            raise EditError(f"{show(path)} is a binary file ({b.kind}); Edit only changes text files.",
                            reason="binary") from None
        if not (st.st_size == 0 and first_old == ""):  # filling an empty file loses nothing
            problem = states.check(path, st, fd=opened.fd)
            if problem:
                raise EditError(problem, reason=state_reason(problem))
    return st, data, fmt


def swapped_message(path: Path, e: SymlinkInPath, show: Callable[[Path], str]) -> str:
    where = show(e.link) if e.link is not None else "a part of it"
    return (f"{show(path)} changed while this call ran: {where} is a symlink now (was it just replaced?), "
            "and symlinks found after the permission check are not followed. Nothing was written.")


PRECHECK_BYTES = 8 * 1024 * 1024  # larger files are checked for state only; matching waits for the edit


def check_edits(path: Path, edits: list[EditSpec], states: FileStates, show: Callable[[Path], str],
                beneath: Beneath = ANYWHERE) -> None:
    """Raise the EditError `apply_edits` would raise for a missing, unread or stale file or an
    old_string that does not match — without writing — so nobody is asked to approve an edit
    that cannot work. Files over PRECHECK_BYTES are not matched here (the edit itself does)."""
    try:
        with beneath.open_regular(path) as opened:
            st = opened.st
            if st.st_size > PRECHECK_BYTES:
                if not (st.st_size == 0 and edits[0].old_string == ""):
                    problem = states.check(path, st, fd=opened.fd)
                    if problem:
                        raise EditError(problem, reason=state_reason(problem))
                return
    except OSError:
        pass  # load_for_edit words it
    st, raw, fmt = load_for_edit(path, edits[0].old_string, states, show, beneath)
    if _exact_on_bytes(raw, fmt, edits) is not None:
        return
    try:
        text = fmt.decode(raw)
    except UnicodeDecodeError:
        return  # apply_edits says so, with the same words
    _apply_on_text(text, fmt, edits)


def apply_edits(
    path: Path,
    edits: list[EditSpec],
    states: FileStates,
    show: Callable[[Path], str],
    line_indexes: LineIndexCache | None = None,
    max_bytes: int | None = DEFAULT_MAX_RESULT,
    beneath: Beneath = ANYWHERE,
) -> EditOutcome:
    """Apply every edit in order and write the result, or raise EditError having written nothing.

    `line_indexes` (optional, the session's) lets a single big edit skip counting lines.
    `beneath`: where the resolved path is opened and written (no symlink followed)."""
    if len(edits) == 1:
        e = edits[0]
        streamed = try_streamed_edit(path, e.old_string, e.new_string, e.replace_all, _BYTE_SAFE, states,
                                     show, write=write_atomic, line_indexes=line_indexes, max_bytes=max_bytes,
                                     beneath=beneath)
        if streamed is not None:
            done, fmt = streamed
            return EditOutcome(done.window, b"", fmt, False, [done.count], ["exact"],
                               (done.window_lo, done.window_hi), size=done.size, line_base=done.line_base)
    st, raw, fmt = load_for_edit(path, edits[0].old_string, states, show, beneath)
    created = st is None
    fast = _exact_on_bytes(raw, fmt, edits, max_bytes)
    if fast is not None:
        data, counts, (lo, hi) = fast
        text: str | bytes = data
        hows = ["exact"] * len(edits)
        notes = []
    else:
        try:
            text = fmt.decode(raw)
        except UnicodeDecodeError as e:
            raise EditError(
                f"{show(path)} cannot be decoded as {fmt.encoding} ({e.reason}); it was not changed."
            ) from None
        text, counts, hows, (lo, hi), notes = _apply_on_text(text, fmt, edits, max_bytes)
        try:
            data = fmt.encode(text)
        except UnicodeEncodeError as e:
            bad = text[e.start:e.end]
            raise EditError(
                f"The new text contains {bad!r}, which the file's encoding ({fmt.encoding}) cannot "
                "represent. Use characters the encoding has, or convert the file with Write."
            ) from None
    try:
        # The file replaced must be the one read (or, for a new file, still be missing).
        written = write_atomic(path, data, beneath=beneath, expect=st if st is not None else ABSENT)
    except FileChanged as e:
        if e.errno == errno.ENOENT:
            raise EditError(f"{show(path)} was deleted. {MODIFIED}") from None
        raise EditError(MODIFIED, reason="modified") from None
    except AtomicWriteError as e:
        reason = str(e).replace(str(path), show(path))
        raise EditError(f"Could not write {show(path)}: {reason}. The file is unchanged.") from None
    states.record_write(path, data, fmt, written)
    return EditOutcome(text, data, fmt, created, counts, hows, (lo, hi), notes)


# Encodings where an exact byte match of an encoded needle is an exact text match (UTF-8 is
# self-synchronising; single-byte encodings map characters to bytes one to one).
_BYTE_SAFE = {"utf-8", "cp1252", "iso8859-1", "iso8859-15", "cp1250", "cp1251", "iso8859-2",
              "iso8859-5", "koi8-r", "cp1253", "cp1254", "cp1257", "mac-roman", "cp437", "cp850"}


def _exact_on_bytes(raw: bytes, fmt: TextFormat, edits: list[EditSpec], max_bytes: int | None = DEFAULT_MAX_RESULT):
    """The common case without decoding the file: every edit matches exactly (or after LF→CRLF)
    and uniquely (or replace_all). Returns (bytes, counts, region) or None to take the text path,
    which also produces every error message."""
    if fmt.encoding not in _BYTE_SAFE:
        return None
    body = raw[len(fmt.bom):] if fmt.bom and raw.startswith(fmt.bom) else raw
    counts: list[int] = []
    lo = hi = None
    try:
        for e in edits:
            if not e.old_string or e.old_string == e.new_string:
                return None
            if fmt.eol == "mixed" and "\n" in e.new_string:
                return None  # each new line takes the ending of the line it replaces: the text path
            new = apply_eol(e.new_string, "\r\n") if fmt.eol == "\r\n" else e.new_string
            new_b = new.encode(fmt.encoding, fmt.errors)
            old_b = e.old_string.encode(fmt.encoding, fmt.errors)
            starts = _find_all(body, old_b)
            if not starts and "\n" in e.old_string and b"\r\n" in body:
                old_b = apply_eol(e.old_string, "\r\n").encode(fmt.encoding, fmt.errors)
                new_b = apply_eol(e.new_string, "\r\n").encode(fmt.encoding, fmt.errors)
                starts = _find_all(body, old_b)
            if not starts or (len(starts) > 1 and not e.replace_all):
                return None
            out, end = _splice(body, starts, len(old_b), new_b, max_bytes)
            delta = len(out) - len(body)
            if lo is None:
                lo, hi = starts[0], end
            else:
                lo = min(lo if lo < starts[0] else lo + delta, starts[0])
                hi = max(hi + delta if hi > starts[0] else hi, end)
            body = out
            counts.append(len(starts))
    except UnicodeEncodeError:
        return None
    shift = len(fmt.bom) if fmt.bom and raw.startswith(fmt.bom) else 0
    return (raw[:shift] + body, counts, (lo + shift, hi + shift))


def _apply_on_text(text: str, fmt: TextFormat, edits: list[EditSpec], max_bytes: int | None = DEFAULT_MAX_RESULT):
    counts: list[int] = []
    hows: list[str] = []
    notes: list[str] = []
    lo = hi = None
    for i, edit in enumerate(edits):
        try:
            applied = replace(
                text, edit.old_string, edit.new_string, replace_all=edit.replace_all, eol=fmt.eol,
                limit=max_bytes,
            )
        except EditError as e:
            if len(edits) == 1:
                raise
            raise EditError(
                f"Edit {i + 1} of {len(edits)} failed: {e} No changes were written "
                "(MultiEdit applies all edits or none); fix that edit and send them all again."
            ) from None
        delta = len(applied.text) - len(text)
        if lo is None:
            lo, hi = applied.start, applied.end
        else:
            lo = min(lo if lo < applied.start else lo + delta, applied.start)
            hi = max(hi + delta if hi > applied.start else hi, applied.end)
        text = applied.text
        counts.append(applied.count)
        hows.append(applied.how)
        if applied.note:
            notes.append(applied.note if len(edits) == 1 else f"edit {i + 1}: {applied.note}")
    return text, counts, hows, (lo or 0, hi or 0), notes


def snippet(text: str | bytes, lo: int, hi: int, context: int = 3, max_rows: int = 40,
            width: int = 500, encoding: str = "utf-8", line_base: int = 0, row: Row = format_row,
            as_split: bool = False) -> str:
    """`cat -n` rows around text[lo:hi] (the edited region) with a few lines of context.

    Works on the decoded text or on the file's bytes (the fast path never decodes the file).
    `text` may be a window of the file starting at a line start after `line_base` newlines, that
    holds at least `context` lines before and after the region (the streamed path's window).
    `as_split`: rows as Claude Code 1.0 cut them from the text split on line breaks — a region
    ending with a line break reaches into the next line, and a final line break is followed by an
    empty last row."""
    nl = b"\n" if isinstance(text, bytes) else "\n"
    first = line_base + text.count(nl, 0, lo) + 1
    last = first + text.count(nl, lo, hi if as_split else max(lo, hi - 1))
    # Walk back `context` lines from the edited line (cheap even deep inside a big file).
    pos = text.rfind(nl, 0, lo) + 1
    start = first
    for _ in range(context):
        if pos == 0:
            break
        pos = text.rfind(nl, 0, pos - 1) + 1
        start -= 1
    rows: list[str] = []
    end_line = last + context
    line = start
    omitted = 0
    while line <= end_line:
        at = text.find(nl, pos)
        if at == -1 and pos == len(text) and line > 1 and not as_split:
            break  # the text ends with a newline: no further line
        raw = text[pos:] if at == -1 else text[pos:at]
        if len(rows) < max_rows:
            shown = raw.decode(encoding, "replace") if isinstance(raw, bytes) else for_display(raw)
            shown = shown.removesuffix("\r")
            if line == 1:
                shown = shown.removeprefix("\ufeff")  # the fast path keeps the BOM in the bytes
            if len(shown) > width:
                shown = shown[:width] + f"… [{len(shown) - width} more characters]"
            rows.append(row(str(line), shown))
        else:
            omitted += 1
        if at == -1:
            break
        pos = at + 1
        line += 1
    if omitted:
        rows.append(f"… [{omitted} more lines not shown]")
    return "\n".join(rows)
