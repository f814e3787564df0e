"""What this session has read, so Write and Edit never act on a file the model has not seen.

Every Read records the file's (mtime, size, inode, content hash, whether the whole file was shown,
its TextFormat). Write and Edit then require a record and that the file is unchanged since:
same mtime and size, or — when the mtime moved but a hash was recorded — the same content (an
editor or `touch` that rewrote identical bytes is not a change). After a successful write the
record is refreshed, so consecutive edits work without re-reading.

Design choice: a partial read (offset/limit, or a page cut by the token budget) counts as a read
for Edit, MultiEdit and Write, as in Claude Code: Edit only replaces text the model quotes and
that text must match the current file, and Write is an explicit decision to replace the file.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from .codec import TextFormat

NOT_READ = "File has not been read yet. Read it first before writing to it."
MODIFIED = (
    "File has been modified since read, either by the user or by a linter. "
    "Read it again before attempting to write it."
)
def state_reason(problem: str) -> str:
    """The case a `FileStates.check` message names: "not_read" or "modified"."""
    return "not_read" if problem == NOT_READ else "modified"


HASH_LIMIT = 32 * 1024 * 1024  # larger files are compared by mtime and size only


@dataclass(frozen=True)
class FileState:
    mtime_ns: int
    size: int
    inode: int
    sha256: str | None  # None for files over HASH_LIMIT
    complete: bool  # the model saw the whole file
    fmt: TextFormat | None = None


def hash_file(path: Path | int, limit: int = HASH_LIMIT) -> str | None:
    """sha256 of a file's bytes, streamed; None when the file is larger than `limit`. `path` may
    be an open descriptor (read with pread from offset 0: the file opened, not the path)."""
    h = hashlib.sha256()
    total = 0
    if isinstance(path, int):
        while chunk := os.pread(path, 1024 * 1024, total):
            total += len(chunk)
            if total > limit:
                return None
            h.update(chunk)
        return h.hexdigest()
    with open(path, "rb") as f:
        while chunk := f.read(1024 * 1024):
            total += len(chunk)
            if total > limit:
                return None
            h.update(chunk)
    return h.hexdigest()


class FileStates:
    """Per-session store of file states (a session service)."""

    def __init__(self) -> None:
        self._states: dict[Path, FileState] = {}
        self._lock = threading.Lock()

    def get(self, path: Path) -> FileState | None:
        with self._lock:
            return self._states.get(path)

    def forget(self, path: Path) -> None:
        with self._lock:
            self._states.pop(path, None)

    def record_read(
        self,
        path: Path,
        st: os.stat_result,
        *,
        complete: bool,
        fmt: TextFormat | None = None,
        sha256: str | None = None,
        fd: int | None = None,
    ) -> None:
        """Record a read made from the file as it was at `st` (stat taken before reading);
        `fd`, the descriptor it was read through, is hashed rather than the path."""
        if sha256 is None and st.st_size <= HASH_LIMIT:
            try:
                sha256 = hash_file(path if fd is None else fd)
                after = os.stat(path) if fd is None else os.fstat(fd)
                if (after.st_mtime_ns, after.st_size) != (st.st_mtime_ns, st.st_size):
                    sha256 = None  # changed while we hashed: the hash may not be what was shown
            except OSError:
                sha256 = None
        state = FileState(st.st_mtime_ns, st.st_size, st.st_ino, sha256, complete, fmt)
        with self._lock:
            self._states[path] = state

    def record_write(self, path: Path, data: bytes, fmt: TextFormat | None, st: os.stat_result | None = None) -> None:
        """After a successful write: the model knows exactly these bytes."""
        self.record_written(path, fmt, hashlib.sha256(data).hexdigest() if len(data) <= HASH_LIMIT else None, st)

    def record_written(self, path: Path, fmt: TextFormat | None, digest: str | None,
                       st: os.stat_result | None = None) -> None:
        """After a successful write whose sha256 was computed while writing (None: too big).
        `st`: the written file's stat as the writer returned it (else the path is stat'ed)."""
        if st is None:
            st = os.stat(path)
        with self._lock:
            self._states[path] = FileState(st.st_mtime_ns, st.st_size, st.st_ino, digest, True, fmt)

    def check(self, path: Path, st: os.stat_result, fd: int | None = None) -> str | None:
        """None when the file may be written, else the exact error message. `fd`: the file's
        open descriptor (its content is compared, never what the path holds by now)."""
        state = self.get(path)
        if state is None:
            return NOT_READ
        if (state.mtime_ns, state.size) == (st.st_mtime_ns, st.st_size):
            return None
        if state.sha256 is not None and state.size == st.st_size:
            try:
                same = hash_file(path if fd is None else fd) == state.sha256
            except OSError:
                same = False
            if same:
                with self._lock:  # touched, not changed: remember the new mtime
                    self._states[path] = FileState(
                        st.st_mtime_ns, st.st_size, st.st_ino, state.sha256, state.complete, state.fmt
                    )
                return None
        return MODIFIED

    # -- persistence (the CLI keeps a session across processes) ------------------------------
    def snapshot(self) -> dict[str, dict]:
        """Every record as plain JSON-able values, keyed by path."""
        with self._lock:
            items = list(self._states.items())
        return {str(path): {"mtime_ns": s.mtime_ns, "size": s.size, "inode": s.inode, "sha256": s.sha256,
                            "complete": s.complete,
                            "fmt": None if s.fmt is None else {"encoding": s.fmt.encoding, "bom": s.fmt.bom.hex(),
                                                               "eol": s.fmt.eol}}
                for path, s in items}

    def restore(self, data: dict) -> None:
        """Records from `snapshot`; malformed entries are skipped (they only mean a new Read)."""
        restored: dict[Path, FileState] = {}
        for path, s in (data or {}).items():
            try:
                fmt = s.get("fmt")
                restored[Path(path)] = FileState(
                    int(s["mtime_ns"]), int(s["size"]), int(s["inode"]),
                    str(s["sha256"]) if s.get("sha256") else None, bool(s["complete"]),
                    None if fmt is None else TextFormat(str(fmt["encoding"]), bytes.fromhex(fmt["bom"]), str(fmt["eol"])),
                )
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
        with self._lock:
            self._states.update(restored)

    def close(self) -> None:
        with self._lock:
            self._states.clear()
