"""Blobs read from a repository's object database, read-only: loose objects and pack files.

A checkpoint's baseline names a tracked, unchanged file by its blob id (see `gitindex`); when a
call changes the file, the blob is read back from here and kept in the checkpoint store, so the
checkpoint no longer depends on the repository (a later `git gc` cannot take it away).

Read in-process, not through `git cat-file`: no program of the repository's choosing runs, a
partial clone cannot be made to fetch, and nothing is written. The repository may be hostile
(anything in the workspace may be), so what is read is checked and bounded: only regular files
are opened (a FIFO in place of an object would block forever), opened without blocking and
without following a final symlink; a pack index is searched with positioned reads, never read
whole; delta chains are followed in a loop (no recursion to overflow) to a bounded depth, every
object and delta inflated to at most the size it may have, the whole chain to a total; any
malformed byte is `Missing`, never another exception; and the content must hash to the id it was
asked for (a damaged or forged object is refused).
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import zlib
from pathlib import Path

MAX_DEPTH = 4095  # delta chain length: git's own limit for --depth
MAX_PACKS = 256  # pack files looked in, per objects directory (each holds a descriptor open)
MAX_ALTERNATES = 16
MAX_BASE = 256 << 20  # the largest object a delta chain may pass through
# git never deltas an object against a base more than 32 times its size (pack-objects'
# try_delta), so a base larger than that is not one git made.
BASE_RATIO = 32
_OBJ_TYPES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
_OFS_DELTA, _REF_DELTA = 6, 7
_IDX_MAGIC = b"\377tOc\0\0\0\2"
_MALFORMED = (IndexError, ValueError, struct.error, zlib.error, OverflowError)


class Missing(Exception):
    """The object is not there (pruned, never there), or could not be read as asked."""


def open_regular(path: Path | str) -> int:
    """A descriptor on `path` if it is a regular file (not a FIFO, device or final symlink)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path | str, limit: int) -> bytes:
    """At most `limit` bytes of the regular file `path` (OSError if it is anything else)."""
    fd = open_regular(path)
    try:
        chunks, left = [], limit
        while left > 0:
            c = os.read(fd, min(left, 1 << 20))
            if not c:
                break
            chunks.append(c)
            left -= len(c)
        return b"".join(chunks)
    finally:
        os.close(fd)


class _Spend:
    """What a whole delta chain may inflate, in bytes: bounds its time and memory together."""

    def __init__(self, total: int):
        self.left = total

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise Missing("the object's delta chain inflates to more than it may")


