"""Applying a list of edits to one file: load, check, replace, encode, write atomically.

Shared by Edit (one edit) and MultiEdit (several, all or nothing). The file is decoded with the
encoding it has (see codec), edited as text, and encoded back the same way, so bytes outside the
replaced regions are identical. Nothing is written unless every edit applies.
"""

from __future__ import annotations

import os
import stat as stat_mod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .atomic import AtomicWriteError, write_atomic
from .codec import SNIFF_BYTES, UTF8, BinaryFile, TextFormat, for_display, sniff
from .lines import format_row
from .lookup import did_you_mean
from .matching import EditError, replace
from .state import MODIFIED, FileStates


@dataclass
class EditSpec:
    old_string: str
    new_string: str
    replace_all: bool = False


@dataclass
class EditOutcome:
    text: str
    data: bytes
    fmt: TextFormat
    created: bool
    replacements: list[int]  # per edit
    how: list[str]  # matching strategy per edit
    region: tuple[int, int]  # changed span in the final text
    notes: list[str] = field(default_factory=list)


def notebook_refusal(shown: str) -> str:
    return (
        f"{shown} is a Jupyter notebook. Edit and MultiEdit do not change .ipynb files, because a "
        "text replacement can break the notebook's JSON. There is no NotebookEdit tool here: "
        "to change it, Read it, then Write the complete notebook JSON, or run a script with Bash "
        "(e.g. python with the json or nbformat module)."
    )


def load_for_edit(
    path: Path, first_old: str, states: FileStates, show: Callable[[Path], str]
) -> tuple[os.stat_result | None, str, TextFormat]:
    """(stat, text, format) of the file to edit; (None, "", UTF8) for a file to create."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if first_old == "":
            return None, "", UTF8
        raise EditError(
            f"File does not exist: {show(path)}.{did_you_mean(path, show)} "
            "To create a new file, use Write (or Edit with an empty old_string)."
        ) from None
    except OSError as e:
        raise EditError(f"Cannot access {show(path)}: {e.strerror}.") from None
    if stat_mod.S_ISDIR(st.st_mode):
        raise EditError(f"{show(path)} is a directory, not a file. Give the path of a file inside it.")
    if not stat_mod.S_ISREG(st.st_mode):
        raise EditError(f"{show(path)} is not a regular file (device, FIFO or socket); it cannot be edited.")
    if path.suffix.lower() == ".ipynb":
        raise EditError(notebook_refusal(show(path)))
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise EditError(f"{show(path)} was deleted. {MODIFIED}") from None
    except OSError as e:
        raise EditError(f"Cannot read {show(path)}: {e.strerror}.") from None
    try:
        fmt = sniff(data[:SNIFF_BYTES], at_eof=len(data) <= SNIFF_BYTES)
    except BinaryFile as b:
        raise EditError(f"{show(path)} is a binary file ({b.kind}); Edit only changes text files.") from None
    if not (st.st_size == 0 and first_old == ""):  # filling an empty file loses nothing
        problem = states.check(path, st)
        if problem:
            raise EditError(problem)
    try:
        text = fmt.decode(data)
    except UnicodeDecodeError as e:
        raise EditError(f"{show(path)} cannot be decoded as {fmt.encoding} ({e.reason}); it was not changed.") from None
    return st, text, fmt


def apply_edits(
    path: Path,
    edits: list[EditSpec],
    states: FileStates,
    show: Callable[[Path], str],
) -> EditOutcome:
    """Apply every edit in order and write the result, or raise EditError having written nothing."""
    st, text, fmt = load_for_edit(path, edits[0].old_string, states, show)
    created = st is None
    counts: list[int] = []
    hows: list[str] = []
    lo = hi = None
    for i, edit in enumerate(edits):
        try:
            applied = replace(
                text, edit.old_string, edit.new_string, replace_all=edit.replace_all, eol=fmt.eol
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
    try:
        data = fmt.encode(text)
    except UnicodeEncodeError as e:
        bad = text[e.start:e.end]
        raise EditError(
            f"The new text contains {bad!r}, which the file's encoding ({fmt.encoding}) cannot "
            "represent. Use characters the encoding has, or convert the file with Write."
        ) from None
    if st is not None:
        try:
            now = os.stat(path)
        except FileNotFoundError:
            raise EditError(f"{show(path)} was deleted. {MODIFIED}") from None
        if (now.st_mtime_ns, now.st_size) != (st.st_mtime_ns, st.st_size):
            raise EditError(MODIFIED)
    try:
        write_atomic(path, data)
    except AtomicWriteError as e:
        reason = str(e).replace(str(path), show(path))
        raise EditError(f"Could not write {show(path)}: {reason}. The file is unchanged.") from None
    try:
        states.record_write(path, data, fmt)
    except OSError:
        states.forget(path)
    return EditOutcome(text, data, fmt, created, counts, hows, (lo or 0, hi or 0))


def snippet(text: str, lo: int, hi: int, context: int = 3, max_rows: int = 40, width: int = 500) -> str:
    """`cat -n` rows around text[lo:hi] (the edited region) with a few lines of context."""
    first = text.count("\n", 0, lo) + 1
    last = first + text.count("\n", lo, max(lo, hi - 1))
    # Walk back `context` lines from the edited line (cheap even deep inside a big file).
    pos = text.rfind("\n", 0, lo) + 1
    start = first
    for _ in range(context):
        if pos == 0:
            break
        pos = text.rfind("\n", 0, pos - 1) + 1
        start -= 1
    rows: list[str] = []
    end_line = last + context
    line = start
    omitted = 0
    while line <= end_line:
        nl = text.find("\n", pos)
        if nl == -1 and pos == len(text) and line > 1:
            break  # the text ends with a newline: no further line
        raw = text[pos:] if nl == -1 else text[pos:nl]
        if raw.endswith("\r"):
            raw = raw[:-1]
        if len(rows) < max_rows:
            shown = for_display(raw)
            if len(shown) > width:
                shown = shown[:width] + f"… [{len(shown) - width} more characters]"
            rows.append(format_row(str(line), shown))
        else:
            omitted += 1
        if nl == -1:
            break
        pos = nl + 1
        line += 1
    if omitted:
        rows.append(f"… [{omitted} more lines not shown]")
    return "\n".join(rows)
