"""Frames between the index and its parse workers: a 4-byte big-endian length and a `marshal`
payload (plain tuples, lists, strings and ints: no code, no pickle)."""

from __future__ import annotations

import struct
from typing import BinaryIO

HEADER = struct.Struct(">I")


def read_frame(stream: BinaryIO, limit: int) -> bytes | None:
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (n,) = HEADER.unpack(head)
    if n > limit:
        raise ValueError(f"frame of {n} bytes exceeds {limit}")
    data = stream.read(n)
    if len(data) < n:
        return None
    return data


def write_frame(stream: BinaryIO, payload: bytes) -> None:
    stream.write(HEADER.pack(len(payload)))
    stream.write(payload)
    stream.flush()
