"""Checks that can fail without side effects run before the permission decision: nobody is
asked to approve an Edit, MultiEdit or Write that cannot work."""

from __future__ import annotations

import pytest

# (tool, input, setup: read the file first?, the error the call ends with)
CASES = [
    ("Edit", {"file_path": "a.txt", "old_string": "x", "new_string": "y"}, False, "has not been read yet"),
    ("Edit", {"file_path": "a.txt", "old_string": "nope", "new_string": "y"}, True, "String to replace not found"),
    ("Edit", {"file_path": "a.txt", "old_string": "x", "new_string": "x"}, True, "exactly the same"),
    ("Edit", {"file_path": "missing.txt", "old_string": "x", "new_string": "y"}, False, "File does not exist"),
    ("MultiEdit", {"file_path": "a.txt", "edits": [{"old_string": "hello", "new_string": "bye"},
                                                   {"old_string": "absent", "new_string": "z"}]}, True, "not found"),
    ("Write", {"file_path": "a.txt", "content": "new\n"}, False, "has not been read yet"),
    ("Edit", {"file_path": "a.txt", "old_string": "hello", "new_string": "bye"}, "stale", "modified since read"),
]


@pytest.mark.parametrize("tool,inp,read_first,error", CASES, ids=[f"{c[0]}-{c[3][:20]}" for c in CASES])
def test_refused_before_approval_is_asked(ws, make_session, tool, inp, read_first, error):
    (ws / "a.txt").write_text("hello x\n")
    asked = []
    s = make_session(approver=lambda req: asked.append(req) or True)
    if read_first:
        s.call("Read", {"file_path": "a.txt"})
    if read_first == "stale":
        (ws / "a.txt").write_text("hello x\nchanged\n")
    r = s.call(tool, inp)
    assert r.is_error and error in r.text, r.text
    assert asked == [], "the user was asked to approve a call that could not work"
    assert "changed" in (ws / "a.txt").read_text() or (ws / "a.txt").read_text() == "hello x\n"


def test_a_call_that_can_work_is_still_asked(ws, make_session):
    (ws / "a.txt").write_text("hello x\n")
    asked = []
    s = make_session(approver=lambda req: asked.append(req) or True)
    s.call("Read", {"file_path": "a.txt"})
    r = s.call("Edit", {"file_path": "a.txt", "old_string": "hello", "new_string": "bye"})
    assert not r.is_error and len(asked) == 1 and (ws / "a.txt").read_text() == "bye x\n"
