"""What one path holds at one moment, as a checkpoint records it.

An `Entry` is a path's kind (absent, file, dir, link, other), its permission bits, and for a
file the hash of its content in the object store (None when the content was not kept, with
`lost` saying why), for a symlink its target. `key` is the stat identity (device, inode, size,
mtime, ctime) a tracker uses to tell that a file is unchanged without reading it — the same
test git's index makes; it is not part of what a rewind restores.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace
from typing import Any

ABSENT, FILE, DIR, LINK, OTHER = "absent", "file", "dir", "link", "other"
StatKey = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class Entry:
    kind: str
    mode: int = 0  # permission bits (stat.S_IMODE)
    hash: str | None = None  # file content in the store
    size: int = 0
    target: str | None = None  # symlink target
    lost: str | None = None  # why a file's content was not kept
    key: StatKey | None = field(default=None, compare=False)

    def same_state(self, other: "Entry") -> bool:
        """Whether two entries describe the same content, kind and mode (never true of a
        file whose content was not kept: nothing proves it unchanged)."""
        if self.kind != other.kind:
            return False
        if self.kind == FILE:
            return self.hash is not None and self.hash == other.hash and self.mode == other.mode
        if self.kind == LINK:
            return self.target == other.target
        if self.kind == DIR:
            return self.mode == other.mode
        return self.kind in (ABSENT,)

    def with_key(self, key: StatKey | None) -> "Entry":
        return replace(self, key=key)

    def to_row(self) -> tuple[Any, ...]:
        return (self.kind, self.mode, self.hash, self.size, self.target, self.lost)

    @classmethod
    def from_row(cls, row: tuple[Any, ...] | list[Any]) -> "Entry":
        kind, mode, hash_, size, target, lost = row
        return cls(kind, int(mode or 0), hash_, int(size or 0), target, lost)

    def describe(self) -> str:
        if self.kind == ABSENT:
            return "absent"
        if self.kind == LINK:
            return f"symlink → {self.target}"
        if self.kind == DIR:
            return f"directory ({self.mode:o})"
        if self.kind == FILE:
            kept = "" if self.hash else f", not kept: {self.lost}"
            return f"file, {self.size} bytes ({self.mode:o}){kept}"
        return "special file"


NOTHING = Entry(ABSENT)
PENDING = ("not kept: the checkpoint baseline had not reached it yet when the call ran (it is built in "
           "the background from the session's start)")
PENDING_FILE = Entry(FILE, lost=PENDING)  # a file listed, its pre-image not yet established

# A file whose content is being kept after the call that wrote it returned (see `deferred`);
# each such entry's `lost` is this text and a tag of its own, by which its rows are settled.
DEFERRED = "not kept yet: being copied after the call returned"


def is_deferred(e: Entry) -> bool:
    return e.kind == FILE and e.hash is None and (e.lost or "").startswith(DEFERRED)


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def kind_of(st: os.stat_result) -> str:
    m = st.st_mode
    if stat.S_ISREG(m):
        return FILE
    if stat.S_ISDIR(m):
        return DIR
    if stat.S_ISLNK(m):
        return LINK
    return OTHER


def lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
