"""Bad input to Write/Edit/MultiEdit as data: every failure is an is_error result with a next step,
and the file on disk is byte-identical afterwards.

Each case: (name, setup, tool, input, expected substring). `setup(ws, session)` prepares the
workspace (and may Read files, or change them behind the session's back).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codebelt.files import atomic
from codebelt.files.state import MODIFIED, NOT_READ

ORIGINAL = b"line one\nline two\nline two\n\ttabbed\n"


def plain(ws, s):
    (ws / "f.txt").write_bytes(ORIGINAL)


def read_first(ws, s):
    plain(ws, s)
    assert not s.call("Read", {"file_path": "f.txt"}).is_error


def changed_after_read(ws, s):
    read_first(ws, s)
    (ws / "f.txt").write_bytes(ORIGINAL + b"appended by a linter\n")


def deleted_after_read(ws, s):
    read_first(ws, s)
    (ws / "f.txt").unlink()


def binary(ws, s):
    (ws / "f.txt").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)


def latin1_read(ws, s):
    (ws / "f.txt").write_bytes("caf\u00e9\n".encode("latin-1"))
    s.call("Read", {"file_path": "f.txt"})


def directory(ws, s):
    (ws / "f.txt").mkdir()


def notebook(ws, s):
    (ws / "f.txt").write_bytes(ORIGINAL)  # unused; the notebook is its own file
    (ws / "n.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    s.call("Read", {"file_path": "n.ipynb"})


E = "Edit"
M = "MultiEdit"
W = "Write"
F = "f.txt"

CASES = [
    ("edit not read", plain, E, {"file_path": F, "old_string": "line one", "new_string": "x"}, NOT_READ),
    ("write not read", plain, W, {"file_path": F, "content": "x"}, NOT_READ),
    ("multiedit not read", plain, M, {"file_path": F, "edits": [{"old_string": "line one", "new_string": "x"}]}, NOT_READ),
    ("edit changed since read", changed_after_read, E, {"file_path": F, "old_string": "line one", "new_string": "x"}, MODIFIED),
    ("write changed since read", changed_after_read, W, {"file_path": F, "content": "x"}, MODIFIED),
    ("edit deleted since read", deleted_after_read, E, {"file_path": F, "old_string": "line one", "new_string": "x"}, "does not exist"),
    ("not found", read_first, E, {"file_path": F, "old_string": "line three", "new_string": "x"}, "not found"),
    ("found twice", read_first, E, {"file_path": F, "old_string": "line two", "new_string": "x"}, "Found 2 matches"),
    ("old equals new", read_first, E, {"file_path": F, "old_string": "line one", "new_string": "line one"}, "exactly the same"),
    ("tabs vs spaces", read_first, E, {"file_path": F, "old_string": "    tabbed", "new_string": "x"}, "indents with tabs"),
    ("empty old on non-empty file", read_first, E, {"file_path": F, "old_string": "", "new_string": "x"}, "Cannot create new file - file already exists."),
    ("multiedit second fails", read_first, M, {"file_path": F, "edits": [
        {"old_string": "line one", "new_string": "LINE ONE"},
        {"old_string": "no such text", "new_string": "x"},
        {"old_string": "tabbed", "new_string": "x"}]}, "Edit 2 of 3 failed"),
    ("multiedit later edit conflicts", read_first, M, {"file_path": F, "edits": [
        {"old_string": "line one", "new_string": "gone"},
        {"old_string": "line one", "new_string": "x"}]}, "Edit 2 of 2 failed"),
    ("multiedit same text", read_first, M, {"file_path": F, "edits": [
        {"old_string": "a", "new_string": "a"}]}, "exactly the same"),
    ("multiedit empty list", read_first, M, {"file_path": F, "edits": []}, "edits"),
    ("missing new_string", read_first, E, {"file_path": F, "old_string": "line one"}, "new_string"),
    ("mistyped replace_all", read_first, E, {"file_path": F, "old_string": "line one", "new_string": "x",
                                             "replace_all": "perhaps"}, "replace_all"),
    ("content not a string", read_first, W, {"file_path": F, "content": {"a": 1}}, "content"),
    ("unknown field", read_first, E, {"file_path": F, "old_string": "line one", "new_string": "x", "path": "y"}, "path"),
    ("edit binary", binary, E, {"file_path": F, "old_string": "PNG", "new_string": "x"}, "binary file (PNG image)"),
    ("unencodable in latin-1", latin1_read, E, {"file_path": F, "old_string": "caf", "new_string": "\u2603"}, "cannot represent"),
    ("edit directory", directory, E, {"file_path": F, "old_string": "a", "new_string": "b"}, "EISDIR"),
    ("write directory", directory, W, {"file_path": F, "content": "b"}, "is a directory"),
    ("notebook", notebook, E, {"file_path": "n.ipynb", "old_string": "cells", "new_string": "x"}, "File is a Jupyter Notebook. Use the NotebookEdit"),
    ("edit missing file", plain, E, {"file_path": "f.tx", "old_string": "a", "new_string": "b"}, "Did you mean f.txt"),
    ("write outside workspace", plain, W, {"file_path": "../escape.txt", "content": "x"}, "outside"),
    ("edit via symlink outside", plain, E, {"file_path": "link/target.txt", "old_string": "a", "new_string": "b"}, "outside"),
    ("unc path", plain, W, {"file_path": "//evil-host/share/x", "content": "x"}, "UNC"),
]


def snapshot(root: Path) -> dict[str, bytes | None]:
    out = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = p.read_bytes() if p.is_file() and not p.is_symlink() else None
    return out


@pytest.mark.parametrize("name,setup,tool,inp,expected", CASES, ids=[c[0] for c in CASES])
def test_bad_input_changes_nothing(make_session, ws, tmp_path, name, setup, tool, inp, expected):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_bytes(b"a outside\n")
    (ws / "link").symlink_to(outside)
    s = make_session(mode="acceptEdits")
    setup(ws, s)
    before_ws, before_out = snapshot(ws), snapshot(outside)
    r = s.call(tool, inp)
    assert r.is_error, r.text
    assert expected in r.text
    assert "Traceback" not in r.text
    assert snapshot(ws) == before_ws
    assert snapshot(outside) == before_out
    assert not list(ws.rglob("*.codebelt-tmp"))


# -- failures of the disk itself --------------------------------------------------------------

def _write_and_edit(s, ws):
    return [
        s.call("Edit", {"file_path": F, "old_string": "line one", "new_string": "LINE ONE" * 20_000}),
        s.call("Write", {"file_path": F, "content": "y" * 200_000}),
        s.call("MultiEdit", {"file_path": F, "edits": [{"old_string": "line one", "new_string": "z" * 200_000}]}),
    ]


@pytest.mark.parametrize("err,expected", [
    (errno.ENOSPC, "no space left"),
    (errno.EACCES, "permission denied"),
    (errno.EROFS, "read-only file system"),
])
def test_simulated_write_failures_leave_file_unchanged(session, ws, monkeypatch, err, expected):
    """The write itself fails (monkeypatched os.write in the atomic writer)."""
    read_first(ws, session)

    def failing_write(fd, data):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(atomic.os, "write", failing_write)
    for r in _write_and_edit(session, ws):
        assert r.is_error and expected in r.text and "unchanged" in r.text, r.text
    assert (ws / F).read_bytes() == ORIGINAL
    assert not list(ws.glob(".*codebelt-tmp"))


def test_read_only_file_refused(session, ws, monkeypatch):
    """chmod 444: tests run as root, which may write anyway, so os.access is made to answer
    as it would for a normal user; the atomic writer must then refuse."""
    read_first(ws, session)
    (ws / F).chmod(0o444)
    real_access = os.access
    monkeypatch.setattr(atomic.os, "access", lambda p, mode, **kw: False if mode == os.W_OK else real_access(p, mode, **kw))
    for r in _write_and_edit(session, ws):
        assert r.is_error and "read-only" in r.text, r.text
    assert (ws / F).read_bytes() == ORIGINAL


@contextlib.contextmanager
def mounted(args: list[str], target: Path):
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root and mount(8)")
    res = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True, timeout=20)
    if res.returncode != 0:
        pytest.skip(f"mount not permitted here: {res.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True, timeout=20)


def test_full_disk_tmpfs(make_session, ws):
    """A real full disk: a 64 KB tmpfs holding the file; the edit needs more than that."""
    disk = ws / "disk"
    disk.mkdir()
    with mounted(["-t", "tmpfs", "-o", "size=64k", "tmpfs"], disk):
        (disk / F).write_bytes(ORIGINAL)
        s = make_session(mode="acceptEdits")
        assert not s.call("Read", {"file_path": f"disk/{F}"}).is_error
        r = s.call("Edit", {"file_path": f"disk/{F}", "old_string": "line one", "new_string": "x" * 100_000})
        assert r.is_error and "no space left" in r.text and "unchanged" in r.text
        assert (disk / F).read_bytes() == ORIGINAL
        assert os.listdir(disk) == [F]  # the temp file was removed


def test_read_only_mount(make_session, ws):
    """A real read-only file system (bind mount remounted ro): EROFS even for root."""
    ro = ws / "ro"
    ro.mkdir()
    (ro / F).write_bytes(ORIGINAL)
    with mounted(["--bind", str(ro)], ro):
        res = subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], capture_output=True, text=True, timeout=20)
        if res.returncode != 0:
            pytest.skip(f"remount ro not permitted: {res.stderr.strip()}")
        s = make_session(mode="acceptEdits")
        assert not s.call("Read", {"file_path": f"ro/{F}"}).is_error
        r = s.call("Edit", {"file_path": f"ro/{F}", "old_string": "line one", "new_string": "x"})
        assert r.is_error and "read-only file system" in r.text
        assert (ro / F).read_bytes() == ORIGINAL
