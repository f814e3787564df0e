"""The audit trail: every call recorded in SQLite (WAL), off the caller's thread.

`record` only puts a row on a queue (microseconds); a writer thread inserts rows in batches.
An audit failure never fails a tool call: errors are counted and the row is dropped.
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    session_id TEXT NOT NULL,
    workspace TEXT NOT NULL,
    tool TEXT NOT NULL,
    input TEXT NOT NULL,
    decision TEXT,
    decided_by TEXT,
    reason TEXT,
    duration_ms REAL NOT NULL,
    result_chars INTEGER NOT NULL,
    is_error INTEGER NOT NULL,
    error TEXT,
    checkpoint INTEGER,
    confinement TEXT
);
CREATE INDEX IF NOT EXISTS calls_ts ON calls(ts);
CREATE TABLE IF NOT EXISTS hook_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    session_id TEXT NOT NULL,
    event TEXT NOT NULL,
    tool TEXT,
    hook TEXT NOT NULL,
    source TEXT,
    exit_code INTEGER,
    duration_ms REAL NOT NULL,
    decision TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS calls_tool ON calls(tool);
CREATE TABLE IF NOT EXISTS connections (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    session_id TEXT NOT NULL,
    origin TEXT NOT NULL,
    label TEXT,
    host TEXT NOT NULL,
    port INTEGER NOT NULL,
    protocol TEXT,
    address TEXT,
    decision TEXT NOT NULL,
    reason TEXT,
    asked INTEGER NOT NULL,
    bytes_up INTEGER NOT NULL,
    bytes_down INTEGER NOT NULL,
    duration_ms REAL NOT NULL,
    error TEXT
);
CREATE INDEX IF NOT EXISTS connections_session ON connections(session_id);
"""
CONNECTION_COLUMNS = (
    "ts", "session_id", "origin", "label", "host", "port", "protocol", "address", "decision", "reason", "asked",
    "bytes_up", "bytes_down", "duration_ms", "error",
)
COLUMNS = (
    "id", "ts", "session_id", "workspace", "tool", "input", "decision", "decided_by", "reason",
    "duration_ms", "result_chars", "is_error", "error", "checkpoint", "confinement",
)
MAX_ERROR_CHARS = 1_000
MAX_VALUE_CHARS = 500
MAX_INPUT_CHARS = 4_000


def default_path() -> Path:
    env = os.environ.get("CODEBELT_AUDIT_DB")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(base) / "codebelt" / "audit.db"


