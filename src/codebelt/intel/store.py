"""The index's SQLite file: schema, versioning, and the few statements that write it.

One database per workspace root. WAL lets queries read while the builder writes. A database
whose schema version or root differs from ours is deleted and rebuilt: the index is a cache.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Iterable

from ..errors import IndexStoreError
from .rows import FileRows

SCHEMA_VERSION = "6"  # 6: Go variables of `var ( … )` blocks, embedded fields
DB_NAME = "index.sqlite3"
# The WAL is copied back into the database (a checkpoint: two fsyncs, tens of ms) by a thread
# of its own once it passes CHECKPOINT_AT, so a re-index does not wait on the disk; past
# CHECKPOINT_INLINE (the thread cannot keep up) the writer checkpoints itself, bounding the WAL.
CHECKPOINT_AT = 4 << 20
CHECKPOINT_INLINE = 64 << 20

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,          -- relative to the root, '/'-separated
    language TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    truncated INTEGER NOT NULL DEFAULT 0,
    error TEXT                          -- why it has no symbols: binary, parse failure …
);
CREATE TABLE symbols (
    file_id INTEGER NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
    line INTEGER NOT NULL, character INTEGER NOT NULL, end_line INTEGER NOT NULL,
    container TEXT, signature TEXT NOT NULL
);
CREATE INDEX symbols_name ON symbols(name);
CREATE INDEX symbols_file ON symbols(file_id);
-- one row per (file, name, plain): how often the file uses the name, and where (see rows.py).
-- plain = 1 counts bare identifiers (which may be locals), 0 calls, types, imports, attributes;
-- the repository map's graph is built from the counts
CREATE TABLE refs (
    file_id INTEGER NOT NULL, name TEXT NOT NULL, plain INTEGER NOT NULL,
    count INTEGER NOT NULL, spots BLOB NOT NULL
);
CREATE INDEX refs_name ON refs(name);
CREATE INDEX refs_file ON refs(file_id);
"""




def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False,
                               timeout=10.0)
    else:
        conn = sqlite3.connect(path, check_same_thread=False, timeout=10.0)
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


class Store:
    """Owns the writer connection and hands out one reader connection per thread."""

    def __init__(self, cache_dir: Path, root: Path):
        self.path = cache_dir / DB_NAME
        self.root = root
        try:
            cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as e:
            raise IndexStoreError(f"cannot create the index cache directory {cache_dir}: {e}") from e
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        try:
            self.writer = self._open_writer()
        except sqlite3.Error as e:
            raise IndexStoreError(f"cannot open the index database {self.path}: {e}") from e
        self._checkpointer = _Checkpointer(self.path)

    def _open_writer(self) -> sqlite3.Connection:
        conn = self._try_open()
        if conn is None:
            # stale schema, another root, or a damaged file: the index is a cache, start over
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(f"{self.path}{suffix}")
                except FileNotFoundError:
                    pass
            conn = _connect(self.path, readonly=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(SCHEMA)
            conn.executemany("INSERT INTO meta VALUES (?, ?)",
                             [("schema", SCHEMA_VERSION), ("root", str(self.root))])
            conn.commit()
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        return conn

    def _try_open(self) -> sqlite3.Connection | None:
        if not self.path.exists():
            return None
        conn = None
        try:
            conn = _connect(self.path, readonly=False)
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("schema") == SCHEMA_VERSION and meta.get("root") == str(self.root):
                conn.execute("PRAGMA journal_mode=WAL")
                return conn
        except sqlite3.DatabaseError:
            pass
        if conn is not None:
            conn.close()
        return None

    def reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = _connect(self.path, readonly=True)
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    # -- writing (builder thread only) ---------------------------------------------------------

    def known_files(self) -> dict[str, tuple[int, int, int, str]]:
        """path -> (id, mtime_ns, size, language)"""
        return {p: (i, m, s, lang) for i, p, m, s, lang in
                self.writer.execute("SELECT id, path, mtime_ns, size, language FROM files")}

    def delete_files(self, ids: Iterable[int]) -> None:
        rows = [(i,) for i in ids]
        w = self.writer
        for table in ("symbols", "refs"):
            w.executemany(f"DELETE FROM {table} WHERE file_id = ?", rows)
        w.executemany("DELETE FROM files WHERE id = ?", rows)

    def put_file(self, rel: str, language: str, mtime_ns: int, size: int,
                 rows: FileRows | None, error: str | None, old_id: int | None) -> None:
        w = self.writer
        if old_id is not None:
            self.delete_files([old_id])
        cur = w.execute(
            "INSERT INTO files (path, language, mtime_ns, size, truncated, error) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (rel, language, mtime_ns, size, int(bool(rows and rows.truncated)), error))
        fid = cur.lastrowid
        if rows is None:
            return
        w.executemany("INSERT INTO symbols VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      [(fid, *s) for s in rows.symbols])
        w.executemany("INSERT INTO refs VALUES (?, ?, ?, ?, ?)", [(fid, *r) for r in rows.refs])

    def set_meta(self, key: str, value: str) -> None:
        self.writer.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def commit(self) -> None:
        self.writer.commit()
        try:
            wal = os.stat(f"{self.path}-wal").st_size
        except OSError:
            return
        if wal >= CHECKPOINT_INLINE:
            try:
                self.writer.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error:
                pass  # retried at the next commit; the data is safe in the WAL meanwhile
        elif wal >= CHECKPOINT_AT:
            self._checkpointer.request()

    def rollback(self) -> None:
        try:
            self.writer.rollback()
        except sqlite3.Error:
            pass

    def close(self) -> None:
        self._checkpointer.stop()
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for conn in readers:
            try:
                conn.close()
            except sqlite3.Error:
                pass
        try:
            self.writer.close()
        except sqlite3.Error:
            pass


class _Checkpointer:
    """Runs PASSIVE checkpoints on its own connection when asked (started on first request).
    PASSIVE never blocks readers or the writer: it copies what no reader still needs."""

    def __init__(self, path: Path):
        self.path = path
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.passes = 0  # checkpoints run so far (tests wait on it instead of sleeping)
        self.ran = threading.Condition()

    def request(self) -> None:
        with self._lock:
            if self._stopping:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="codebelt-intel-checkpoint")
                self._thread.start()
        self._wake.set()

    def _loop(self) -> None:
        conn = None
        try:
            conn = _connect(self.path, readonly=False)
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    pass  # the writer's inline fallback bounds the WAL
                with self.ran:
                    self.passes += 1
                    self.ran.notify_all()
        except sqlite3.Error:
            return
        finally:
            if conn is not None:
                conn.close()

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            t = self._thread
        self._wake.set()
        if t is not None:
            t.join(timeout=30.0)  # one checkpoint at most; a stuck disk must not hang close
