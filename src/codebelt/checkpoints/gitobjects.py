"""Blobs read from a repository's object database, read-only: loose objects and pack files.

A checkpoint's baseline names a tracked, unchanged file by its blob id (see `gitindex`); when a
call changes the file, the blob is read back from here and kept in the checkpoint store, so the
checkpoint no longer depends on the repository (a later `git gc` cannot take it away).

Read in-process, not through `git cat-file`: no program of the repository's choosing runs, a
partial clone cannot be made to fetch, and nothing is written. What is read is checked: the
content must hash to the id it was asked for (a damaged or forged object is refused), and every
size, delta chain and decompression is bounded.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from pathlib import Path

MAX_DEPTH = 1000  # delta chain length (git's own default is 50, aggressive repacks 250)
_OBJ_TYPES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
_OFS_DELTA, _REF_DELTA = 6, 7


class Missing(Exception):
    """The object is not there (pruned, never there), or could not be read as asked."""


class ObjectReader:
    def __init__(self, objects_dirs: list[Path]):
        self.dirs: list[Path] = []
        for d in objects_dirs:  # and their alternates (a shared clone), one level
            self.dirs.append(d)
            try:
                text = (d / "info" / "alternates").read_text("utf-8", "replace")
            except OSError:
                continue
            for line in text.splitlines()[:16]:
                line = line.strip()
                if line and not line.startswith("#"):
                    self.dirs.append((d / line).resolve())
        self._packs: list[_Pack] | None = None

    def blob(self, oid: str, max_size: int) -> bytes:
        """The content of blob `oid` (hex SHA-1), at most `max_size` bytes. Raises Missing."""
        if len(oid) != 40:
            raise Missing("not a SHA-1 object id")
        kind, data = self._read(bytes.fromhex(oid), max_size, 0)
        if kind != b"blob":
            raise Missing(f"{oid} is a {kind.decode()}, not a blob")
        if hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() != oid:
            raise Missing(f"{oid} does not hash to its id")
        return data

    def _read(self, oid: bytes, max_size: int, depth: int) -> tuple[bytes, bytes]:
        if depth > MAX_DEPTH:
            raise Missing("delta chain too long")
        hexid = oid.hex()
        for d in self.dirs:
            loose = d / hexid[:2] / hexid[2:]
            try:
                fd = os.open(loose, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                return _inflate_loose(fd, max_size)
            finally:
                os.close(fd)
        for pack in self._all_packs():
            offset = pack.find(oid)
            if offset is not None:
                return pack.read(offset, max_size, self, depth)
        raise Missing(f"object {hexid} is not in the repository")

    def _all_packs(self) -> list["_Pack"]:
        if self._packs is None:
            packs = []
            for d in self.dirs:
                try:
                    names = sorted(os.listdir(d / "pack"))
                except OSError:
                    continue
                for n in names:
                    if n.endswith(".idx") and (d / "pack" / (n[:-4] + ".pack")).exists():
                        try:
                            packs.append(_Pack(d / "pack" / n[:-4]))
                        except (OSError, Missing):
                            continue
            self._packs = packs
        return self._packs

    def close(self) -> None:
        for p in self._packs or []:
            p.close()
        self._packs = None


def _inflate_loose(fd: int, max_size: int) -> tuple[bytes, bytes]:
    z = zlib.decompressobj()
    out = bytearray()
    header: bytes | None = None
    want = max_size + 64
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        out += z.decompress(chunk, max(1, want - len(out)))
        if header is None and b"\0" in out:
            head, _, _ = bytes(out).partition(b"\0")
            kind, _, size = head.partition(b" ")
            if not size.isdigit() or int(size) > max_size:
                raise Missing("object larger than asked for")
            header = head
            want = len(head) + 1 + int(size)
        if len(out) >= want and z.unconsumed_tail:
            raise Missing("object larger than its header says")
        if z.eof:
            break
    if header is None:
        raise Missing("not an object")
    kind, _, size = header.partition(b" ")
    data = bytes(out[len(header) + 1:])
    if len(data) != int(size):
        raise Missing("object truncated")
    return kind, data


class _Pack:
    def __init__(self, base: Path):
        self.fd = os.open(str(base) + ".pack", os.O_RDONLY | os.O_CLOEXEC)
        with open(str(base) + ".idx", "rb") as f:
            idx = f.read(1 << 30)
        if idx[:8] != b"\377tOc\0\0\0\2":
            os.close(self.fd)
            raise Missing("not a version 2 pack index")
        self.fan = struct.unpack_from(">256I", idx, 8)
        self.n = n = self.fan[255]
        self.idx = idx
        self.ids_at = 8 + 1024
        self.offs_at = self.ids_at + 24 * n  # after the ids and their CRCs
        self.big_at = self.offs_at + 4 * n
        if len(idx) < self.big_at + 40:
            os.close(self.fd)
            raise Missing("pack index truncated")

    def find(self, oid: bytes) -> int | None:
        lo = self.fan[oid[0] - 1] if oid[0] else 0
        hi = self.fan[oid[0]]
        idx, at = self.idx, self.ids_at
        while lo < hi:  # a binary search over the sorted ids, in place
            mid = (lo + hi) // 2
            if idx[at + 20 * mid: at + 20 * mid + 20] < oid:
                lo = mid + 1
            else:
                hi = mid
        if lo >= self.n or idx[at + 20 * lo: at + 20 * lo + 20] != oid:
            return None
        (off,) = struct.unpack_from(">I", idx, self.offs_at + 4 * lo)
        if off & 0x80000000:
            (off,) = struct.unpack_from(">Q", idx, self.big_at + 8 * (off & 0x7FFFFFFF))
        return off

    def read(self, offset: int, max_size: int, reader: ObjectReader, depth: int) -> tuple[bytes, bytes]:
        head = os.pread(self.fd, 32, offset)
        if not head:
            raise Missing("pack truncated")
        c = head[0]
        kind = (c >> 4) & 7
        size = c & 15
        shift, p = 4, 1
        while c & 0x80:
            c = head[p]
            p += 1
            size |= (c & 0x7F) << shift
            shift += 7
        if kind == _OFS_DELTA:
            c = head[p]
            p += 1
            back = c & 127
            while c & 128:
                c = head[p]
                p += 1
                back = ((back + 1) << 7) | (c & 127)
            base_kind, base = self.read(offset - back, _base_limit(max_size), reader, depth + 1)
            delta = self._inflate(offset + p, size, max_size * 2 + (1 << 20))
            return base_kind, _apply_delta(base, delta, max_size)
        if kind == _REF_DELTA:
            base_id = os.pread(self.fd, 20, offset + p)
            base_kind, base = reader._read(base_id, _base_limit(max_size), depth + 1)
            delta = self._inflate(offset + p + 20, size, max_size * 2 + (1 << 20))
            return base_kind, _apply_delta(base, delta, max_size)
        if kind not in _OBJ_TYPES:
            raise Missing("unknown object type in pack")
        if size > max_size:
            raise Missing("object larger than asked for")
        return _OBJ_TYPES[kind], self._inflate(offset + p, size, max_size)

    def _inflate(self, at: int, size: int, limit: int) -> bytes:
        if size > limit:
            raise Missing("object larger than asked for")
        z = zlib.decompressobj()
        out = bytearray()
        while not z.eof:
            chunk = os.pread(self.fd, 1 << 16, at)
            if not chunk:
                raise Missing("pack truncated")
            at += len(chunk)
            out += z.decompress(chunk, size + 1 - len(out))
            if len(out) > size:
                raise Missing("object larger than its header says")
            while z.unconsumed_tail and not z.eof:
                out += z.decompress(z.unconsumed_tail, size + 1 - len(out))
                if len(out) > size:
                    raise Missing("object larger than its header says")
        if len(out) != size:
            raise Missing("object truncated")
        return bytes(out)

    def close(self) -> None:
        os.close(self.fd)


def _base_limit(max_size: int) -> int:
    """How large a delta's base may be: a delta's result is rarely a small part of its base."""
    return max_size * 16 + (1 << 20)


def _delta_size(d: bytes, p: int) -> tuple[int, int]:
    size = shift = 0
    while True:
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
