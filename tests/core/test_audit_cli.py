"""`codebelt audit` reads what sessions recorded: filters, tail and JSON export."""

from __future__ import annotations

import json
import subprocess
import sys

from .tools_for_tests import ALL


def audit_cli(db, *args):
    p = subprocess.run(
        [sys.executable, "-m", "codebelt.cli", "audit", "--db", str(db), *args],
        capture_output=True, text=True, timeout=60,
    )
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_audit_listing_and_filters(make_session, audit_db, ws):
    s = make_session(tools=ALL)
    for i in range(5):
        s.call("Echo", {"text": f"call-{i}"})
    s.call("Touch", {"file_path": "x.txt"})  # ask → denied without an approver
    s.close()

    rows = [json.loads(line) for line in audit_cli(audit_db, "--json", "--tail", "0").splitlines()]
    assert [r["tool"] for r in rows] == ["Echo"] * 5 + ["Touch"]
    touch = rows[-1]
    assert touch["decision"] == "deny" and touch["is_error"] == 1 and "no approver" in touch["reason"]
    assert all(r["session_id"] == s.id and r["workspace"] == str(ws.resolve()) for r in rows)

    assert len(audit_cli(audit_db, "--tail", "2").splitlines()) == 2
    only = [json.loads(l) for l in audit_cli(audit_db, "--json", "--tool", "Touch").splitlines()]
    assert [r["tool"] for r in only] == ["Touch"]
    errors = [json.loads(l) for l in audit_cli(audit_db, "--json", "--errors").splitlines()]
    assert [r["tool"] for r in errors] == ["Touch"]
    text = audit_cli(audit_db)
    assert "call-4" in text and "deny(mode)" in text


def test_audit_of_a_missing_database_is_empty(tmp_path):
    assert audit_cli(tmp_path / "none.db") == ""
