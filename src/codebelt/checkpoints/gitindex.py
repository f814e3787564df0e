"""Git's index, read (never written): which files of a work tree git already holds as blobs.

For a file whose stat matches its index entry — size, mtime, ctime, inode, uid, gid, mode, the
test git makes to skip re-hashing it — the file's content is the blob the entry names, already
in the repository's object database: a checkpoint's baseline can record the blob id instead of
copying the file. Entries git itself would not trust are left out: racily clean ones (modified
in the same instant the index was written), assume-valid, skip-worktree and intent-to-add ones,
unmerged stages, symlinks and submodules.

The index is parsed here (formats 2 to 4; a split or sparse index, SHA-256 repositories and
repositories whose attributes or config convert content on checkout are not used) rather than
through `git ls-files`: nothing of the repository's — config, hooks, fsmonitor — is run, and
nothing in `.git` is written.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from ..files.gitrepo import find_repository, ownership_problem
from .gitobjects import open_regular, read_regular

MAX_INDEX_BYTES = 512 << 20
_HEAD = struct.Struct(">4sII")
_ENTRY = struct.Struct(">IIIIIIIIII20sH")  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size, id, flags
_M32 = 0xFFFFFFFF
# Attributes that make a work-tree file differ from its blob (git-lfs and other filters,
# line-ending conversion to CRLF, re-encoding, $Id$ expansion).
_CRLF = re.compile(rb"autocrlf=(true|yes|on|1)\b|eol=crlf")
_CONVERTING_ATTRS = re.compile(rb"\b(filter|eol|working-tree-encoding|ident)\b")


@dataclass
class Repo:
    """Where a work tree's repository keeps its index and objects."""

    top: Path  # the work tree's top directory
    git_dir: Path  # its .git directory (a worktree's own, for a linked worktree)
    common_dir: Path  # where objects live (the main .git of a linked worktree)
    prefix: str = ""  # the tracked root's path below `top` ("" when it is the top), with a "/"
    why_not: str | None = None  # why blob ids cannot be used for it

    @property
    def objects(self) -> Path:
        return self.common_dir / "objects"


def find_repo(root: str) -> Repo | None:
    """The repository whose work tree holds `root`, found as git finds it (`files.gitrepo`: a
    `.git` directory or `gitdir:` file in `root` or above it, up to a ceiling or file-system
    boundary), or None. One git would refuse for its owner ("dubious ownership": a `/tmp/.git`
    someone else planted above the workspace) comes back with `why_not` set, nothing of it read."""
    found = find_repository(root)
    if found is None:
        return None
    here, git_dir = found.top, found.git_dir
    prefix = "" if here == Path(root) else os.path.relpath(root, here) + "/"
    if found.refused or git_dir is None:
        return Repo(here, git_dir or found.dot, git_dir or found.dot, prefix, why_not=found.refused)
    common = git_dir
    try:
        rel = _read_small(git_dir / "commondir", 4096).decode("utf-8", "replace").strip()
        if rel:
            common = Path(os.path.realpath(git_dir / rel))
    except OSError:
        pass
    repo = Repo(here, git_dir, common, prefix)
    repo.why_not = ownership_problem(here, found.dot, git_dir, also=(common,)) or _unusable(repo)
    return repo


def _read_small(path: Path, limit: int) -> bytes:
    return read_regular(path, limit)  # a FIFO or device in the repository's place: OSError


def _user_git_files(name: str) -> list[Path]:
    """The user's and the system's git `config` or `attributes` (which apply to every repository)."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    out = [Path(xdg) / "git" / name]
    if name == "config":
        out += [Path(os.path.expanduser("~/.gitconfig")), Path("/etc/gitconfig")]
    else:
        out += [Path("/etc/gitattributes")]
    return out


def converts(attributes: bytes) -> bool:
    """Whether a `.gitattributes` text sets anything that makes a file differ from its blob."""
    for line in attributes.splitlines():
        line = line.strip()
        if line and not line.startswith(b"#") and _CONVERTING_ATTRS.search(line):
            return True
    return False


def _unusable(repo: Repo) -> str | None:
    """Why the repository's blobs may not equal its work-tree files (or cannot be read here)."""
    own = [repo.common_dir / "config", repo.git_dir / "config.worktree"]
    for cfg in own + _user_git_files("config"):
        try:
            text = _read_small(cfg, 1 << 20).lower()
        except OSError:
            continue
        flat = text.replace(b" ", b"").replace(b"\t", b"")
        if b"objectformat=sha256" in flat:
            return "a SHA-256 repository"
        if _CRLF.search(flat) or (cfg in own and b"[filter" in flat):
            return f"{cfg} converts content on checkout"
        if b"worktree=" in flat:
            return f"{cfg} names another work tree"
        if b"attributesfile=" in flat:
            return f"{cfg} names an attributes file elsewhere"
        if b"[include" in flat:
            return f"{cfg} includes other files"
    for attrs in (repo.top / ".gitattributes", repo.common_dir / "info" / "attributes", *_user_git_files("attributes")):
        try:
            text = _read_small(attrs, 1 << 20)
        except OSError:
            continue
        if converts(text):
            return f"{attrs} converts content on checkout"
    return None


IndexEntry = tuple[int, int, int, int, int, int, int, int, int, str]  # ctime s/ns, mtime s/ns, ino, mode, uid, gid, size, blob


