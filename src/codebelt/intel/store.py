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
from .extract import FileFacts

SCHEMA_VERSION = "4"
DB_NAME = "index.sqlite3"

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
CREATE TABLE refs (
    file_id INTEGER NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
    line INTEGER NOT NULL, character INTEGER NOT NULL
);
CREATE INDEX refs_name ON refs(name);
CREATE INDEX refs_file ON refs(file_id);
-- references counted per (file, name, plain): the repository map's graph is built from this.
-- plain = 1 counts bare identifiers (which may be locals), 0 calls, types, imports, attributes
CREATE TABLE file_names (file_id INTEGER NOT NULL, name TEXT NOT NULL, plain INTEGER NOT NULL,
                         count INTEGER NOT NULL);
CREATE INDEX file_names_file ON file_names(file_id);
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

    def known_files(self) -> dict[str, tuple[int, int, int]]:
        """path -> (id, mtime_ns, size)"""
        return {p: (i, m, s) for i, p, m, s in
                self.writer.execute("SELECT id, path, mtime_ns, size FROM files")}

    def delete_files(self, ids: Iterable[int]) -> None:
        rows = [(i,) for i in ids]
        w = self.writer
        for table in ("symbols", "refs", "file_names"):
            w.executemany(f"DELETE FROM {table} WHERE file_id = ?", rows)
        w.executemany("DELETE FROM files WHERE id = ?", rows)

    def put_file(self, rel: str, language: str, mtime_ns: int, size: int,
                 facts: FileFacts | None, error: str | None, old_id: int | None) -> None:
        w = self.writer
        if old_id is not None:
            self.delete_files([old_id])
        cur = w.execute(
            "INSERT INTO files (path, language, mtime_ns, size, truncated, error) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (rel, language, mtime_ns, size, int(bool(facts and facts.truncated)), error))
        fid = cur.lastrowid
        if facts is None:
            return
        w.executemany("INSERT INTO symbols VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      [(fid, *s) for s in facts.symbols])
        w.executemany("INSERT INTO refs VALUES (?, ?, ?, ?, ?)", [(fid, *r) for r in facts.refs])
        counts: dict[tuple[str, int], int] = {}
        for name, kind, _, _ in facts.refs:
            key = (name, int(kind == "identifier"))
            counts[key] = counts.get(key, 0) + 1
        w.executemany("INSERT INTO file_names VALUES (?, ?, ?, ?)",
                      [(fid, n, plain, c) for (n, plain), c in counts.items()])

    def commit(self) -> None:
        self.writer.commit()

    def rollback(self) -> None:
        try:
            self.writer.rollback()
        except sqlite3.Error:
            pass

    def close(self) -> None:
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
