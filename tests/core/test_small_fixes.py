"""Rough edges a user met: every tool has an output schema its results follow, a declined
approval says its reason once, the audit keeps error texts, `codebelt tools` marks optional
parameters."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from codebelt import Session
from codebelt.tools import registry


@pytest.mark.parametrize("tool", registry(), ids=lambda t: t.name)
def test_every_tool_declares_an_output_schema(tool):
    schema = tool.output_schema()
    assert schema and schema.get("type") == "object" and schema.get("properties")


def test_results_follow_their_output_schemas(ws, make_session):
    from jsonschema import validators

    (ws / "a.py").write_text("def f():\n    return 1\n")
    s = make_session(mode="acceptEdits")
    calls = [("Read", {"file_path": "a.py"}), ("Write", {"file_path": "b.txt", "content": "x\n"}),
             ("Edit", {"file_path": "a.py", "old_string": "return 1", "new_string": "return 2"}),
             ("MultiEdit", {"file_path": "a.py", "edits": [{"old_string": "return 2", "new_string": "return 3"}]}),
             ("LSP", {"operation": "documentSymbol", "filePath": "a.py"}), ("RepoMap", {})]
    for name, inp in calls:
        r = s.call(name, inp)
        assert not r.is_error, (name, r.text)
        schema = s.tool(name).output_schema()
        errors = list(validators.validator_for(schema)(schema).iter_errors(r.data))
        assert not errors, (name, errors[0].message)


def test_a_declined_approval_gives_its_reason_once(ws, make_session):
    s = make_session(approver=lambda req: False)
    r = s.call("Bash", {"command": "touch x"})
    assert r.is_error and r.text.count("declined by the user") == 1, r.text
    assert r.data["decision"]["decided_by"] == "user"


def test_audit_keeps_error_texts(ws, make_session, audit_db):
    s = make_session()
    s.call("Read", {"file_path": "missing.txt"})
    s.close()
    out = subprocess.run([sys.executable, "-m", "codebelt.cli", "audit", "--db", str(audit_db), "--json"],
                         capture_output=True, text=True, timeout=60)
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert rows and "does not exist" in rows[-1]["error"]


def test_an_old_audit_log_gains_the_error_column(tmp_path):
    import sqlite3

    from codebelt import audit

    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(audit.SCHEMA.replace(",\n    error TEXT", ""))
    conn.close()
    log = audit.AuditLog.open(db)
    log.record(session_id="s", workspace="/w", tool="Read", input={}, decision=None, duration_ms=1,
               result_chars=1, is_error=True, error="boom")
    log.close()
    assert [r["error"] for r in audit.query(db)] == ["boom"]


def test_tools_listing_marks_optional_parameters(ws):
    out = subprocess.run([sys.executable, "-m", "codebelt.cli", "tools", "--root", str(ws)],
                         capture_output=True, text=True, timeout=60).stdout
    assert "Read(file_path, offset?, limit?, pages?, allow_large?)" in out
    assert "TaskOutput(task_id, block?, timeout?)" in out


@pytest.mark.parametrize("old,new,expected", [
    ("b", "b1\nb2", b"a\r\nb1\r\nb2\r\nc\nd\n"),   # a CRLF line stays CRLF
    ("c", "c1\nc2", b"a\r\nb\r\nc1\nc2\nd\n"),      # an LF line stays LF
    ("b\r\nc", "x\ny", b"a\r\nx\r\ny\nd\n"),        # across both: the ending of the line the match starts on
])
def test_mixed_line_endings_keep_the_replaced_lines_ending(ws, make_session, old, new, expected):
    (ws / "m.txt").write_bytes(b"a\r\nb\r\nc\nd\n")  # as many CRLF lines as LF lines
    s = make_session(mode="acceptEdits")
    s.call("Read", {"file_path": "m.txt"})
    r = s.call("Edit", {"file_path": "m.txt", "old_string": old, "new_string": new})
    assert not r.is_error, r.text
    assert (ws / "m.txt").read_bytes() == expected


@pytest.mark.parametrize("size", [200_000, 2_000_000])  # the in-memory and the streamed path
def test_replace_all_cannot_grow_a_file_past_the_cap(ws, make_session, size):
    data = ("ab\n" * (size // 3)).encode()
    (ws / "f.txt").write_bytes(data)
    s = make_session(mode="acceptEdits", settings={"edit": {"maxFileMB": 8}})
    s.call("Read", {"file_path": "f.txt", "limit": 1})
    r = s.call("Edit", {"file_path": "f.txt", "old_string": "a", "new_string": "x" * 2048, "replace_all": True})
    assert r.is_error and "over the limit" in r.text and "edit.maxFileMB" in r.text
    assert (ws / "f.txt").read_bytes() == data  # nothing written
    ok = s.call("Edit", {"file_path": "f.txt", "old_string": "a", "new_string": "xy", "replace_all": True})
    assert not ok.is_error