class ObjectReader:
    def __init__(self, objects_dirs: list[Path]):
        self.dirs: list[Path] = []
        for d in objects_dirs:  # and their alternates (a shared clone), one level
            self.dirs.append(d)
            try:
                text = read_regular(d / "info" / "alternates", 64 << 10).decode("utf-8", "replace")
            except OSError:
                continue
            for line in text.splitlines()[:MAX_ALTERNATES]:
                line = line.strip()
                if line and not line.startswith("#"):
                    self.dirs.append(Path(os.path.normpath(d / line)))
        self._packs: list[_Pack] | None = None

    def blob(self, oid: str, max_size: int) -> bytes:
        """The content of blob `oid` (hex SHA-1), at most `max_size` bytes. Raises Missing."""
        try:
            raw = bytes.fromhex(oid)
        except ValueError:
            raw = b""
        if len(raw) != 20:
            raise Missing("not a SHA-1 object id")
        try:
            kind, data = self._read(raw, max_size)
        except _MALFORMED as e:  # a malformed object, whatever byte it failed on
            raise Missing(f"object {oid} is malformed ({type(e).__name__})") from None
        except RecursionError:  # pragma: no cover - the reader does not recurse; kept as a guard
            raise Missing(f"object {oid} is malformed") from None
        if kind != b"blob":
            raise Missing(f"{oid} is a {kind.decode('ascii', 'replace')}, not a blob")
        if hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() != oid:
            raise Missing(f"{oid} does not hash to its id")
        return data

    def _read(self, oid: bytes, max_size: int) -> tuple[bytes, bytes]:
        spend = _Spend(min(BASE_RATIO * max_size, MAX_BASE) + 2 * max_size + (16 << 20))
        deltas: list[tuple[bytes, int]] = []  # (delta, its result's limit), outermost first
        limit = max_size
        want: bytes | None = oid
        at: tuple[_Pack, int] | None = None
        for _ in range(MAX_DEPTH + 1):
            if at is None:
                assert want is not None
                loose = self._loose(want, limit)
                if loose is not None:
                    kind, data = loose
                    spend.take(len(data))
                    break
                at = self._locate(want)
            pack, offset = at
            kind_no, size, body = pack.header(offset)
            if kind_no in _OBJ_TYPES:
                if size > limit:
                    raise Missing("object larger than asked for")
                kind, data = _OBJ_TYPES[kind_no], pack.inflate(body, size)
                spend.take(len(data))
                break
            if kind_no not in (_OFS_DELTA, _REF_DELTA):
                raise Missing("unknown object type in pack")
            if kind_no == _OFS_DELTA:
                back, body = pack.offset_back(body)
                if back <= 0 or back > offset:
                    raise Missing("a delta's base lies outside its pack")
                at, want = (pack, offset - back), None
            else:
                want = pack.pread(20, body)
                if len(want) != 20:
                    raise Missing("pack truncated")
                at, body = None, body + 20
            # a delta is its copy and insert instructions: at most a few bytes per result byte
            delta = pack.inflate(body, size, limit=2 * limit + (1 << 16))
            spend.take(len(delta))
            deltas.append((delta, limit))
            limit = min(BASE_RATIO * limit + BASE_RATIO, max(MAX_BASE, max_size))
        else:
            raise Missing("delta chain too long")
        for delta, result_limit in reversed(deltas):
            data = _apply_delta(data, delta, result_limit)
        return kind, data

    def _loose(self, oid: bytes, limit: int) -> tuple[bytes, bytes] | None:
        hexid = oid.hex()
        for d in self.dirs:
            try:
                fd = open_regular(d / hexid[:2] / hexid[2:])
            except OSError:
                continue
            try:
                return _inflate_loose(fd, limit)
            finally:
                os.close(fd)
        return None

    def _locate(self, oid: bytes) -> tuple["_Pack", int]:
        for pack in self._all_packs():
            offset = pack.find(oid)
            if offset is not None:
                return pack, offset
        raise Missing(f"object {oid.hex()} is not in the repository")

    def _all_packs(self) -> list["_Pack"]:
        if self._packs is None:
            packs = []
            for d in self.dirs:
                try:
                    names = sorted(n for n in os.listdir(d / "pack") if n.endswith(".idx"))[:MAX_PACKS]
                except OSError:
                    continue
                for n in names:
                    try:
                        packs.append(_Pack(d / "pack" / n[:-4]))
                    except (OSError, Missing, *_MALFORMED):
                        continue
            self._packs = packs
        return self._packs

    def close(self) -> None:
        for p in self._packs or []:
            p.close()
        self._packs = None


def _inflate_loose(fd: int, max_size: int) -> tuple[bytes, bytes]:
    """A loose object: zlib of "<kind> <size>\\0<content>"; never more than its header says,
    and never more than `max_size`."""
    z = zlib.decompressobj()
    out = bytearray()
    want = 64  # enough for any header
    header: bytes | None = None
    while True:
        chunk = z.unconsumed_tail or os.read(fd, 1 << 16)
        if not chunk:
            break
        out += z.decompress(chunk, max(1, want + 1 - len(out)))
        if header is None:
            nul = out.find(b"\0")
            if nul < 0:
                if len(out) >= 64:
                    raise Missing("not an object")
                continue
            header = bytes(out[:nul])
            kind, _, size = header.partition(b" ")
            if kind not in _OBJ_TYPES.values() or not size.isdigit() or len(size) > 20:
                raise Missing("not an object")
            if int(size) > max_size:
                raise Missing("object larger than asked for")
            want = nul + 1 + int(size)
        if len(out) > want:
            raise Missing("object larger than its header says")
        if z.eof:
            break
    if header is None:
        raise Missing("not an object")
    kind, _, size = header.partition(b" ")
    data = bytes(out[len(header) + 1:])
    if len(data) != int(size) or not z.eof:
        raise Missing("object truncated")
    return kind, data


