"""A repository's `.git` is the workspace's, and the workspace may be hostile: a crafted index,
pack or loose object must not hang the baseline, exhaust memory, raise out of it, or make a
checkpoint hold content that is not the file's — only cost copies, or a pre-image said "not kept"."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import threading
import zlib
from pathlib import Path

import pytest

from codebelt.checkpoints import Checkpoints
from codebelt.checkpoints.gitindex import IndexError_, find_repo, parse_index, read_index
from codebelt.checkpoints.gitobjects import Missing, ObjectReader

GIT = shutil.which("git")
ENV = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
       "GIT_COMMITTER_EMAIL": "a@b"}
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, text=True, env=ENV).stdout


def repo(ws: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "first")
    os.utime(ws / ".git" / "index", ns=(os.stat(ws / ".git" / "index").st_mtime_ns + 2_000_000_000,) * 2)


def bounded(fn, seconds: float = 60):
    """Run `fn` in a thread; fail (rather than hang the suite) if it does not return in time."""
    out: list = []

    def run():
        try:
            out.append(("ok", fn()))
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out.append(("err", e))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert out, f"{fn} did not return within {seconds} s"
    return out[0]


# -- crafted indexes ---------------------------------------------------------------------------
def sealed(body: bytes) -> bytes:
    return body + hashlib.sha1(body).digest()


def entry(name: bytes, *, mode: int = 0o100644, size: int = 1, flags_extra: int = 0, version: int = 2) -> bytes:
    fields = struct.pack(">IIIIIIIIII20sH", 1, 0, 1, 0, 0, 1, mode, 0, 0, size, b"\x11" * 20,
                         min(len(name), 0xFFF) | flags_extra)
    if version == 4:
        return fields + b"\0" + name + b"\0"  # strip 0, then the name
    raw = fields + name + b"\0"
    return raw + b"\0" * (-len(raw) % 8)


def index(entries: list[bytes], *, version: int = 2, count: int | None = None) -> bytes:
    return sealed(b"DIRC" + struct.pack(">II", version, len(entries) if count is None else count) + b"".join(entries))


MALFORMED_INDEXES = {
    "bad checksum": index([entry(b"a")])[:-1] + b"\0",
    "unknown version": index([entry(b"a")], version=9),
    "count past the data": index([entry(b"a")], count=5),
    "count of 2^32-1": index([entry(b"a")], count=0xFFFFFFFF),
    "name without its NUL": sealed(b"DIRC" + struct.pack(">II", 2, 1) + entry(b"a")[:62] + b"abc"),
    "v4 strips more than the previous name": index(
        [struct.pack(">IIIIIIIIII20sH", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, 1, b"\1" * 20, 1) + b"\x05a\0"], version=4),
    "v4 varint running off the end": sealed(b"DIRC" + struct.pack(">II", 4, 1)
                                            + struct.pack(">IIIIIIIIII20sH", *([0] * 6), 0o100644, 0, 0, 1, b"\1" * 20, 1)
                                            + b"\xff" * 8),
    "extended flags in version 2": index([entry(b"a", flags_extra=0x4000)]),
    "truncated": index([entry(b"a")])[:40],
}


@pytest.mark.parametrize("case", sorted(MALFORMED_INDEXES))
def test_malformed_index_is_refused_with_its_own_error(case):
    with pytest.raises(IndexError_):
        parse_index(MALFORMED_INDEXES[case])


def test_index_paths_that_escape_or_name_git_are_never_keys():
    names = [b"../outside", b"/etc/passwd", b"a/../../b", b".git/config", b"sub/.GIT/hooks/x", b"a//b", b"./a",
             b"ok/file.txt"]
    parsed = parse_index(index([entry(n) for n in names]))
    assert list(parsed.entries) == [b"ok/file.txt"]
    assert parsed.all_paths == [b"ok/file.txt"]
    assert not parsed.tracks_under(b"..") and not parsed.tracks_under(b"/etc")


def test_index_with_more_entries_than_tracked_is_refused():
    with pytest.raises(IndexError_):
        parse_index(index([entry(b"f%d" % i) for i in range(11)]), max_entries=10)


@needs_git
@pytest.mark.parametrize("what", ["fifo", "directory", "symlink to /dev/zero"])
def test_index_that_is_not_a_file_costs_copies_never_a_hang(tmp_path, what):
    ws = tmp_path / "ws"
    ws.mkdir()
    repo(ws, {"a.txt": "a\n"})
    (ws / ".git" / "index").unlink()
    if what == "fifo":
        os.mkfifo(ws / ".git" / "index")
    elif what == "directory":
        (ws / ".git" / "index").mkdir()
    else:
        (ws / ".git" / "index").symlink_to("/dev/zero")
    with pytest.raises(OSError):
        read_index(find_repo(str(ws)))
    book = Checkpoints(tmp_path / "store", [ws], "s")
    status, _ = bounded(book.start_tracking)
    assert status == "ok"
    assert not book.tracker.git and "git's index not used" in book.tracker.git_note
    assert not book.tracker.entries[str(ws / "a.txt")].hash.startswith("git:")  # copied instead
    book.close()


@needs_git
def test_gitdir_file_pointing_at_a_fifo_directory_and_a_commondir_loop(tmp_path):
    ws = tmp_path / "ws"
    (ws / "elsewhere").mkdir(parents=True)
    os.mkfifo(ws / "elsewhere" / "index")
    (ws / "elsewhere" / "commondir").symlink_to("commondir")  # a loop
    (ws / ".git").write_text("gitdir: elsewhere\n")
    (ws / "a.txt").write_text("a\n")
    book = Checkpoints(tmp_path / "store", [ws], "s")
    status, _ = bounded(book.start_tracking)
    assert status == "ok" and not book.tracker.git
    assert book.store.read(book.tracker.entries[str(ws / "a.txt")].hash) == b"a\n"
    book.close()


@needs_git
def test_an_index_naming_another_blob_for_a_file_never_restores_that_blob(tmp_path):
    """The index claims the file's content is another blob (of another size): when the file is
    changed, the claimed blob is refused — the pre-image is said not kept, nothing is restored
    from it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    repo(ws, {"a.txt": "the real content\n", "evil.txt": "payload the index claims a.txt holds\n"})
    raw = bytearray((ws / ".git" / "index").read_bytes())
    evil = git(ws, "rev-parse", "HEAD:evil.txt").strip()
    real = git(ws, "rev-parse", "HEAD:a.txt").strip()
    at = raw.index(bytes.fromhex(real))
    raw[at:at + 20] = bytes.fromhex(evil)
    mtime = os.stat(ws / ".git" / "index").st_mtime_ns
    (ws / ".git" / "index").write_bytes(sealed(bytes(raw[:-20])))
    os.utime(ws / ".git" / "index", ns=(mtime, mtime))
    book = Checkpoints(tmp_path / "store", [ws], "s")
    book.start_tracking()
    assert book.tracker.entries[str(ws / "a.txt")].hash == "git:" + evil  # the index's claim, as yet unread
    rec = book.begin_command("Bash", "x")
    (ws / "a.txt").write_text("changed\n")
    cp = book.get(rec.finish())
    [change] = cp.changes
    assert change.before.hash is None and "git's copy of it" in change.before.lost
    book.rewind(cp.id)
    assert (ws / "a.txt").read_text() == "changed\n"  # left, not replaced by the claimed blob
    book.close()


