"""A document's text as codebelt sends it to a language server: read without following
symlinks (the resolved path a call was allowed), bounded in size, and decoded as the language's
own tools and an editor would (`intel.sources`: Python by its coding line, byte order marks,
UTF-16), so a latin-1 Python file reaches the server as the text it holds — not as U+FFFD where
its accented letters were — and positions counted on that text are the server's."""

from __future__ import annotations

import re
from pathlib import Path

from ...files.beneath import ANYWHERE
from ..sources import SourceSkipped, decode_source

MAX_DOCUMENT_BYTES = 2_000_000  # larger files are not sent to a server
LINE_BREAK = re.compile(r"\r\n|\r|\n")  # LSP's line breaks (not str.splitlines's form feeds, U+2028 …)


class Unreadable(Exception):
    """The file cannot be sent to a server; `str()` says why."""


def language_of(path: Path) -> str | None:
    return "python" if path.suffix.lower() in (".py", ".pyi", ".pyw") else None


def read_document(path: Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> str:
    try:
        # the resolved path the call was allowed, opened with no symlink followed: a directory
        # swapped for a link since cannot send another file's text to the server
        with ANYWHERE.open_regular(path) as opened:
            if opened.st.st_size > max_bytes:
                raise Unreadable(f"{path.name} is over {max_bytes // 1_000_000} MB; not sent to the language server")
            data = opened.read_bytes(max_bytes)
    except OSError as e:
        raise Unreadable(f"cannot read {path.name}: {e.strerror or e}") from None
    try:
        text, _ = decode_source(data, language_of(path))
    except SourceSkipped as e:
        raise Unreadable(f"{path.name} is not text: {e}") from None
    return text


def decode_lines(data: bytes, path: Path) -> list[str]:
    """A file's lines as the server counted positions on them (for converting its answers)."""
    try:
        text, _ = decode_source(data, language_of(path))
    except SourceSkipped:
        return []
    return LINE_BREAK.split(text)