def _cut(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= MAX_VALUE_CHARS else value[:MAX_VALUE_CHARS] + f"…[{len(value)} chars]"
    if isinstance(value, dict):
        return {str(k): _cut(v) for k, v in list(value.items())[:50]}
    if isinstance(value, (list, tuple)):
        return [_cut(v) for v in list(value)[:50]]
    return value


def summarize_input(value: Any) -> str:
    try:
        text = json.dumps(_cut(value), ensure_ascii=False, default=str)
    except Exception:
        text = repr(value)
    return text if len(text) <= MAX_INPUT_CHARS else text[:MAX_INPUT_CHARS] + "…"


def connect(path: Path) -> sqlite3.Connection:
    # The log holds what tools were given (file contents, commands with tokens): private to the
    # user. A new directory is 0700 and a new database 0600 (SQLite gives its -wal/-shm files the
    # database's mode); existing ones are left as their owner set them.
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError:
        pass  # sqlite reports a real problem below, with its own message
    conn = sqlite3.connect(path, timeout=10, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(SCHEMA)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(calls)")}
    if "error" not in columns:  # a log written by an older codebelt
        conn.execute("ALTER TABLE calls ADD COLUMN error TEXT")
    if "checkpoint" not in columns:  # the checkpoint a call made (see docs/checkpoints.md)
        conn.execute("ALTER TABLE calls ADD COLUMN checkpoint INTEGER")
    if "confinement" not in columns:  # where what the call started ran
        conn.execute("ALTER TABLE calls ADD COLUMN confinement TEXT")
    return conn


class AuditLog:
    _STOP = object()

    def __init__(self, path: Path):
        self.path = path
        self.failures = 0
        self.last_error: str | None = None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._writer, name="codebelt-audit", daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, path: Path | None = None) -> "AuditLog":
        return cls(path or default_path())

    def record(
        self,
        *,
        session_id: str,
        workspace: str,
        tool: str,
        input: Any,
        decision: Any,
        duration_ms: float,
        result_chars: int,
        is_error: bool,
        error: str | None = None,
        checkpoint: int | None = None,
    ) -> None:
        # Keep the caller's cost tiny: summarise here (needs the live object), insert later.
        try:
            row = (
                time.time(),
                session_id,
                workspace,
                tool,
                summarize_input(input),
                getattr(decision, "behavior", None),
                getattr(decision, "decided_by", None),
                getattr(decision, "reason", None),
                round(duration_ms, 3),
                result_chars,
                int(is_error),
                error[:MAX_ERROR_CHARS] if error else None,
                checkpoint,
                getattr(decision, "confinement", None),
            )
            self._queue.put(row)
        except Exception as e:  # noqa: BLE001
            self.failures += 1
            self.last_error = str(e)

    def record_hook(self, *, session_id: str, event: str, tool: str | None, hook: str, source: str,
                    exit_code: int | None, duration_ms: float, decision: str | None, error: str | None) -> None:
        """One hook run: which, for what, how it ended, what it decided."""
        try:
            self._queue.put(("hook", (time.time(), session_id, event, tool, hook[:MAX_VALUE_CHARS], source,
                                      exit_code, round(duration_ms, 3), decision,
                                      error[:MAX_ERROR_CHARS] if error else None)))
        except Exception as e:  # noqa: BLE001
            self.failures += 1
            self.last_error = str(e)

    def record_connection(self, *, session_id: str, record: Any) -> None:
        """One connection of the network proxy or WebFetch (network.gate.ConnectionRecord)."""
        try:
            r = record
            self._queue.put(("conn", (r.started, session_id, r.origin, r.label[:MAX_VALUE_CHARS], r.host[:MAX_VALUE_CHARS],
                                      r.port, r.protocol, r.address, r.decision, (r.reason or "")[:MAX_ERROR_CHARS],
                                      int(r.asked), r.bytes_up, r.bytes_down, r.duration_ms,
                                      r.error[:MAX_ERROR_CHARS] if r.error else None)))
        except Exception as e:  # noqa: BLE001
            self.failures += 1
            self.last_error = str(e)

    def _writer(self) -> None:
        conn = None
        while True:
            item = self._queue.get()
            batch = [item]
            while True:  # drain what is already waiting, to insert in one transaction
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(i is self._STOP for i in batch)
            hook_rows = [i[1] for i in batch if isinstance(i, tuple) and len(i) == 2 and i[0] == "hook"]
            conn_rows = [i[1] for i in batch if isinstance(i, tuple) and len(i) == 2 and i[0] == "conn"]
            rows = [i for i in batch if i is not self._STOP and not isinstance(i, threading.Event)
                    and not (isinstance(i, tuple) and len(i) == 2 and i[0] in ("hook", "conn"))]
            events = [i for i in batch if isinstance(i, threading.Event)]
            if rows or hook_rows or conn_rows:
                try:
                    if conn is None:
                        conn = connect(self.path)
                    with conn:
                        if conn_rows:
                            conn.executemany(
                                f"INSERT INTO connections ({', '.join(CONNECTION_COLUMNS)}) VALUES "
                                f"({','.join('?' * len(CONNECTION_COLUMNS))})", conn_rows)
                        if hook_rows:
                            conn.executemany(
                                "INSERT INTO hook_runs (ts, session_id, event, tool, hook, source, exit_code,"
                                " duration_ms, decision, error) VALUES (?,?,?,?,?,?,?,?,?,?)", hook_rows)
                        conn.executemany(
                            "INSERT INTO calls (ts, session_id, workspace, tool, input, decision,"
                            " decided_by, reason, duration_ms, result_chars, is_error, error, checkpoint, confinement)"
                            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                            rows,
                        )
                except Exception as e:  # noqa: BLE001 — the audit never fails a call
                    self.failures += len(rows) + len(hook_rows) + len(conn_rows)
                    self.last_error = f"{type(e).__name__}: {e}"
                    conn = None
            for ev in events:
                ev.set()
            if stop:
                if conn is not None:
                    conn.close()
                return

    def flush(self, timeout: float = 5.0) -> None:
        ev = threading.Event()
        self._queue.put(ev)
        ev.wait(timeout)

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(self._STOP)
            self._thread.join(timeout=5)


def query(
    path: Path,
    *,
    tail: int | None = 20,
    tool: str | None = None,
    session_id: str | None = None,
    errors_only: bool = False,
) -> Iterator[dict[str, Any]]:
    if not path.exists():
        return iter(())
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    where, args = [], []
    if tool:
        where.append("tool = ?")
        args.append(tool)
    if session_id:
        where.append("session_id = ?")
        args.append(session_id)
    if errors_only:
        where.append("is_error = 1")
    present = {row[1] for row in conn.execute("PRAGMA table_info(calls)")}
    # a log written by an older codebelt lacks the newer columns: they read as NULL
    sql = f"SELECT {', '.join(c if c in present else 'NULL' for c in COLUMNS)} FROM calls"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id DESC"
    if tail:
        sql += f" LIMIT {int(tail)}"
    try:
        rows = conn.execute(sql, args).fetchall()
    finally:
        conn.close()
    return (dict(zip(COLUMNS, r)) for r in reversed(rows))


def hook_runs(path: Path, session_id: str | None = None) -> list[dict[str, Any]]:
    """Recorded hook runs, oldest first."""
    if not path.exists():
        return []
    conn = sqlite3.connect(path, timeout=10)
    try:
        cols = ("ts", "session_id", "event", "tool", "hook", "source", "exit_code", "duration_ms", "decision", "error")
        sql = f"SELECT {', '.join(cols)} FROM hook_runs"
        args: tuple = ()
        if session_id:
            sql += " WHERE session_id = ?"
            args = (session_id,)
        try:
            return [dict(zip(cols, r)) for r in conn.execute(sql + " ORDER BY id", args)]
        except sqlite3.OperationalError:
            return []
    finally:
        conn.close()


def connections(path: Path, session_id: str | None = None, tail: int | None = None) -> list[dict[str, Any]]:
    """Recorded network connections (the proxy's and WebFetch's), oldest first."""
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        sql = f"SELECT {', '.join(CONNECTION_COLUMNS)} FROM connections"
        args: tuple = ()
        if session_id:
            sql += " WHERE session_id = ?"
            args = (session_id,)
        sql += " ORDER BY id DESC"
        if tail:
            sql += f" LIMIT {int(tail)}"
        try:
            rows = conn.execute(sql, args).fetchall()
        except sqlite3.OperationalError:  # a log written before connections were recorded
            return []
        return [dict(zip(CONNECTION_COLUMNS, r)) for r in reversed(rows)]
    finally:
        conn.close()
