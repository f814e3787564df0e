"""A large file's new content is kept after the call that wrote it has returned.

Each case fails if the copy is skipped, made of another file than the one the call left, kept
although the file changed first, or not waited for by whatever looks at the workspace next.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from codebelt.checkpoints import Checkpoints
from codebelt.checkpoints.deferred import CHANGED, DEFER_BYTES
from codebelt.checkpoints.entries import is_deferred
from codebelt.checkpoints.store import Changed, ObjectStore


def replace_file(path: Path, data: bytes) -> None:
    """As the file tools write: a new file renamed over the old one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def record_write(book: Checkpoints, path: Path, data: bytes) -> int:
    rec = book.begin_files("Edit", f"edit {path.name}", [str(path)])
    replace_file(path, data)
    cid = rec.finish()
    assert cid is not None
    return cid


def open_book(tmp_path: Path, root: Path) -> Checkpoints:
    book = Checkpoints(tmp_path / "store", [root], "s")
    book.start_tracking()
    return book


def big_file_book(tmp_path: Path, root: Path) -> tuple[Path, bytes, Checkpoints]:
    """A workspace holding one file of DEFER_BYTES (returned with its content), tracked."""
    big = root / "big.bin"
    original = os.urandom(DEFER_BYTES)
    big.write_bytes(original)
    return big, original, open_book(tmp_path, root)


def loose_temporaries(tmp_path: Path) -> list[Path]:
    return list((tmp_path / "store" / "loose").glob(".tmp-*"))


@pytest.mark.parametrize("size, deferred", [(DEFER_BYTES - 1, False), (DEFER_BYTES, True), (3 * DEFER_BYTES + 7, True)])
def test_the_content_a_call_left_is_kept_and_redone(tmp_path, ws, size, deferred):
    big = ws / "big.bin"
    original, new = os.urandom(size), os.urandom(size)
    big.write_bytes(original)
    book = open_book(tmp_path, ws)
    cid = record_write(book, big, new)
    assert is_deferred(book.get(cid).changes[0].after) == deferred
    report = book.rewind(cid)  # waits for the copy, then puts the original back
    assert report.restored == [str(big)] and big.read_bytes() == original
    after = book.get(cid).changes[0].after
    assert after.hash is not None and after.lost is None and book.store.read(after.hash) == new
    assert book.undo().restored == [str(big)]  # undoing the rewind needs the content the call left
    assert big.read_bytes() == new
    book.close()


def link_to_copy(p: Path) -> None:
    """The same bytes at the same path, reached through a symlink: not the file the call left."""
    copy = p.with_name(p.name + ".copy")
    copy.write_bytes(p.read_bytes())
    p.unlink()
    p.symlink_to(copy)


MUTATIONS = {
    "appended": lambda p: p.open("ab").write(b"more"),
    "rewritten in place, same size": lambda p: p.open("r+b").write(b"X" * 16),
    "replaced by a rename": lambda p: replace_file(p, p.read_bytes()),
    "removed": lambda p: p.unlink(),
    "mode changed": lambda p: p.chmod(0o600),
    "replaced by a symlink to a copy": link_to_copy,
    "replaced by a FIFO": lambda p: (p.unlink(), os.mkfifo(p)),  # an open that blocks, unless asked not to
}


