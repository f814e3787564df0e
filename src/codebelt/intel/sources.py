"""Read a source file for parsing without being fooled by what sits at its path.

A workspace may hold FIFOs, device files or symlinks planted by whoever wrote it: open with
O_NOFOLLOW | O_NONBLOCK, insist on a regular file, read at most `max_bytes`, and call anything
with a NUL byte near its start binary.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

BINARY_SNIFF = 8192


class SourceSkipped(Exception):
    """The file is not parsed; the message says why (stored as the file's error)."""


@dataclass(frozen=True)
class Source:
    data: bytes
    mtime_ns: int
    size: int


def read_source(path: Path | str, max_bytes: int) -> Source:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
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
    if b"\0" in data[:BINARY_SNIFF]:
        raise SourceSkipped("binary")
    return Source(data, st.st_mtime_ns, st.st_size)
