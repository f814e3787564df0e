"""Files codebelt creates that hold what the model saw or sent stay private to the user: the
audit log (tool inputs: file contents, commands with tokens) and the session's results and temp
directories (evicted outputs)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def mode(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def test_new_audit_log_and_its_directory_are_private(ws: Path, tmp_path: Path, make_session):
    db = tmp_path / "state" / "codebelt" / "audit.db"
    s = make_session(audit=db)
    s.call("Write", {"file_path": "x.txt", "content": "token=s3cret\n"})
    s.close()
    assert mode(db.parent) == 0o700
    assert mode(db) == 0o600
    for sidecar in (db.with_name("audit.db-wal"), db.with_name("audit.db-shm")):
        if sidecar.exists():
            assert mode(sidecar) & 0o077 == 0, sidecar


def test_session_scratch_directories_are_private(make_session):
    s = make_session()
    scratch = s.results_dir.parent
    assert mode(scratch) & 0o077 == 0  # the one gate: everything below is unreachable to others
    assert s.temp_dir.parent == scratch