@pytest.mark.parametrize("mutate", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_a_file_changed_before_its_copy_is_not_kept_and_says_so(tmp_path, ws, monkeypatch, mutate):
    gate = threading.Event()
    real = ObjectStore.put_file

    def held(self, path, limit=None, expect=None):
        if expect is not None:  # the deferred copy: made only after the test changed the file
            assert gate.wait(30)
        return real(self, path, limit, expect)

    monkeypatch.setattr(ObjectStore, "put_file", held)
    big, _, book = big_file_book(tmp_path, ws)
    cid = record_write(book, big, os.urandom(DEFER_BYTES))
    mutate(big)
    gate.set()
    report = book.rewind(cid, dry_run=True)
    after = book.get(cid).changes[0].after
    assert after.hash is None and after.lost and after.lost != book.get(cid).changes[0].before.lost
    assert after.lost == CHANGED or after.lost.startswith("not kept: unreadable")
    assert report.conflicts and not report.restored  # cannot tell what the call left: not clobbered
    assert not loose_temporaries(tmp_path)
    book.close()


def test_the_next_command_takes_the_kept_content_as_its_pre_image(tmp_path, ws):
    big, _, book = big_file_book(tmp_path, ws)
    new = os.urandom(DEFER_BYTES)
    record_write(book, big, new)
    rec = book.begin_command("Bash", "append")
    subprocess.run(["bash", "-c", "echo more >> big.bin"], cwd=ws, check=True)
    cid = rec.finish()
    before = book.get(cid).changes[0].before
    assert before.hash is not None and book.store.read(before.hash) == new
    assert book.rewind(cid).restored == [str(big)] and big.read_bytes() == new
    book.close()


def test_two_edits_in_a_row_chain_and_rewind_to_the_first(tmp_path, ws):
    big, original, book = big_file_book(tmp_path, ws)
    first = record_write(book, big, os.urandom(DEFER_BYTES))
    second = record_write(book, big, os.urandom(DEFER_BYTES))
    report = book.rewind(first)
    assert not report.conflicts and big.read_bytes() == original
    assert book.get(first).changes[0].after.hash == book.get(second).changes[0].before.hash is not None
    book.close()


def test_closing_finishes_the_copy_for_a_later_process(tmp_path, ws):
    big, _, book = big_file_book(tmp_path, ws)
    new = os.urandom(DEFER_BYTES)
    cid = record_write(book, big, new)
    book.close()
    later = Checkpoints(tmp_path / "store", [ws], "t")
    after = later.get(cid).changes[0].after
    assert after.hash is not None and later.store.read(after.hash) == new
    later.close()


def test_a_file_over_the_size_limit_is_not_kept_at_all(tmp_path, ws):
    from codebelt.checkpoints import Limits

    big = ws / "big.bin"
    big.write_bytes(os.urandom(DEFER_BYTES))
    book = Checkpoints(tmp_path / "store", [ws], "s", Limits(max_file_bytes=DEFER_BYTES + 1))
    book.start_tracking()
    cid = record_write(book, big, os.urandom(DEFER_BYTES + 2))
    after = book.get(cid).changes[0].after
    assert after.hash is None and not is_deferred(after) and "maxFileMB" in after.lost
    book.close()


def test_the_store_keeps_a_file_only_if_it_is_the_one_expected(tmp_path, ws):
    f = ws / "f"
    f.write_bytes(os.urandom(DEFER_BYTES))
    book = open_book(tmp_path, ws)
    st = f.stat()
    wrong = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns + 1, st.st_ctime_ns)
    before = book.store.total_bytes()
    with pytest.raises(Changed):
        book.store.put_file(str(f), None, expect=wrong)
    assert book.store.total_bytes() == before and not loose_temporaries(tmp_path)
    book.close()


def test_the_edit_tool_on_a_large_file_through_a_session(make_session, ws):
    # the streamed Edit: the file is replaced by a rename, its old blocks freed off the call's
    # path, its new content kept after the call; Bash then appends, and each step rewinds
    lines = [f"{i:08d} some text on the line\n".encode() for i in range(DEFER_BYTES // 30 + 1000)]
    original = b"".join(lines)
    (ws / "big.txt").write_bytes(original)
    s = make_session(mode="bypassPermissions")
    assert not s.call("Read", {"file_path": str(ws / "big.txt"), "limit": 5}).is_error
    mid = lines[len(lines) // 2].decode().rstrip("\n")
    r = s.call("Edit", {"file_path": str(ws / "big.txt"), "old_string": mid, "new_string": "EDITED"})
    assert not r.is_error, r.text
    edited = (ws / "big.txt").read_bytes()
    assert b"EDITED" in edited and len(edited) < len(original)
    assert not s.call("Bash", {"command": "echo tail >> big.txt"}).is_error
    s.undo()  # the command: back to what the Edit left, which was kept after the Edit returned
    assert (ws / "big.txt").read_bytes() == edited
    edit_cp = next(c for c in s.checkpoints() if c["tool"] == "Edit")
    s.rewind(edit_cp["id"])
    assert (ws / "big.txt").read_bytes() == original