# -- crafted objects and packs -----------------------------------------------------------------
def oid_of(kind: bytes, data: bytes) -> str:
    return hashlib.sha1(kind + b" %d\0" % len(data) + data).hexdigest()


def loose(objects: Path, oid: str, raw: bytes) -> None:
    (objects / oid[:2]).mkdir(parents=True, exist_ok=True)
    (objects / oid[:2] / oid[2:]).write_bytes(raw)


def size_header(kind: int, size: int) -> bytes:
    c = (kind << 4) | (size & 15)
    size >>= 4
    out = bytearray()
    while size:
        out.append(c | 0x80)
        c = size & 0x7F
        size >>= 7
    out.append(c)
    return bytes(out)


def ofs(back: int) -> bytes:
    out = [back & 127]
    back >>= 7
    while back:
        back -= 1
        out.insert(0, 0x80 | (back & 127))
        back >>= 7
    return bytes(out)


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        c = n & 0x7F
        n >>= 7
        out.append(c | (0x80 if n else 0))
        if not n:
            return bytes(out)


def write_pack(objects: Path, items: list[tuple[str, bytes]], *, n_claimed: int | None = None) -> None:
    """A pack of raw entries (already headed and deflated) under the given ids, and its index."""
    (objects / "pack").mkdir(parents=True, exist_ok=True)
    body = bytearray(b"PACK" + struct.pack(">II", 2, len(items)))
    offsets = {}
    for oid, raw in items:
        offsets[oid] = len(body)
        body += raw
    body += hashlib.sha1(body).digest()
    ids = sorted(offsets)
    fan = [sum(1 for i in ids if int(i[:2], 16) <= b) for b in range(256)]
    if n_claimed is not None:
        fan = [n_claimed] * 256
    idx = bytearray(b"\377tOc\0\0\0\2" + struct.pack(">256I", *fan))
    idx += b"".join(bytes.fromhex(i) for i in ids) + b"\0" * 4 * len(ids)
    idx += b"".join(struct.pack(">I", offsets[i]) for i in ids)
    idx += hashlib.sha1(body).digest()
    idx += hashlib.sha1(idx).digest()
    (objects / "pack" / "pack-x.pack").write_bytes(body)
    (objects / "pack" / "pack-x.idx").write_bytes(idx)


