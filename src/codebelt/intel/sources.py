"""Read a source file for parsing without being fooled by what sits at its path, and decode it
the way its own tools would.

A workspace may hold FIFOs, device files or symlinks planted by whoever wrote it: open with
O_NOFOLLOW | O_NONBLOCK, insist on a regular file, read at most `max_bytes`.

Tree-sitter parses UTF-8, so every source is handed on as UTF-8, decoded first as the reader of
that language would: Python by its own rules (a BOM, else a PEP 263 coding line in the first two
lines, else UTF-8 — `tokenize.detect_encoding`), any other language as an editor does (a UTF-8,
UTF-16 or UTF-32 byte order mark, UTF-16 without one when every other byte is NUL, else UTF-8).
Bytes that do not decode become U+FFFD, so positions still count characters. A file with NUL
bytes that is none of these is binary and skipped.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path

from ..files.beneath import ANYWHERE
from .languages import language_for

BINARY_SNIFF = 8192
UTF16_SNIFF = 512  # bytes looked at to recognise UTF-16 without a byte order mark

# longest first: the UTF-32 LE mark starts with the UTF-16 LE one
BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


class SourceSkipped(Exception):
    """The file is not parsed; the message says why (stored as the file's error)."""


@dataclass(frozen=True)
class Source:
    data: bytes  # UTF-8, without a byte order mark
    mtime_ns: int
    size: int
    encoding: str = "utf-8"  # what the file is stored in


def read_source(path: Path | str, max_bytes: int, language: str | None = None) -> Source:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        # a resolved (absolute) path is opened with no symlink followed at any component: a
        # directory swapped for a link to elsewhere is not read through
        fd = ANYWHERE.open_file(Path(path), flags) if os.path.isabs(path) else os.open(path, flags)
    except OSError as e:
        raise SourceSkipped(f"unreadable: {e.strerror or e}") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SourceSkipped("not a regular file")
        if st.st_size > max_bytes:
            raise SourceSkipped(f"too large ({st.st_size} bytes > {max_bytes})")
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    except OSError as e:
        raise SourceSkipped(f"unreadable: {e.strerror or e}") from e
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew while we read it
        raise SourceSkipped(f"too large (> {max_bytes} bytes)")
    if language is None:
        language = language_for(path)
    text, encoding = decode_source(data, language)
    return Source(text.encode("utf-8", "surrogatepass"), st.st_mtime_ns, st.st_size, encoding)


def decode_source(data: bytes, language: str | None) -> tuple[str, str]:
    """(text, encoding) as the language's own tools would read `data`; raises SourceSkipped
    for binary content."""
    encoding = _bom_encoding(data) or _utf16_without_bom(data)
    if encoding is None:
        if b"\0" in data[:BINARY_SNIFF]:
            raise SourceSkipped("binary (NUL bytes in a file with a source extension)")
        encoding = _python_encoding(data) if language == "python" else "utf-8"
    if encoding == "utf-8" and data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    try:
        text = data.decode(encoding, "replace")
    except LookupError:  # a coding line naming no codec Python knows: Python refuses the file
        text, encoding = data.decode("utf-8", "replace"), "utf-8"
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\0", "\ufffd"), encoding


def _bom_encoding(data: bytes) -> str | None:
    for bom, encoding in BOMS:
        if data.startswith(bom):
            return encoding
    return None


def _utf16_without_bom(data: bytes) -> str | None:
    """UTF-16 text without a byte order mark, recognised as editors do: ASCII-range text whose
    every other byte is NUL."""
    head = data[:UTF16_SNIFF]
    head = head[: len(head) // 2 * 2]
    if len(head) < 8:
        return None
    even, odd = head[0::2], head[1::2]
    if odd.count(0) == len(odd) and 0 not in even and even.isascii():
        return "utf-16-le"
    if even.count(0) == len(even) and 0 not in odd and odd.isascii():
        return "utf-16-be"
    return None


def _python_encoding(data: bytes) -> str:
    lines = io.BytesIO(data).readline
    try:
        encoding, _ = tokenize.detect_encoding(lines)
    except SyntaxError:  # an unknown codec or a BOM that contradicts the coding line
        return "utf-8"
    return encoding
