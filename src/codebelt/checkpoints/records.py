"""Checkpoint records: one row per checkpoint, one per path it changed (before and after).

Kept in the store's SQLite database. A checkpoint belongs to a workspace root and a session;
its `kind` is `call` (a tool call), `task` (what a background task wrote after its call
returned, closed when the task ends) or `rewind` (a rewind, so that undoing it is a redo).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from .entries import Entry

SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace TEXT NOT NULL,
    session TEXT NOT NULL,
    kind TEXT NOT NULL,
    tool TEXT NOT NULL,
    label TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    notes TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS checkpoints_ws ON checkpoints(workspace, id);
CREATE TABLE IF NOT EXISTS changes (
    checkpoint INTEGER NOT NULL REFERENCES checkpoints(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    b_kind TEXT, b_mode INTEGER, b_hash TEXT, b_size INTEGER, b_target TEXT, b_lost TEXT,
    a_kind TEXT, a_mode INTEGER, a_hash TEXT, a_size INTEGER, a_target TEXT, a_lost TEXT,
    PRIMARY KEY (checkpoint, path)
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class Change:
    path: str
    before: Entry
    after: Entry


@dataclass
class Checkpoint:
    id: int
    workspace: str
    session: str
    kind: str
    tool: str
    label: str
    started: float
    ended: float | None
    notes: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    @property
    def not_kept(self) -> list[Change]:
        return [c for c in self.changes if (c.before.kind == "file" and c.before.hash is None)
                or (c.before.kind == "dir" and c.before.lost)]

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id, "kind": self.kind, "tool": self.tool, "label": self.label,
            "session": self.session, "started": self.started, "open": self.ended is None,
            "changed": len(self.changes), "notKept": [c.path for c in self.not_kept],
            "notes": list(self.notes),
        }


class Records:
    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock):
        self.conn = conn
        self.lock = lock
        conn.executescript(SCHEMA)
        conn.execute("PRAGMA foreign_keys=ON")

    def add(self, workspace: str, session: str, kind: str, tool: str, label: str, changes: Iterable[Change],
            notes: list[str] | None = None, *, started: float | None = None, open_: bool = False) -> int:
        now = time.time()
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                cur = self.conn.execute(
                    "INSERT INTO checkpoints(workspace, session, kind, tool, label, started, ended, notes) "
                    "VALUES (?,?,?,?,?,?,?,?)",
                    (workspace, session, kind, tool, label[:500], started or now, None if open_ else now,
                     json.dumps(notes or [])))
                cid = int(cur.lastrowid or 0)
                self._insert(cid, changes)
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        return cid

    def extend(self, cid: int, changes: Iterable[Change], notes: list[str] | None = None,
               close: bool = False) -> None:
        """Add what an open checkpoint (a background task's) saw since; a path already in it
        keeps its first `before`."""
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                existing = {r[0]: r[1:] for r in self.conn.execute(
                    "SELECT path, b_kind, b_mode, b_hash, b_size, b_target, b_lost FROM changes WHERE checkpoint=?",
                    (cid,))}
                merged = []
                for c in changes:
                    if c.path in existing:
                        merged.append(Change(c.path, Entry.from_row(existing[c.path]), c.after))
                    else:
                        merged.append(c)
                self._insert(cid, merged, replace=True)
                if notes:
                    row = self.conn.execute("SELECT notes FROM checkpoints WHERE id=?", (cid,)).fetchone()
                    old = json.loads(row[0]) if row else []
                    self.conn.execute("UPDATE checkpoints SET notes=? WHERE id=?", (json.dumps(old + notes), cid))
                if close:
                    self.conn.execute("UPDATE checkpoints SET ended=? WHERE id=?", (time.time(), cid))
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    def settle(self, cid: int, path: str, tag: str, entry: Entry) -> None:
        """A content kept after its checkpoint was recorded: every row of `path` from checkpoint
        `cid` on whose side still says `tag` (the one recorded, or a later one's pre-image taken
        from it) gets `entry`'s hash and reason."""
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                for side in ("a", "b"):
                    self.conn.execute(f"UPDATE changes SET {side}_hash=?, {side}_lost=? "
                                      f"WHERE checkpoint>=? AND path=? AND {side}_lost=?",
                                      (entry.hash, entry.lost, cid, path, tag))
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    def _insert(self, cid: int, changes: Iterable[Change], replace: bool = False) -> None:
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        self.conn.executemany(
            f"{verb} INTO changes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(cid, c.path, *c.before.to_row(), *c.after.to_row()) for c in changes])

    def get(self, cid: int) -> Checkpoint | None:
        with self.lock:
            row = self.conn.execute("SELECT * FROM checkpoints WHERE id=?", (cid,)).fetchone()
            if row is None:
                return None
            cp = _checkpoint(row)
            cp.changes = self._changes(cid)
        return cp

    def _changes(self, cid: int) -> list[Change]:
        rows = self.conn.execute("SELECT * FROM changes WHERE checkpoint=? ORDER BY path", (cid,)).fetchall()
        return [Change(r[1], Entry.from_row(r[2:8]), Entry.from_row(r[8:14])) for r in rows]

    def list(self, workspace: str, session: str | None = None, since: int | None = None,
             limit: int = 1000) -> list[Checkpoint]:
        """Checkpoints of `workspace` (of one session, from id `since` on), oldest first."""
        sql = "SELECT * FROM checkpoints WHERE workspace=?"
        args: list[Any] = [workspace]
        if session is not None:
            sql += " AND session=?"
            args.append(session)
        if since is not None:
            sql += " AND id>=?"
            args.append(since)
        sql += " ORDER BY id DESC LIMIT ?"
        args.append(limit)
        with self.lock:
            out = [_checkpoint(r) for r in self.conn.execute(sql, args).fetchall()][::-1]
            for cp in out:
                cp.changes = self._changes(cp.id)
        return out

    def close_open(self, cid: int) -> None:
        with self.lock:
            self.conn.execute("UPDATE checkpoints SET ended=? WHERE id=? AND ended IS NULL", (time.time(), cid))

    def hashes(self) -> set[str]:
        with self.lock:
            rows = self.conn.execute("SELECT b_hash FROM changes WHERE b_hash IS NOT NULL "
                                     "UNION SELECT a_hash FROM changes WHERE a_hash IS NOT NULL").fetchall()
        return {r[0] for r in rows}

    def expire(self, older_than: float) -> int:
        """Delete closed checkpoints that ended before `older_than` (a timestamp)."""
        with self.lock:
            cur = self.conn.execute("DELETE FROM checkpoints WHERE ended IS NOT NULL AND ended < ?", (older_than,))
            return cur.rowcount

    def count(self) -> int:
        with self.lock:
            return int(self.conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0])

    def oldest(self, n: int) -> list[int]:
        with self.lock:
            return [r[0] for r in self.conn.execute(
                "SELECT id FROM checkpoints WHERE ended IS NOT NULL ORDER BY id LIMIT ?", (n,)).fetchall()]

    def delete(self, ids: list[int]) -> None:
        with self.lock:
            self.conn.executemany("DELETE FROM checkpoints WHERE id=?", [(i,) for i in ids])


def _checkpoint(row: tuple[Any, ...]) -> Checkpoint:
    cid, workspace, session, kind, tool, label, started, ended, notes = row
    return Checkpoint(cid, workspace, session, kind, tool, label, started, ended, json.loads(notes or "[]"))

