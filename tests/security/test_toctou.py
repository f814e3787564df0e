"""A directory swapped for a symlink after the permission check must not redirect a write.

Two windows: the approval wait (a person takes seconds to answer; a background process can swap a
directory meanwhile) and the short gap between a tool resolving its path and the rename. The
attacker here is a concurrent process in the workspace; `swap()` plays its part deterministically.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from codebelt.files.atomic import AtomicWriteError, remove_file, write_atomic

PATCH = "*** Begin Patch\n{}\n*** End Patch"

# (label, tool, input): every call targets d/…, which is a real directory at check time.
WRITES = [
    ("Write new file", "Write", {"file_path": "d/new.txt", "content": "PWNED\n"}),
    ("Write existing", "Write", {"file_path": "d/victim", "content": "PWNED\n"}),
    ("Edit", "Edit", {"file_path": "d/victim", "old_string": "ORIGINAL", "new_string": "PWNED"}),
    ("Edit create", "Edit", {"file_path": "d/created", "old_string": "", "new_string": "PWNED"}),
    ("MultiEdit", "MultiEdit", {"file_path": "d/victim", "edits": [{"old_string": "ORIGINAL", "new_string": "PWNED"}]}),
    ("ApplyPatch add", "ApplyPatch", {"input": PATCH.format("*** Add File: d/added\n+PWNED")}),
    ("ApplyPatch update", "ApplyPatch", {"input": PATCH.format("*** Update File: d/victim\n@@\n-ORIGINAL\n+PWNED")}),
    ("ApplyPatch delete", "ApplyPatch", {"input": PATCH.format("*** Delete File: d/victim")}),
]


@pytest.fixture
def scene(ws: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("ORIGINAL\n")
    (ws / "d").mkdir()
    (ws / "d" / "victim").write_text("ORIGINAL\n")

    def swap() -> None:
        shutil.rmtree(ws / "d")
        (ws / "d").symlink_to(outside)

    def outside_state() -> dict[str, str]:
        return {p.name: p.read_text() for p in outside.iterdir()}

    return swap, outside_state


@pytest.mark.parametrize("label,tool,inp", WRITES, ids=[w[0] for w in WRITES])
def test_swap_during_approval_is_refused(scene, make_session, label, tool, inp):
    swap, outside_state = scene

    def approver(request) -> bool:
        swap()  # the directory becomes a symlink out while the user is deciding
        return True

    s = make_session(mode="default", approver=approver)
    assert not s.call("Read", {"file_path": "d/victim"}).is_error
    r = s.call(tool, inp)
    assert r.is_error, r.text
    assert "changed while approval was pending" in r.text
    assert outside_state() == {"victim": "ORIGINAL\n"}


@pytest.mark.parametrize("label,tool,inp", WRITES, ids=[w[0] for w in WRITES])
def test_swap_just_before_the_write_is_refused(scene, make_session, monkeypatch, label, tool, inp):
    """The last gap: after the tool resolved its path, right before write_atomic/unlink."""
    swap, outside_state = scene
    import codebelt.files.editing as editing
    import codebelt.patch.commit as patch_apply
    import codebelt.tools.write as write_tool

    real = write_atomic

    def swapping_write(path, data, **kw):
        if (Path(path).parent.name == "d") and not Path(path).parent.is_symlink():
            swap()
        return real(path, data, **kw)

    real_remove = remove_file

    def swapping_remove(path):
        if (Path(path).parent.name == "d") and not Path(path).parent.is_symlink():
            swap()
        return real_remove(path)

    for mod in (editing, patch_apply, write_tool):
        monkeypatch.setattr(mod, "write_atomic", swapping_write)
    monkeypatch.setattr(patch_apply, "remove_file", swapping_remove)
    s = make_session(mode="acceptEdits")
    assert not s.call("Read", {"file_path": "d/victim"}).is_error
    r = s.call(tool, inp)
    assert r.is_error, r.text
    assert outside_state() == {"victim": "ORIGINAL\n"}


@pytest.mark.parametrize("layout", ["dir-link", "nested-dir-link", "link-to-file-as-dir"])
def test_write_atomic_refuses_a_symlinked_directory(tmp_path: Path, layout):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("x")
    ws = tmp_path / "ws"
    ws.mkdir()
    if layout == "dir-link":
        (ws / "d").symlink_to(outside)
        target = ws / "d" / "new"
    elif layout == "nested-dir-link":
        (ws / "a").mkdir()
        (ws / "a" / "b").symlink_to(outside)
        target = ws / "a" / "b" / "c" / "new"
    else:
        (ws / "d").symlink_to(outside / "f")
        target = ws / "d" / "new"
    with pytest.raises(AtomicWriteError) as info:
        write_atomic(target, b"PWNED")
    assert "symlink" in str(info.value) or "not a directory" in str(info.value)
    assert sorted(p.name for p in outside.iterdir()) == ["f"]


def test_write_atomic_replaces_a_final_symlink_instead_of_following_it(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.write_text("ORIGINAL")
    link = tmp_path / "ws-link"
    link.symlink_to(outside)
    write_atomic(link, b"new")
    assert outside.read_text() == "ORIGINAL"
    assert not link.is_symlink() and link.read_text() == "new"


def test_write_atomic_creates_missing_directories(tmp_path: Path):
    target = tmp_path / "a" / "b" / "c.txt"
    write_atomic(target, b"hi")
    assert target.read_bytes() == b"hi"
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".codebelt-tmp")]
    assert os.stat(target).st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m
