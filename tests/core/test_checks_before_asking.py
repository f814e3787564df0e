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


# Reading outside the workspace asks. For a file that is not there the question is useless —
# where existence is no secret (the installed software's directories). Elsewhere (a home
# directory, /etc, /tmp) "it does not exist" would answer, unasked, a question about the user's
# files, so the call asks as for any other file there.
MISSING_USR = "/usr/lib/codebelt-no-such-dir/missing.py"


@pytest.mark.parametrize("approver", [True, False], ids=["approver", "headless"])
def test_a_missing_file_among_installed_software_is_said_missing_unasked(make_session, approver):
    asked = []
    s = make_session(approver=(lambda req: asked.append(req) or True) if approver else None)
    r = s.call("Read", {"file_path": MISSING_USR})
    assert r.is_error and r.text.startswith(f"File does not exist: {MISSING_USR}."), r.text
    assert asked == []


def test_missing_or_not_elsewhere_outside_the_workspace_it_asks(make_session, tmp_path):
    private = tmp_path / "home" / "notes"
    private.mkdir(parents=True)
    (private / "there.txt").write_text("x\n")
    asked = []
    s = make_session(approver=lambda req: asked.append(req) or False)
    for name in ("there.txt", "missing.txt"):  # the same question, whether it exists or not
        r = s.call("Read", {"file_path": str(private / name)})
        assert r.is_error and "does not exist" not in r.text, r.text
    assert len(asked) == 2


def test_a_deny_rule_is_not_bypassed_by_a_missing_file(make_session):
    s = make_session(settings={"permissions": {"deny": ["Read(//usr/lib/codebelt-no-such-dir/**)"]}})
    r = s.call("Read", {"file_path": MISSING_USR})
    assert r.is_error and "does not exist" not in r.text and "denied" in r.text.lower(), r.text


def test_an_existing_file_among_installed_software_still_asks(make_session):
    asked = []
    s = make_session(approver=lambda req: asked.append(req) or True)
    r = s.call("Read", {"file_path": "/usr/bin/env", "limit": 1})
    assert len(asked) == 1, r.text