class _Pack:
    """A pack and its version 2 index. The index is searched with positioned reads: a hostile
    one's size costs nothing, and a file truncated meanwhile is a short read, not a fault (as a
    memory map's would be)."""

    def __init__(self, base: Path):
        self.idx_fd = open_regular(str(base) + ".idx")
        try:
            self.fd = open_regular(str(base) + ".pack")
        except OSError:
            os.close(self.idx_fd)
            raise
        try:
            head = os.pread(self.idx_fd, 8 + 1024, 0)
            if len(head) != 8 + 1024 or head[:8] != _IDX_MAGIC:
                raise Missing("not a version 2 pack index")
            self.fan = struct.unpack_from(">256I", head, 8)
            if any(a > b for a, b in zip(self.fan, self.fan[1:])):
                raise Missing("pack index fan-out is not sorted")
            self.n = n = self.fan[255]
            self.ids_at = 8 + 1024
            self.offs_at = self.ids_at + 24 * n  # after the ids and their CRCs
            self.big_at = self.offs_at + 4 * n
            if os.fstat(self.idx_fd).st_size < self.big_at + 40:
                raise Missing("pack index truncated")
        except BaseException:
            self.close()
            raise

    def pread(self, n: int, at: int) -> bytes:
        return os.pread(self.fd, n, at)

    def _idx(self, n: int, at: int) -> bytes:
        b = os.pread(self.idx_fd, n, at)
        if len(b) != n:
            raise Missing("pack index truncated")
        return b

    def find(self, oid: bytes) -> int | None:
        lo = self.fan[oid[0] - 1] if oid[0] else 0
        hi = self.fan[oid[0]]
        for _ in range(40):  # a binary search over the sorted ids: log2 of 2^32 steps at most
            if lo >= hi:
                break
            mid = (lo + hi) // 2
            if self._idx(20, self.ids_at + 20 * mid) < oid:
                lo = mid + 1
            else:
                hi = mid
        if lo >= self.n or self._idx(20, self.ids_at + 20 * lo) != oid:
            return None
        (off,) = struct.unpack(">I", self._idx(4, self.offs_at + 4 * lo))
        if off & 0x80000000:
            (off,) = struct.unpack(">Q", self._idx(8, self.big_at + 8 * (off & 0x7FFFFFFF)))
        return off

    def header(self, offset: int) -> tuple[int, int, int]:
        """An entry's type, its inflated size, and where what follows the size begins."""
        head = self.pread(16, offset)
        c = head[0]
        kind = (c >> 4) & 7
        size = c & 15
        shift, p = 4, 1
        while c & 0x80:
            if p >= 10:
                raise Missing("a pack entry's size is too long")
            c = head[p]
            p += 1
            size |= (c & 0x7F) << shift
            shift += 7
        return kind, size, offset + p

    def offset_back(self, at: int) -> tuple[int, int]:
        head = self.pread(16, at)
        c = head[0]
        back, p = c & 127, 1
        while c & 128:
            if p >= 10:
                raise Missing("a delta's base offset is too long")
            c = head[p]
            p += 1
            back = ((back + 1) << 7) | (c & 127)
        return back, at + p

    def inflate(self, at: int, size: int, limit: int | None = None) -> bytes:
        """`size` bytes inflated from `at`: more or fewer is Missing."""
        if size > (size if limit is None else limit):
            raise Missing("object larger than asked for")
        z = zlib.decompressobj()
        out = bytearray()
        while not z.eof:
            chunk = z.unconsumed_tail
            if not chunk:
                chunk = self.pread(1 << 16, at)
                if not chunk:
                    raise Missing("pack truncated")
                at += len(chunk)
            out += z.decompress(chunk, size + 1 - len(out))
            if len(out) > size:
                raise Missing("object larger than its header says")
        if len(out) != size:
            raise Missing("object truncated")
        return bytes(out)

    def close(self) -> None:
        for name in ("fd", "idx_fd"):
            fd = self.__dict__.pop(name, None)
            if fd is not None:
                os.close(fd)


def _delta_size(d: bytes, p: int) -> tuple[int, int]:
    size = shift = 0
    while True:
        if shift > 63:
            raise Missing("a delta's size is too long")
        c = d[p]
        p += 1
        size |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return size, p


def _apply_delta(base: bytes, delta: bytes, max_size: int) -> bytes:
    try:
        src_size, p = _delta_size(delta, 0)
        dst_size, p = _delta_size(delta, p)
        if src_size != len(base) or dst_size > max_size:
            raise Missing("delta does not fit its base, or its result is too large")
        out = bytearray()
        n = len(delta)
        while p < n:
            op = delta[p]
            p += 1
            if op & 0x80:
                off = size = 0
                for i in range(4):
                    if op & (1 << i):
                        off |= delta[p] << (8 * i)
                        p += 1
                for i in range(3):
                    if op & (0x10 << i):
                        size |= delta[p] << (8 * i)
                        p += 1
                size = size or 0x10000
                if off + size > len(base):
                    raise Missing("delta copies past its base")
                out += base[off:off + size]
            elif op:
                if p + op > n:
                    raise Missing("delta truncated")
                out += delta[p:p + op]
                p += op
            else:
                raise Missing("bad delta")
            if len(out) > dst_size:
                raise Missing("delta result larger than it says")
        if len(out) != dst_size:
            raise Missing("delta result truncated")
        return bytes(out)
    except IndexError:
        raise Missing("delta truncated") from None
