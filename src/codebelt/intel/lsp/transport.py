"""JSON-RPC framing over a byte stream, as the Language Server Protocol uses it: a header block
(`Content-Length: N`, blank line) then N bytes of UTF-8 JSON.

Bounded: a header longer than MAX_HEADER or a body over MAX_FRAME is a protocol error, and so
is anything that is not a header where one is expected (a server printing logs on stdout). The
reader raises `ProtocolError`; the client treats that as a crashed server.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO

MAX_HEADER = 8 * 1024
MAX_FRAME = 64 * 1024 * 1024


class ProtocolError(Exception):
    """The server's output is not LSP framing (garbage on stdout, a frame over the cap)."""


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(stream: BinaryIO) -> dict[str, Any] | None:
    """The next message, or None at end of stream."""
    length = None
    seen = 0
    while True:
        line = stream.readline(MAX_HEADER + 1)
        if not line:
            return None
        seen += len(line)
        if seen > MAX_HEADER or not line.endswith(b"\n"):
            raise ProtocolError("a header line that does not end (not LSP framing)")
        text = line.strip()
        if not text:
            if length is None:
                continue  # tolerate blank lines between frames
            break
        name, sep, value = text.partition(b":")
        if not sep:
            raise ProtocolError(f"not an LSP header: {text[:80]!r}")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise ProtocolError(f"bad Content-Length: {value[:40]!r}") from None
            if length < 0 or length > MAX_FRAME:
                raise ProtocolError(f"a frame of {length} bytes (over the {MAX_FRAME >> 20} MB cap)")
    body = stream.read(length)
    if len(body) < length:
        return None
    try:
        message = json.loads(body.decode("utf-8", "replace"))
    except ValueError as e:
        raise ProtocolError(f"a frame that is not JSON: {e}") from None
    if not isinstance(message, dict):
        raise ProtocolError("a frame that is not a JSON object")
    return message
