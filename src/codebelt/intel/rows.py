"""What one parsed file contributes to the index, in the shape the store writes.

References are grouped per (name, plain) with their positions packed into one blob: a file
uses a name many times, and one row per use made the store's inserts (two b-tree indexes per
row) the slowest step of a build. Grouping runs in the parse workers, off the builder thread.
"""

from __future__ import annotations

import sys
from array import array
from dataclasses import dataclass, field

from .extract import FileFacts, RefRow, SymbolRow

# name, plain (1: a bare identifier, which may be a local; 0: call, type, import, attribute),
# count, positions as little-endian int32 (line, character) pairs in source order
RefGroup = tuple[str, int, int, bytes]

_SWAP = sys.byteorder != "little"


@dataclass
class FileRows:
    symbols: list[SymbolRow] = field(default_factory=list)
    refs: list[RefGroup] = field(default_factory=list)
    truncated: bool = False

    @classmethod
    def of(cls, facts: FileFacts) -> "FileRows":
        return cls(facts.symbols, group_refs(facts.refs), facts.truncated)


def group_refs(refs: list[RefRow]) -> list[RefGroup]:
    groups: dict[tuple[str, int], list[int]] = {}
    for name, kind, line, char in refs:
        key = (name, int(kind == "identifier"))
        spots = groups.get(key)
        if spots is None:
            spots = groups[key] = []
        spots.append(line)
        spots.append(char)
    return [(name, plain, len(spots) // 2, _pack(spots)) for (name, plain), spots in groups.items()]


def _pack(values: list[int]) -> bytes:
    a = array("i", values)
    if _SWAP:
        a.byteswap()
    return a.tobytes()


def unpack_spots(blob: bytes) -> list[tuple[int, int]]:
    """(line, character) pairs of one group; a damaged blob yields what it holds whole."""
    a = array("i")
    a.frombytes(blob[: len(blob) - len(blob) % (2 * a.itemsize)])
    if _SWAP:
        a.byteswap()
    return list(zip(a[0::2], a[1::2]))
