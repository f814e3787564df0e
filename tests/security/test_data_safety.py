"""What a write keeps and what it never touches: owner, group and mode survive the atomic
replace; a hard link to a file outside the workspace is replaced, never written through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PATCH = "*** Begin Patch\n{}\n*** End Patch"

EDITS = [
    ("Write", {"file_path": "f.txt", "content": "bye\n"}),
    ("Edit", {"file_path": "f.txt", "old_string": "hello", "new_string": "bye"}),
    ("MultiEdit", {"file_path": "f.txt", "edits": [{"old_string": "hello", "new_string": "bye"}]}),
    ("ApplyPatch", {"input": PATCH.format("*** Update File: f.txt\n@@\n-hello\n+bye")}),
]


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
@pytest.mark.parametrize("tool,inp", EDITS, ids=[e[0] for e in EDITS])
def test_owner_group_and_mode_survive(ws: Path, make_session, tool, inp):
    f = ws / "f.txt"
    f.write_text("hello\n")
    os.chown(f, 1234, 2345)
    os.chmod(f, 0o640)
    s = make_session(mode="acceptEdits")
    assert not s.call("Read", {"file_path": "f.txt"}).is_error
    r = s.call(tool, inp)
    assert not r.is_error, r.text
    st = os.stat(f)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (1234, 2345, 0o640)
    assert f.read_text() == "bye\n"


@pytest.mark.parametrize("tool,inp", EDITS, ids=[e[0] for e in EDITS])
def test_a_hard_link_to_an_outside_file_is_replaced_not_written_through(ws: Path, tmp_path: Path, make_session, tool, inp):
    outside = tmp_path / "outside.txt"
    outside.write_text("hello\n")
    os.link(outside, ws / "f.txt")
    s = make_session(mode="acceptEdits")
    assert not s.call("Read", {"file_path": "f.txt"}).is_error
    r = s.call(tool, inp)
    assert not r.is_error, r.text
    assert outside.read_text() == "hello\n"
    assert (ws / "f.txt").read_text() == "bye\n"
    assert os.stat(ws / "f.txt").st_nlink == 1
