"""Opening and creating files beneath a root without following any symlink.

The permission decision is made on a resolved path: absolute, with every symlink and `..`
already resolved (`Workspace.resolve`). Opening that same path again by name would follow
whatever a concurrent process put there since — a directory swapped for a symlink to `~/.ssh`
between the decision and the open redirects the tool outside. Here a resolved path is opened
from a directory descriptor of the root it lies under (a workspace root, or `/` for a path
outside every root), component by component with no symlink followed at all: the kernel's
`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` where it exists (Linux
5.6+, one system call), else a walk of `O_NOFOLLOW | O_DIRECTORY` opens. A resolved path has
no symlink in it, so finding one means the tree changed after the decision: the open fails with
`SymlinkInPath` instead of going where the link points. The object checked is the object used.

Files are opened with `O_NONBLOCK` and checked with `fstat` before anything is read, so a FIFO
or device swapped in cannot block the caller. A `Beneath` carries the roots and a check every
opened file must pass (the caller's: a file whose inode is a read-denied file's is refused).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat as stat_mod
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
STRICT = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# A directory reached only to look beneath it: O_PATH needs no read permission and opens nothing.
_WALK = (getattr(os, "O_PATH", 0) or os.O_RDONLY) | _DIRECTORY | _NOFOLLOW | _CLOEXEC
DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | _CLOEXEC

# Where the OS lets us work relative to a directory descriptor (Linux, macOS, BSDs).
SUPPORTED = {os.open, os.mkdir, os.stat, os.rename, os.unlink} <= os.supports_dir_fd and bool(_NOFOLLOW)


class SymlinkInPath(OSError):
    """A component of a resolved path is a symlink now (the tree changed after it was resolved).
    `link` is the first such component when it could be found again."""

    def __init__(self, path: Path, link: Path | None):
        self.link = link
        where = link if link is not None else path
        super().__init__(errno.ELOOP, f"{where} is a symlink (was it just replaced?); it is not followed", str(path))

    def __str__(self) -> str:
        return self.strerror or super().__str__()


class NotRegularFile(OSError):
    """A FIFO, socket or device where a regular file was expected (refused before any read)."""


# -- openat2 --------------------------------------------------------------------------------------
class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_SYS_OPENAT2 = 437  # the same number on every Linux architecture (added after the syscall tables were unified)
_syscall = None
openat2_available: bool | None = None if hasattr(os, "O_PATH") else False  # probed on first use


def _openat2(dir_fd: int, rel: str, flags: int, mode: int, resolve: int) -> int:
    global _syscall, openat2_available
    if _syscall is None:
        fn = ctypes.CDLL(None, use_errno=True).syscall
        fn.restype = ctypes.c_long
        fn.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
        _syscall = fn
    how = _OpenHow(flags | _CLOEXEC, mode if flags & os.O_CREAT else 0, resolve)
    name = os.fsencode(rel)
    for _ in range(8):
        fd = _syscall(_SYS_OPENAT2, dir_fd, name, ctypes.byref(how), ctypes.sizeof(how))
        if fd >= 0:
            openat2_available = True
            return fd
        err = ctypes.get_errno()
        if err == errno.EINTR or err == errno.EAGAIN:
            # EAGAIN: a rename somewhere on the system raced a scoped lookup; try again
            continue
        if err in (errno.ENOSYS, errno.EPERM) and not openat2_available:
            # No openat2 (old kernel), or a seccomp filter refusing it: walk instead, from now on.
            openat2_available = False
            raise _NoOpenat2()
        raise OSError(err, os.strerror(err), rel)
    raise _Busy()  # renames keep racing it: the walk (one component at a time) is not disturbed


class _NoOpenat2(Exception):
    pass


class _Busy(_NoOpenat2):
    pass


# -- the walk -----------------------------------------------------------------------------------
def _walk(dir_fd: int, parts: tuple[str, ...], flags: int, mode: int, create_dirs: bool = False) -> int:
    """Open parts[-1] beneath `dir_fd`, each directory with O_NOFOLLOW|O_DIRECTORY (creating
    missing ones if `create_dirs`), the last with `flags | O_NOFOLLOW`."""
    fd = dir_fd
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            want = (flags | _NOFOLLOW | _CLOEXEC) if last else _WALK
            try:
                nxt = os.open(name, want, mode, dir_fd=fd)
            except FileNotFoundError:
                if not create_dirs or (last and not flags & _DIRECTORY):
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(name, want, mode, dir_fd=fd)
            except NotADirectoryError:
                # O_PATH|O_NOFOLLOW|O_DIRECTORY on a symlink says ENOTDIR: tell a link from a file
                if stat_mod.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
                raise
            if fd != dir_fd:
                os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        if fd != dir_fd:
            os.close(fd)
        raise


def _split(path: str, root: str) -> str:
    """`path` relative to `root` (both absolute strings, `root` holding `path`): "" for the root."""
    rel = path[len(root):].lstrip("/") if root != "/" else path.lstrip("/")
    if rel and any(p in ("..", ".", "") for p in rel.split("/")):
        raise OSError(errno.EINVAL, "a resolved path may not hold . or .. components", path)
    return rel


def first_symlink(path: Path) -> Path | None:
    """The first component of `path` that is a symlink now (for messages), or None."""
    for p in reversed([path, *path.parents]):
        if p.is_symlink():
            return p
    return None


@dataclass(frozen=True)
class Beneath:
    """Where resolved paths are opened from, and what every opened file must pass.

    A path is opened beneath the deepest of `roots` that holds it, else beneath `/`. `check`,
    when given, sees the path and the `fstat` of every file `open_regular` opens and raises to
    refuse it (its exception propagates unchanged)."""

    roots: tuple[Path, ...] = ()
    check: Callable[[Path, os.stat_result], None] | None = None

    def root_of(self, path: Path) -> Path:
        return Path(self._root_of(os.fspath(path)))

    def _root_of(self, text: str) -> str:
        best = "/"
        for r in self.roots:
            r = os.fspath(r)
            if (text == r or text.startswith(r + "/")) and len(r) > len(best):
                best = r
        return best

    def _open(self, path: Path, flags: int, mode: int = 0o666, create_dirs: bool = False) -> int:
        if not SUPPORTED:
            raise OSError(errno.ENOSYS, "this platform cannot open files relative to a directory descriptor; "
                          "codebelt's file tools need Linux, macOS or a BSD")
        text = os.fspath(path)
        if not text.startswith("/"):
            raise OSError(errno.EINVAL, "a resolved path must be absolute", text)
        root = self._root_of(text)
        rel = _split(text, root)
        root_fd = os.open(root, _WALK & ~_NOFOLLOW)  # the root itself was resolved once, at session start
        try:
            if not rel:
                return os.open(".", flags | _CLOEXEC, dir_fd=root_fd)
            if openat2_available is not False and not create_dirs:
                try:
                    return _openat2(root_fd, rel, flags, mode, STRICT)
                except _NoOpenat2:
                    pass  # no openat2 here, or renames keep racing it: the same guarantees by a walk
            return _walk(root_fd, tuple(rel.split("/")), flags, mode, create_dirs)
        except OSError as e:
            if e.errno == errno.ELOOP or e.errno == errno.EXDEV:
                raise SymlinkInPath(Path(text), first_symlink(Path(text))) from None
            raise
        finally:
            os.close(root_fd)

    def open_file(self, path: Path, flags: int, mode: int = 0o666) -> int:
        """A descriptor of the resolved `path` opened with `flags` (O_NOFOLLOW implied at every
        component). Raises SymlinkInPath, FileNotFoundError, NotADirectoryError, OSError."""
        return self._open(path, flags, mode)

    def open_dir(self, path: Path, create: bool = False) -> int:
        """A read descriptor of the directory `path`, creating missing directories if `create`
        (each created one is then opened without following, so a swap fails rather than
        redirects)."""
        return self._open(path, DIR_FLAGS, create_dirs=create)

    def open_regular(self, path: Path) -> "Opened":
        """`path` opened for reading if it is a regular file: O_NONBLOCK, then `fstat`, so a FIFO
        or device never blocks. Raises IsADirectoryError, NotRegularFile, SymlinkInPath,
        FileNotFoundError, OSError, or what `check` raises."""
        fd = self._open(path, READ_FLAGS)
        try:
            st = os.fstat(fd)
            if stat_mod.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
            if not stat_mod.S_ISREG(st.st_mode):
                raise NotRegularFile(errno.EINVAL, "not a regular file (device, FIFO or socket)", str(path))
            if self.check is not None:
                self.check(path, st)
        except BaseException:
            os.close(fd)
            raise
        return Opened(path, fd, st)

    def stat(self, path: Path) -> os.stat_result:
        """`lstat` of the resolved `path` reached beneath its root (its parent opened without
        following symlinks). Raises like `open_dir`, and FileNotFoundError."""
        path = Path(path)
        if path == self.root_of(path):
            return os.stat(path, follow_symlinks=False)
        dfd = self.open_dir(path.parent)
        try:
            return os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
        finally:
            os.close(dfd)

    def scandir_names(self, directory: Path, limit: int) -> list[str]:
        """Up to `limit` entry names of the resolved `directory` (for suggestions)."""
        fd = self.open_dir(directory)
        try:
            out: list[str] = []
            with os.scandir(fd) as it:
                for e in it:
                    out.append(e.name)
                    if len(out) >= limit:
                        break
            return out
        finally:
            os.close(fd)


FREE_LATER_BYTES = 8 << 20  # below this, freeing the blocks costs less than starting a thread
ANYWHERE = Beneath()  # resolved paths opened beneath `/`, with no check


class Opened:
    """An open regular file, its path and the `fstat` taken right after opening. Reads go through
    the descriptor, never the path again. A context manager; `close()` is idempotent."""

    def __init__(self, path: Path, fd: int, st: os.stat_result):
        self.path = path
        self.fd = fd
        self.st = st

    def __enter__(self) -> "Opened":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def close_soon(self) -> None:
        """Close now — or, when this descriptor is the last hold on a large file that has no
        name any more (it was replaced by a rename), in a thread of its own: that close frees
        the file's blocks (~12 ms for 50 MB on ext4), which the caller need not wait for."""
        if self.fd < 0:
            return
        fd, self.fd = self.fd, -1
        try:
            st = os.fstat(fd)
        except OSError:
            st = None
        if st is not None and st.st_nlink == 0 and st.st_size >= FREE_LATER_BYTES:
            threading.Thread(target=os.close, args=(fd,), name="codebelt-free-replaced", daemon=True).start()
        else:
            os.close(fd)

    def pread(self, size: int, offset: int) -> bytes:
        return os.pread(self.fd, size, offset)

    def read_bytes(self, limit: int | None = None) -> bytes:
        """The whole file from offset 0 (at most `limit` bytes): what was opened, whatever the
        path holds by now."""
        chunks: list[bytes] = []
        offset = 0
        want = limit if limit is not None else max(self.st.st_size, 0) + 1
        while True:
            block = os.pread(self.fd, max(min(want - offset, 8 << 20), 1 << 16), offset)
            if not block:
                break
            chunks.append(block)
            offset += len(block)
            if limit is not None and offset >= limit:
                break
        data = b"".join(chunks)
        return data[:limit] if limit is not None else data

    def reader(self, buffering: int = -1):
        """A buffered binary file object over a duplicate of the descriptor (closing it leaves
        this one open), positioned at 0."""
        f = os.fdopen(os.dup(self.fd), "rb", buffering=buffering)
        f.seek(0)
        return f
