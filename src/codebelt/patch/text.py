"""A file as the patch engine sees it: lines to match against, and the bytes it is written back
as. Decoding and encoding are `files.codec`'s, so Edit and ApplyPatch read and write a file the
same way (BOM, UTF-16, legacy encodings, line endings)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BinaryFile, PatchApplyError
from ..files.codec import SNIFF_BYTES, UTF8, TextFormat, endings_for, sniff

# An edit replaces old lines [start, end) with `new` (line texts without endings).
Edit = tuple[int, int, list[str]]


@dataclass
class PatchText:
    """A file split on '\n'. `parts` keep a CR that ended a line ('a\r' for 'a\r\n'); `lines`
    are the texts the patch is matched against (no CR). A file without CR shares one list."""

    parts: list[str]
    lines: list[str]
    final_newline: bool
    eol: str
    fmt: TextFormat = UTF8

    @classmethod
    def decode(cls, data: bytes, display: str) -> "PatchText":
        # The same reading as Edit's: BOMs, UTF-16, legacy encodings; bytes that do not decode
        # survive untouched (surrogateescape) on the lines the patch keeps.
        try:
            fmt = sniff(data[:SNIFF_BYTES], at_eof=len(data) <= SNIFF_BYTES)
            text = fmt.decode(data)
        except BinaryFile as e:
            raise PatchApplyError(f"{display} looks like a binary file ({e.kind}); apply_patch only edits text") from None
        except UnicodeDecodeError as e:
            raise PatchApplyError(f"{display} cannot be decoded as {fmt.encoding} ({e.reason}); it was not changed") from None
        parts = text.split("\n")
        final_newline = parts[-1] == ""
        if final_newline:
            parts.pop()
        if "\r" not in text:
            return cls(parts, parts, final_newline, "\n", fmt)
        lines = [p[:-1] if p.endswith("\r") else p for p in parts]
        crlf = text.count("\r\n")
        eol = "\r\n" if crlf > text.count("\n") - crlf else "\n"
        return cls(parts, lines, final_newline, eol, fmt)


def encode(text: str, display: str, fmt: TextFormat = UTF8) -> bytes:
    """The file's bytes in its own encoding (BOM included)."""
    try:
        return fmt.encode(text)
    except UnicodeEncodeError as e:
        raise PatchApplyError(
            f"the new text of {display} contains a character that cannot be written as {fmt.encoding} "
            f"({text[e.start:e.end]!r} at offset {e.start}); remove it from the patch") from None


def render(text: PatchText, edits: list[Edit]) -> str:
    """The new file text: kept lines byte for byte, written lines with the file's line ending
    (with mixed endings, `codec.endings_for`: the ending of the line each one replaces, as Edit
    does). An updated file always ends with a newline."""
    cr = "\r" if text.eol == "\r\n" else ""
    parts = text.parts
    if parts and not text.final_newline and cr and not parts[-1].endswith("\r"):
        parts = parts[:-1] + [parts[-1] + cr]  # the last line gets the file's (CRLF) ending
    has_cr = text.parts is not text.lines  # then each written line takes its own ending
    out: list[str] = []
    pos = 0
    for s, e, new in edits:
        out.extend(parts[pos:s])
        if has_cr:
            endings = endings_for(len(new), [_ending(parts, i) for i in range(s, e)],
                                  _ending(parts, s - 1 if s else s), text.eol)
            out.extend(t + ("\r" if end == "\r\n" else "") for t, end in zip(new, endings))
        else:
            out.extend(new)
        pos = e
    out.extend(parts[pos:])
    if not out:
        return ""
    return "\n".join(out) + "\n"


def _ending(parts: list[str], i: int) -> str | None:
    if not 0 <= i < len(parts):
        return None
    return "\r\n" if parts[i].endswith("\r") else "\n"