class Index:
    """The usable entries of an index: path (relative to the work tree's top, bytes) → entry."""

    def __init__(self) -> None:
        self.entries: dict[bytes, IndexEntry] = {}
        self.all_paths: list[bytes] = []  # every entry's path, usable or not
        self.mtime_ns = 0  # the index file's own mtime: entries modified since may be racily clean
        self._dirs: set[bytes] | None = None

    def blob_for(self, rel: bytes, st: os.stat_result) -> str | None:
        """The blob id of the file `rel` when `st` (its lstat) matches the entry as git would
        require to skip re-hashing it; else None."""
        e = self.entries.get(rel)
        if e is None:
            return None
        cs, cn, ms, mn, ino, mode, uid, gid, size, blob = e
        if (size != st.st_size & _M32 or ms != (st.st_mtime_ns // 1_000_000_000) & _M32
                or mn != st.st_mtime_ns % 1_000_000_000 or cs != (st.st_ctime_ns // 1_000_000_000) & _M32
                or cn != st.st_ctime_ns % 1_000_000_000 or ino != st.st_ino & _M32
                or uid != st.st_uid & _M32 or gid != st.st_gid & _M32):
            return None
        if mode != (0o100755 if st.st_mode & 0o100 else 0o100644) or st.st_size != size:
            return None
        if st.st_mtime_ns >= self.mtime_ns:  # racily clean: git itself would look at the content
            return None
        return blob

    def tracks_under(self, rel_dir: bytes) -> bool:
        """Whether any entry (usable or not) lies under the directory `rel_dir`."""
        if self._dirs is None:
            dirs: set[bytes] = set()
            for p in self.all_paths:
                i = p.rfind(b"/")
                while i > 0:
                    d = p[:i + 1]
                    if d in dirs:
                        break
                    dirs.add(d)
                    i = p.rfind(b"/", 0, i)
            self._dirs = dirs
        return rel_dir + b"/" in self._dirs


class IndexError_(Exception):
    """The index cannot be used (unknown version, a split index, corrupt)."""


def read_index(repo: Repo, max_entries: int = 1_000_000) -> Index:
    """The repository's index, read without blocking (a FIFO in its place is refused, not
    waited on), at most MAX_INDEX_BYTES and `max_entries` entries."""
    fd = open_regular(repo.git_dir / "index")
    try:
        st = os.fstat(fd)
        if st.st_size > MAX_INDEX_BYTES:
            raise IndexError_("the index is too large")
        chunks, left = [], MAX_INDEX_BYTES + 1
        while left > 0:
            c = os.read(fd, min(left, 1 << 22))
            if not c:
                break
            chunks.append(c)
            left -= len(c)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_INDEX_BYTES:
        raise IndexError_("the index is too large")
    out = parse_index(data, max_entries)
    out.mtime_ns = st.st_mtime_ns
    return out


def parse_index(data: bytes, max_entries: int = 1_000_000) -> Index:
    """The entries of an index file's bytes; anything malformed is IndexError_."""
    try:
        return _parse_index(data, max_entries)
    except (ValueError, IndexError, struct.error) as e:  # a bad offset, a missing NUL, a short field
        raise IndexError_(f"the index is malformed ({type(e).__name__})") from None


def _parse_index(data: bytes, max_entries: int) -> Index:
    if len(data) < 32 or hashlib.sha1(data[:-20]).digest() != data[-20:]:
        raise IndexError_("the index is truncated or corrupt")
    sig, version, count = _HEAD.unpack_from(data, 0)
    if sig != b"DIRC" or version not in (2, 3, 4):
        raise IndexError_(f"unknown index format {version}")
    if count > max_entries:
        raise IndexError_(f"the index has more than {max_entries} entries")
    end = len(data) - 20
    pos = 12
    out = Index()
    entries = out.entries
    paths = out.all_paths
    unpack = _ENTRY.unpack_from
    prev = b""
    for _ in range(count):
        if pos + 62 > end:
            raise IndexError_("the index is truncated")
        cs, cn, ms, mn, _dev, ino, mode, uid, gid, size, blob, flags = unpack(data, pos)
        p = pos + 62
        extended = 0
        if flags & 0x4000:
            if version < 3:
                raise IndexError_("extended flags in a version 2 index")
            extended = int.from_bytes(data[p:p + 2], "big")
            p += 2
        if version == 4:
            strip, p = _varint(data, p)
            nul = data.index(b"\0", p, end)
            if strip > len(prev):
                raise IndexError_("bad path compression")
            name = prev[:len(prev) - strip] + data[p:nul]
            pos = nul + 1
        else:
            nul = data.index(b"\0", p, end)
            name = data[p:nul]
            pos += (nul - pos + 8) & ~7
        prev = name
        if not _plain(name):
            continue  # a path git itself would refuse to check out: never a key to look up
        paths.append(name)
        if (flags & 0x8000 or flags & 0x3000 or extended & 0x6000  # assume-valid, unmerged, skip-worktree/intent-to-add
                or mode not in (0o100644, 0o100755)):
            continue
        entries[name] = (cs, cn, ms, mn, ino, mode, uid, gid, size, blob.hex())
    while pos + 8 <= end:  # extensions: a split index keeps its entries elsewhere
        sig = data[pos:pos + 4]
        (size,) = struct.unpack_from(">I", data, pos + 4)
        if sig == b"link":
            raise IndexError_("a split index")
        if sig == b"sdir":
            raise IndexError_("a sparse index")
        pos += 8 + size
    return out


def _plain(name: bytes) -> bool:
    """A relative path of plain components: no empty, `.`, `..` or `.git` one, not absolute."""
    if not name or len(name) > 4096 or name.startswith(b"/") or name.endswith(b"/"):
        return False
    return all(part not in (b"", b".", b"..") and part.lower() != b".git" for part in name.split(b"/"))


def _varint(data: bytes, p: int) -> tuple[int, int]:
    c = data[p]
    p += 1
    val = c & 127
    while c & 128:
        if val > 1 << 32:
            raise IndexError_("bad path compression")
        c = data[p]
        p += 1
        val = ((val + 1) << 7) | (c & 127)
    return val, p
