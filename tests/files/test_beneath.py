"""The open-beneath engine, with openat2 and with the O_NOFOLLOW walk used where the kernel has no
openat2: a resolved path is opened with no symlink followed, FIFOs and devices are refused
without blocking, and the caller's check sees every opened file."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

import pytest

from codebelt.files import beneath as engine
from codebelt.files.atomic import AtomicWriteError, write_atomic
from codebelt.files.beneath import Beneath, NotRegularFile, SymlinkInPath


@pytest.fixture(params=["openat2", "walk"])
def mechanism(request, monkeypatch):
    if request.param == "walk":
        monkeypatch.setattr(engine, "openat2_available", False)
    else:
        engine.Beneath((Path("/"),)).open_dir(Path("/"))  # probe
        if engine.openat2_available is False:
            pytest.skip("this kernel has no openat2")
    return request.param


@pytest.fixture
def tree(tmp_path: Path):
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("inside")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("OUTSIDE")
    (root / "link").symlink_to(outside)
    (root / "a" / "flink").symlink_to(outside / "f")
    return root, outside


def read(b: Beneath, p: Path) -> bytes:
    with b.open_regular(p) as o:
        return o.read_bytes()


# (label, path below root, expected exception or None)
CASES = [
    ("plain file", "a/b/f", None),
    ("directory symlink in the middle", "link/f", SymlinkInPath),
    ("final symlink", "a/flink", SymlinkInPath),
    ("missing", "a/b/nope", FileNotFoundError),
    ("file as directory", "a/b/f/x", NotADirectoryError),
    ("directory", "a/b", IsADirectoryError),
]


@pytest.mark.parametrize("label,rel,exc", CASES, ids=[c[0] for c in CASES])
def test_open_regular(mechanism, tree, label, rel, exc):
    root, _ = tree
    b = Beneath((root,))
    if exc is None:
        assert read(b, root / rel) == b"inside"
    else:
        with pytest.raises(exc):
            read(b, root / rel)


def test_symlink_error_names_the_link(mechanism, tree):
    root, _ = tree
    with pytest.raises(SymlinkInPath) as info:
        Beneath((root,)).open_regular(root / "link" / "f")
    assert info.value.link == root / "link" and info.value.errno == errno.ELOOP


def test_dot_dot_is_refused(mechanism, tree):
    root, _ = tree
    with pytest.raises(OSError):
        Beneath((root,)).open_regular(root / "a" / ".." / "a" / "b" / "f")


def test_outside_every_root_opens_beneath_slash(mechanism, tree):
    root, outside = tree
    assert read(Beneath((root,)), outside / "f") == b"OUTSIDE"


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_fifo_and_device_refused_without_blocking(mechanism, tmp_path, kind):
    if kind == "fifo":
        p = tmp_path / "pipe"
        os.mkfifo(p)  # no writer: a blocking open would hang the test
    else:
        p = Path("/dev/null")
    with pytest.raises(NotRegularFile):
        Beneath((tmp_path,)).open_regular(p)


def test_check_sees_every_opened_file(mechanism, tree):
    root, _ = tree
    seen = []

    def check(path, st):
        seen.append((path, st.st_ino))
        if path.name == "f":
            raise PermissionError("refused by the check")

    with pytest.raises(PermissionError):
        Beneath((root,), check).open_regular(root / "a" / "b" / "f")
    assert seen == [(root / "a" / "b" / "f", os.stat(root / "a" / "b" / "f").st_ino)]


def test_deepest_root_is_used(tree):
    root, outside = tree
    b = Beneath((root, root / "a"))
    assert b.root_of(root / "a" / "b" / "f") == root / "a"
    assert b.root_of(root / "x") == root
    assert b.root_of(outside / "f") == Path("/")


def test_write_creates_directories_and_refuses_links(mechanism, tree):
    root, outside = tree
    b = Beneath((root,))
    write_atomic(root / "n1" / "n2" / "new", b"x", beneath=b)
    assert (root / "n1" / "n2" / "new").read_bytes() == b"x"
    for target in (root / "link" / "new", root / "link" / "deeper" / "new", root / "a" / "flink" / "new"):
        with pytest.raises(AtomicWriteError):
            write_atomic(target, b"PWNED", beneath=b)
    assert sorted(p.name for p in outside.iterdir()) == ["f"]


def test_opened_reads_what_was_opened_not_what_the_path_holds(mechanism, tree):
    root, _ = tree
    f = root / "a" / "b" / "f"
    with Beneath((root,)).open_regular(f) as o:
        f.unlink()
        f.write_text("replaced")
        assert o.read_bytes() == b"inside"


CLOSE_SOON = [  # (size, replaced by a rename while open, closed by a thread of its own)
    (engine.FREE_LATER_BYTES, True, True),
    (engine.FREE_LATER_BYTES - 1, True, False),
    (engine.FREE_LATER_BYTES, False, False),
]


@pytest.mark.parametrize("size, replaced, in_thread", CLOSE_SOON)
def test_close_soon_frees_a_replaced_large_file_off_the_callers_path(tmp_path, monkeypatch, size, replaced, in_thread):
    f = tmp_path / "f"
    with open(f, "wb") as out:
        out.truncate(size)
    closed_by: list[str] = []
    real_close = os.close

    def close(fd: int) -> None:
        closed_by.append(threading.current_thread().name)
        real_close(fd)

    opened = engine.ANYWHERE.open_regular(f)
    if replaced:
        (tmp_path / "new").write_bytes(b"new")
        os.replace(tmp_path / "new", f)
    monkeypatch.setattr(os, "close", close)
    opened.close_soon()
    assert opened.fd == -1
    deadline = time.monotonic() + 10
    while not closed_by and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(closed_by) == 1, "closed once, and surely"
    assert (closed_by[0] != threading.current_thread().name) == in_thread
    opened.close_soon()  # idempotent
    assert len(closed_by) == 1
