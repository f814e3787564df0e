"""What the tracker last saw of each file, kept between sessions: path → stat identity → hash.

A new session (or a `codebelt call` process) lists the tree again but reads and hashes only the
files whose stat identity changed since — the test git's index makes — so the first baseline of
a large tree is paid once per workspace, not once per session.
"""

from __future__ import annotations

import sqlite3
import threading

from .entries import StatKey

SCHEMA = """
CREATE TABLE IF NOT EXISTS manifest (
    root TEXT NOT NULL,
    path TEXT NOT NULL,
    dev INTEGER, ino INTEGER, size INTEGER, mtime INTEGER, ctime INTEGER,
    hash TEXT NOT NULL,
    PRIMARY KEY (root, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS manifest_stamp (
    root TEXT PRIMARY KEY,
    stamp TEXT NOT NULL
) WITHOUT ROWID;
"""


class Manifest:
    """One root's rows. Read whole when first needed; its stamp (a random token written with
    every save) at once: a process that saved the rows and kept the stamp knows, by one query,
    that nobody saved other rows since (see `keeping`)."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock, root: str):
        self.conn = conn
        self.lock = lock
        self.root = root
        conn.executescript(SCHEMA)
        with lock:
            row = conn.execute("SELECT stamp FROM manifest_stamp WHERE root=?", (root,)).fetchone()
        self.stamp: str | None = row[0] if row else None
        self._saved: dict[str, tuple[StatKey, str]] | None = None
        self._absent: set[str] = set()

    @property
    def saved(self) -> dict[str, tuple[StatKey, str]]:
        if self._saved is None:
            self._load()
        return self._saved  # type: ignore[return-value]

    def _load(self) -> None:
        conn, lock, root = self.conn, self.lock, self.root
        with lock:
            # whether each content is still in the store, asked once here rather than once a file
            # (collection never removes what a manifest names, so the answer holds)
            rows = conn.execute("SELECT m.path, m.dev, m.ino, m.size, m.mtime, m.ctime, m.hash, o.hash IS NOT NULL "
                                "FROM manifest m LEFT JOIN objects o ON o.hash = m.hash WHERE m.root=?",
                                (root,)).fetchall()
        self._saved = {r[0]: (tuple(r[1:6]), r[6]) for r in rows}  # type: ignore[misc]
        self._absent = {r[0] for r in rows if not r[7]}

    def hash_for(self, path: str, key: StatKey) -> str | None:
        """The content kept for `path` when it had stat identity `key`, if still in the store."""
        hit = self.saved.get(path)
        return hit[1] if hit is not None and hit[0] == key and path not in self._absent else None

    def saved_rows(self) -> dict[str, tuple[StatKey, str]]:
        """What was saved, less the rows whose content is gone from the store."""
        saved = self.saved
        if not self._absent:
            return saved
        return {p: row for p, row in self.saved.items() if p not in self._absent}

    def save(self, current: dict[str, tuple[StatKey, str]]) -> None:
        """Write what differs from what was saved (paths under this root only)."""
        saved = self.saved
        upsert = {p: row for p, row in current.items() if saved.get(p) != row}
        gone = [p for p in saved if p not in current]
        self.update(upsert, gone)
        self._saved = dict(current)

    def update(self, upsert: dict[str, tuple[StatKey, str]], gone: list[str]) -> None:
        """Write these rows and remove those, with a new stamp (nothing written when neither
        has any: the stamp still names the rows)."""
        if not upsert and not gone:
            return
        import secrets

        stamp = secrets.token_hex(8)
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                self.conn.executemany("INSERT OR REPLACE INTO manifest VALUES (?,?,?,?,?,?,?,?)",
                                      [(self.root, p, *k, h) for p, (k, h) in upsert.items()])
                self.conn.executemany("DELETE FROM manifest WHERE root=? AND path=?", [(self.root, p) for p in gone])
                self.conn.execute("INSERT OR REPLACE INTO manifest_stamp VALUES (?,?)", (self.root, stamp))
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        self.stamp = stamp
        if self._saved is not None:
            self._saved.update(upsert)
            for p in gone:
                self._saved.pop(p, None)


def live_hashes(conn: sqlite3.Connection, lock: threading.RLock) -> set[str]:
    with lock:
        conn.executescript(SCHEMA)
        return {r[0] for r in conn.execute("SELECT DISTINCT hash FROM manifest").fetchall()}