def plain_entry(kind: int, data: bytes) -> bytes:
    return size_header(kind, len(data)) + zlib.compress(data)


CONTENT = b"hello, blob\n"
BLOB = oid_of(b"blob", CONTENT)


def craft(objects: Path, case: str) -> int:
    """A repository's objects arranged as `case`; the max_size to ask for."""
    if case == "loose object is a fifo":
        (objects / BLOB[:2]).mkdir(parents=True)
        os.mkfifo(objects / BLOB[:2] / BLOB[2:])
    elif case == "loose zlib bomb under a small header":
        loose(objects, BLOB, zlib.compress(b"blob 12\0" + b"\0" * (64 << 20)))
    elif case == "loose header larger than asked":
        loose(objects, BLOB, zlib.compress(b"blob 999999999999\0" + CONTENT))
    elif case == "loose header of endless digits":
        loose(objects, BLOB, zlib.compress(b"blob " + b"9" * 100_000 + b"\0"))
    elif case == "loose garbage":
        loose(objects, BLOB, b"this is not zlib at all")
    elif case == "loose object of another content":
        loose(objects, BLOB, zlib.compress(b"blob 12\0" + b"other blob!\n"))
    elif case == "pack entry claims a small size, inflates to a bomb":
        write_pack(objects, [(BLOB, size_header(3, 12) + zlib.compress(b"\0" * (64 << 20)))])
    elif case == "pack entry of garbage zlib":
        write_pack(objects, [(BLOB, size_header(3, 12) + b"garbage" * 10)])
    elif case == "pack entry size varint runs on":
        write_pack(objects, [(BLOB, b"\xff" * 40)])
    elif case == "ofs delta pointing at itself":
        delta = varint(12) + varint(12) + bytes([12]) + CONTENT
        write_pack(objects, [(BLOB, size_header(6, len(delta)) + ofs(0) + zlib.compress(delta))])
    elif case == "ofs delta pointing before the pack":
        delta = varint(12) + varint(12) + bytes([12]) + CONTENT
        write_pack(objects, [(BLOB, size_header(6, len(delta)) + ofs(1 << 40) + zlib.compress(delta))])
    elif case == "ref delta whose base is itself":
        delta = varint(12) + varint(12) + bytes([12]) + CONTENT
        write_pack(objects, [(BLOB, size_header(7, len(delta)) + bytes.fromhex(BLOB) + zlib.compress(delta))])
    elif case == "delta result far larger than asked":
        base = b"x" * 100
        delta = varint(100) + varint(1 << 40) + bytes([0x80 | 0x10 | 0x20 | 0x40, 0xFF, 0xFF, 0xFF])
        base_id = oid_of(b"blob", base)
        write_pack(objects, [(base_id, plain_entry(3, base)),
                             (BLOB, size_header(7, len(delta)) + bytes.fromhex(base_id) + zlib.compress(delta))])
    elif case == "delta copying past its base":
        base = b"x" * 100
        delta = varint(100) + varint(12) + bytes([0x80 | 0x01 | 0x10, 95, 12])
        base_id = oid_of(b"blob", base)
        write_pack(objects, [(base_id, plain_entry(3, base)),
                             (BLOB, size_header(7, len(delta)) + bytes.fromhex(base_id) + zlib.compress(delta))])
    elif case == "delta base a hundred times the result":
        base = os.urandom(1200)  # git never deltas against a base over 32 times the result
        delta = varint(1200) + varint(12) + bytes([12]) + CONTENT
        base_id = oid_of(b"blob", base)
        write_pack(objects, [(base_id, plain_entry(3, base)),
                             (BLOB, size_header(7, len(delta)) + bytes.fromhex(base_id) + zlib.compress(delta))])
        return 12
    elif case == "index claims 2^32-1 objects":
        write_pack(objects, [(BLOB, plain_entry(3, CONTENT))], n_claimed=0xFFFFFFFF)
    elif case == "index is a fifo":
        (objects / "pack").mkdir(parents=True)
        os.mkfifo(objects / "pack" / "pack-x.idx")
        (objects / "pack" / "pack-x.pack").write_bytes(b"PACK")
    elif case == "alternates is a fifo":
        (objects / "info").mkdir(parents=True)
        os.mkfifo(objects / "info" / "alternates")
    elif case == "a tree under the blob's id":
        write_pack(objects, [(BLOB, plain_entry(2, CONTENT))])
    else:  # pragma: no cover
        raise AssertionError(case)
    return 1 << 20


