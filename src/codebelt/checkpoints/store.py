"""The content-addressed object store: file contents by SHA-256, deduplicated.

Small contents are appended to pack files (one open file per store; thousands of small files
cost one sequential write instead of thousands of file creations, which dominate on ext4);
contents of `LOOSE_BYTES` and more are kept one file each, cloned where the filesystem can
(FICLONE: btrfs, XFS) and otherwise copied in the kernel (`copy_file_range`) or read, hashed
and written in one pass. The index is a table of the store's SQLite database: hash → pack and
offset (or loose), size, when last used.

A file is read through a descriptor opened without following symlinks and hashed from the
same bytes that are kept, so what is recorded is exactly what was stored.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

from .entries import StatKey, stat_key

LOOSE_BYTES = 1 << 20
PACK_BYTES = 256 << 20  # a pack is closed past this size and a new one begun
CHUNK = 1 << 20
FICLONE = 0x40049409  # _IOW(0x94, 9, int)

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    hash TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    pack TEXT,
    offset INTEGER,
    used REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS objects_pack ON objects(pack);
"""


class TooLarge(Exception):
    """The content is over the size the caller allows; nothing was kept."""


class Unreadable(Exception):
    """The file could not be read (gone, permission, not a regular file)."""


class Changed(Unreadable):
    """The file is not the one expected (its stat identity differs), or changed while read:
    nothing was kept."""


def connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:  # contents of the user's files: private to the user
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    conn = sqlite3.connect(path, timeout=30, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


class ObjectStore:
    def __init__(self, directory: Path, conn: sqlite3.Connection, lock: threading.RLock):
        self.dir = directory
        self.conn = conn
        self.lock = lock
        conn.executescript(SCHEMA)
        (directory / "packs").mkdir(mode=0o700, exist_ok=True)
        (directory / "loose").mkdir(mode=0o700, exist_ok=True)
        self._pack_name: str | None = None
        self._pack_fd: int | None = None
        self._pack_size = 0
        self._total: int | None = None
        self._readers: dict[str, int] = {}  # pack name → descriptor open for reading

    # -- writing ---------------------------------------------------------------------------
    def put_bytes(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        with self.lock:
            if self._touch(digest):
                return digest
            if len(data) >= LOOSE_BYTES:
                self._write_loose(digest, [data])
                self._index(digest, len(data), None, None)
            else:
                pack, offset = self._append(data)
                self._index(digest, len(data), pack, offset)
        return digest

    def put_file(self, path: str, limit: int | None = None, expect: StatKey | None = None) -> tuple[str, int]:
        """Keep the regular file at `path` (not following a symlink): (hash, size). Raises
        TooLarge past `limit` bytes, Unreadable when it cannot be read as a regular file;
        with `expect` (a stat identity), Changed when the file is not that one before the read
        or after it (then nothing is kept)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as e:
            raise Unreadable(e.strerror or str(e)) from None
        try:
            st = os.fstat(fd)
            if not (st.st_mode & 0o170000 == 0o100000):
                raise Unreadable("not a regular file")
            check = None
            if expect is not None:
                def check() -> None:
                    if stat_key(os.fstat(fd)) != expect:
                        raise Changed("it is not the file the call left")
                check()
            if limit is not None and st.st_size > limit:
                raise TooLarge(st.st_size)
            if st.st_size < LOOSE_BYTES:
                data = _read_all(fd, LOOSE_BYTES)
                if len(data) >= LOOSE_BYTES:  # grew while read: keep what was read, as loose
                    return self._put_loose_fd(fd, data, limit, check)
                if check is not None:
                    check()
                return self.put_bytes(data), len(data)
            return self._put_loose_fd(fd, b"", limit, check)
        except OSError as e:
            raise Unreadable(e.strerror or str(e)) from None
        finally:
            os.close(fd)

    def _put_loose_fd(self, fd: int, head: bytes, limit: int | None,
                      check: Callable[[], None] | None = None) -> tuple[str, int]:
        tmp = self.dir / "loose" / f".tmp-{uuid.uuid4().hex}"
        out = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            h = hashlib.sha256(head)
            size = len(head)
            if head:
                _write_all(out, head)
            source = fd
            if not head:
                try:
                    fcntl.ioctl(out, FICLONE, fd)
                    source = out  # hashed from the clone itself: what is kept is what is hashed
                except OSError:
                    pass
            while True:  # hash while copying (or, after a clone, while reading it)
                chunk = os.pread(source, CHUNK, size) if source == out else os.read(fd, CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if limit is not None and size > limit:
                    raise TooLarge(size)
                h.update(chunk)
                if source != out:
                    _write_all(out, chunk)
            if check is not None:  # a write during the copy changes the identity: the copy is not kept
                check()
            digest = h.hexdigest()
        except BaseException:
            os.close(out)
            tmp.unlink(missing_ok=True)
            raise
        os.close(out)
        with self.lock:
            if self._touch(digest):
                tmp.unlink(missing_ok=True)
                return digest, size
            final = self._loose_path(digest)
            final.parent.mkdir(mode=0o700, exist_ok=True)
            os.replace(tmp, final)
            self._index(digest, size, None, None)
        return digest, size

    def _write_loose(self, digest: str, chunks: list[bytes]) -> None:
        final = self._loose_path(digest)
        final.parent.mkdir(mode=0o700, exist_ok=True)
        tmp = final.with_name(f".tmp-{uuid.uuid4().hex}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            for c in chunks:
                _write_all(fd, c)
        finally:
            os.close(fd)
        os.replace(tmp, final)

    def _append(self, data: bytes) -> tuple[str, int]:
        if self._pack_fd is None or self._pack_size >= PACK_BYTES:
            self._close_pack()
            self._pack_name = f"{uuid.uuid4().hex}.pack"
            self._pack_fd = os.open(self.dir / "packs" / self._pack_name,
                                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
            fcntl.flock(self._pack_fd, fcntl.LOCK_EX)  # held while this store appends: never compacted
            self._pack_size = 0
        offset = self._pack_size
        _write_all(self._pack_fd, data)
        self._pack_size += len(data)
        assert self._pack_name is not None
        return self._pack_name, offset

    def _index(self, digest: str, size: int, pack: str | None, offset: int | None) -> None:
        if self._total is not None:
            self._total += size
        self.conn.execute("INSERT OR REPLACE INTO objects(hash, size, pack, offset, used) VALUES (?,?,?,?,?)",
                          (digest, size, pack, offset, time.time()))

    def _touch(self, digest: str) -> bool:
        """Whether the store has `digest`, marking it used now (collection spares recent use)."""
        cur = self.conn.execute("UPDATE objects SET used=? WHERE hash=?", (time.time(), digest))
        return cur.rowcount > 0

    def _loose_path(self, digest: str) -> Path:
        return self.dir / "loose" / digest[:2] / digest

    def _close_pack(self) -> None:
        if self._pack_fd is not None:
            os.close(self._pack_fd)
            self._pack_fd = None

    # -- reading ---------------------------------------------------------------------------
    def has(self, digest: str) -> bool:
        with self.lock:
            return self.conn.execute("SELECT 1 FROM objects WHERE hash=?", (digest,)).fetchone() is not None

    def chunks(self, digest: str) -> Iterator[bytes]:
        """The content of `digest`, in chunks. Raises KeyError when it is not in the store."""
        with self.lock:
            row = self.conn.execute("SELECT size, pack, offset FROM objects WHERE hash=?", (digest,)).fetchone()
        if row is None:
            raise KeyError(digest)
        size, pack, offset = row
        if pack is None:
            with open(self._loose_path(digest), "rb") as f:
                while chunk := f.read(CHUNK):
                    yield chunk
            return
        data = os.pread(self._reader(pack), size, offset)
        if len(data) != size:
            raise KeyError(digest)
        yield data

    def _reader(self, pack: str) -> int:
        with self.lock:
            fd = self._readers.get(pack)
            if fd is None:
                if len(self._readers) >= 64:
                    for old in self._readers.values():
                        os.close(old)
                    self._readers.clear()
                fd = self._readers[pack] = os.open(self.dir / "packs" / pack, os.O_RDONLY | os.O_CLOEXEC)
            return fd

    def read(self, digest: str) -> bytes:
        return b"".join(self.chunks(digest))

    # -- accounting and collection ---------------------------------------------------------
    def total_bytes(self) -> int:
        """Bytes of content kept (counted once, then kept up to date by this store's writes)."""
        with self.lock:
            if self._total is None:
                self._total = int(self.conn.execute("SELECT COALESCE(SUM(size), 0) FROM objects").fetchone()[0])
            return self._total

    def collect(self, live: set[str], grace_s: float = 3600.0) -> int:
        """Remove every object not in `live` and unused for `grace_s` (another session may have
        just deduplicated against it); rewrite packs that are mostly dead. Bytes freed."""
        with self.lock:
            rows = self.conn.execute("SELECT hash, size, pack FROM objects WHERE used < ?",
                                     (time.time() - grace_s,)).fetchall()
            dead = [(h, s, p) for h, s, p in rows if h not in live]
            freed = 0
            self.conn.execute("BEGIN")
            for h, s, p in dead:
                self.conn.execute("DELETE FROM objects WHERE hash=?", (h,))
                if p is None:
                    self._loose_path(h).unlink(missing_ok=True)
                freed += s
            self.conn.execute("COMMIT")
            self._close_readers()
            self._compact()
            self._total = None
        return freed

    def _compact(self) -> None:
        """Rewrite packs whose live objects fill less than half of them; remove empty ones."""
        live_by_pack = dict(self.conn.execute(
            "SELECT pack, SUM(size) FROM objects WHERE pack IS NOT NULL GROUP BY pack").fetchall())
        for entry in os.scandir(self.dir / "packs"):
            name = entry.name
            if not name.endswith(".pack") or name == self._pack_name:
                continue
            size = entry.stat().st_size
            live = live_by_pack.get(name, 0)
            if live and live * 2 >= size:
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                try:  # another store still appends to it
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue
                for digest, osize, offset in self.conn.execute(
                        "SELECT hash, size, offset FROM objects WHERE pack=?", (name,)).fetchall():
                    pack, off = self._append(os.pread(fd, osize, offset))
                    self.conn.execute("UPDATE objects SET pack=?, offset=? WHERE hash=?", (pack, off, digest))
                os.unlink(entry.path)
            except FileNotFoundError:
                pass
            finally:
                os.close(fd)

    def batch(self):
        """A transaction around many puts (one commit instead of one per object)."""
        return _Batch(self)

    def _close_readers(self) -> None:
        for fd in self._readers.values():
            os.close(fd)
        self._readers.clear()

    def close(self) -> None:
        with self.lock:
            self._close_pack()
            self._close_readers()


class _Batch:
    def __init__(self, store: ObjectStore):
        self.store = store

    def __enter__(self) -> None:
        self.store.lock.acquire()
        self.store.conn.execute("BEGIN")

    def __exit__(self, *exc: object) -> None:
        try:
            self.store.conn.execute("COMMIT")
        finally:
            self.store.lock.release()


def _read_all(fd: int, limit: int) -> bytes:
    parts = []
    total = 0
    while total < limit:
        chunk = os.read(fd, limit - total)
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        if n <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[n:]
