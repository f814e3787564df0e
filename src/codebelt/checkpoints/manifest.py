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
"""


class Manifest:
    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock, root: str):
        self.conn = conn
        self.lock = lock
        self.root = root
        conn.executescript(SCHEMA)
        with lock:
            # whether each content is still in the store, asked once here rather than once a file
            # (collection never removes what a manifest names, so the answer holds)
            rows = conn.execute("SELECT m.path, m.dev, m.ino, m.size, m.mtime, m.ctime, m.hash, o.hash IS NOT NULL "
                                "FROM manifest m LEFT JOIN objects o ON o.hash = m.hash WHERE m.root=?",
                                (root,)).fetchall()
        self.saved: dict[str, tuple[StatKey, str]] = {r[0]: (tuple(r[1:6]), r[6]) for r in rows}  # type: ignore[misc]
        self._absent = {r[0] for r in rows if not r[7]}

    def hash_for(self, path: str, key: StatKey) -> str | None:
        """The content kept for `path` when it had stat identity `key`, if still in the store."""
        hit = self.saved.get(path)
        return hit[1] if hit is not None and hit[0] == key and path not in self._absent else None

    def save(self, current: dict[str, tuple[StatKey, str]]) -> None:
        """Write what differs from what was saved (paths under this root only)."""
        upsert = [(self.root, p, *k, h) for p, (k, h) in current.items() if self.saved.get(p) != (k, h)]
        gone = [(self.root, p) for p in self.saved if p not in current]
        if not upsert and not gone:
            return
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                self.conn.executemany("INSERT OR REPLACE INTO manifest VALUES (?,?,?,?,?,?,?,?)", upsert)
                self.conn.executemany("DELETE FROM manifest WHERE root=? AND path=?", gone)
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        self.saved = dict(current)


def live_hashes(conn: sqlite3.Connection, lock: threading.RLock) -> set[str]:
    with lock:
        conn.executescript(SCHEMA)
        return {r[0] for r in conn.execute("SELECT DISTINCT hash FROM manifest").fetchall()}