HOSTILE_OBJECTS = [
    "loose object is a fifo", "loose zlib bomb under a small header", "loose header larger than asked",
    "loose header of endless digits", "loose garbage", "loose object of another content",
    "pack entry claims a small size, inflates to a bomb", "pack entry of garbage zlib",
    "pack entry size varint runs on", "ofs delta pointing at itself", "ofs delta pointing before the pack",
    "ref delta whose base is itself", "delta result far larger than asked", "delta copying past its base",
    "delta base a hundred times the result", "index claims 2^32-1 objects", "index is a fifo",
    "alternates is a fifo", "a tree under the blob's id",
]


@pytest.mark.parametrize("case", HOSTILE_OBJECTS)
def test_hostile_objects_are_missing_never_a_hang_a_crash_or_other_content(tmp_path, case):
    objects = tmp_path / "objects"
    objects.mkdir()
    max_size = craft(objects, case)
    reader = ObjectReader([objects])
    status, value = bounded(lambda: reader.blob(BLOB, max_size))
    reader.close()
    assert status == "err" and isinstance(value, Missing), (status, value)


def test_a_real_delta_chain_through_a_pack_reads_back(tmp_path):
    """The crafting above is right: the same builder's well-formed chain reads back."""
    objects = tmp_path / "objects"
    objects.mkdir()
    base = b"0123456789" * 30
    mid = base[:100] + b"middle" + base[100:]
    delta1 = varint(len(base)) + varint(len(mid)) + bytes([0x80 | 0x10, 100]) + bytes([6]) + b"middle" \
        + bytes([0x80 | 0x01 | 0x10, 100, 200])
    target = mid + b"tail\n"
    delta2 = varint(len(mid)) + varint(len(target)) + bytes([0x80 | 0x10 | 0x20, len(mid) & 0xFF, len(mid) >> 8]) \
        + bytes([5]) + b"tail\n"
    base_id, mid_id, target_id = oid_of(b"blob", base), oid_of(b"blob", mid), oid_of(b"blob", target)
    first = plain_entry(3, base)
    second = size_header(6, len(delta1)) + ofs(12 + 0 + len(first) - 12) + zlib.compress(delta1)
    third = size_header(7, len(delta2)) + bytes.fromhex(mid_id) + zlib.compress(delta2)
    write_pack(objects, [(base_id, first), (mid_id, second), (target_id, third)])
    reader = ObjectReader([objects])
    assert reader.blob(target_id, 1 << 20) == target
    assert reader.blob(mid_id, 1 << 20) == mid
    reader.close()


@needs_git
def test_session_in_a_repository_whose_pack_was_garbled_says_not_kept(make_session, ws):
    repo(ws, {"a.txt": "a\n" * 50})
    git(ws, "gc", "-q")
    os.utime(ws / ".git" / "index", ns=(os.stat(ws / ".git" / "index").st_mtime_ns + 2_000_000_000,) * 2)
    [pack] = (ws / ".git" / "objects" / "pack").glob("*.pack")
    pack.chmod(0o644)
    raw = bytearray(pack.read_bytes())
    raw[12:-20] = os.urandom(len(raw) - 32)
    pack.write_bytes(raw)
    s = make_session(mode="bypassPermissions")
    book = s._checkpoints()
    book.start_tracking()
    assert book.tracker.entries[str(ws / "a.txt")].hash.startswith("git:")
    r = s.call("Bash", {"command": "echo changed > a.txt"})
    assert r.data["exitCode"] == 0, r.text
    [cp] = s.checkpoints()
    assert cp["notKept"] == ["a.txt"]
    report = s.rewind(cp["id"])
    assert (ws / "a.txt").read_text() == "changed\n"
    assert [(Path(p).name, "git's copy" in why) for p, why in report.conflicts] == [("a.txt", True)]
