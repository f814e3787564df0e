"""Atomic file replacement: temp file in the same directory, fsync, rename.

A crash or kill at any moment leaves either the old file or the new one, never a torn one.
The mode of an existing file is kept; a new file gets the umask's default.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Callable, Iterable

from .beneath import ANYWHERE, SUPPORTED, Beneath, SymlinkInPath


class AtomicWriteError(OSError):
    """Writing failed; the target is unchanged. `str()` is a sentence fit for the model."""

    def __str__(self) -> str:  # OSError would prefix "[Errno N]"
        return self.strerror or super().__str__()


def _describe(err: OSError, path: Path) -> str:
    if err.errno == errno.ENOSPC:
        return f"no space left on the device holding {path}"
    if err.errno == errno.EDQUOT:
        return f"disk quota exceeded writing {path}"
    if err.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied writing {path}"
    if err.errno == errno.EROFS:
        return f"{path} is on a read-only file system"
    return f"{err.strerror or err} writing {path}"


class FileChanged(AtomicWriteError):
    """The file at the path is no longer the one the caller checked (`expect`); nothing was written."""


ABSENT = object()  # `expect=ABSENT`: the path must still not exist when the new file is renamed there


def write_atomic(
    path: Path,
    data: bytes | Iterable[bytes | bytearray | memoryview],
    *,
    mode: int | None = None,
    fsync: bool = True,
    before_replace: Callable[[], None] | None = None,
    beneath: Beneath = ANYWHERE,
    expect: os.stat_result | object | None = None,
) -> os.stat_result:
    """Replace `path` with `data` atomically, creating parent directories.

    `path` must be resolved (no symlink in it, as `Workspace.resolve` returns). Its directory is
    opened beneath its root (`beneath`: the deepest root holding it, else `/`) without following
    any symlink, creating missing directories, and the temp file and the rename happen inside
    that directory's descriptor. A directory swapped for a symlink after the permission check
    therefore fails the write instead of redirecting it. A symlink as the final component is
    replaced, never followed. Raises AtomicWriteError (the file is left as it was) on any failure.

    `data` is bytes or an iterable of byte chunks written in order (a big file need not be
    joined in memory first). `before_replace` runs after the temp file is complete and synced,
    just before the rename; whatever it raises aborts the write (the temp file is removed).
    `expect`, when given, is the `stat` of the file the caller checked (or ABSENT): if the path
    holds anything else just before the rename, FileChanged is raised and nothing is written.
    Returns the new file's `fstat` (taken from the temp file's descriptor, before the rename).
    """
    path = Path(path)
    if not SUPPORTED:  # refuse rather than fall back to a write a symlink swap could redirect
        raise AtomicWriteError(errno.ENOSYS, "this platform cannot write relative to a directory "
                               "descriptor; codebelt's file tools need Linux, macOS or a BSD")
    return _write_in_dir(path, data, mode, fsync, before_replace, beneath, expect)


def _write_all(fd: int, data) -> None:
    chunks = (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            n = os.write(fd, view)
            view = view[n:]


def _read_only_fs(dir_fd: int) -> bool:
    try:
        return bool(os.statvfs(dir_fd).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def remove_file(path: Path, *, beneath: Beneath = ANYWHERE) -> None:
    """Unlink `path` (resolved, like write_atomic's) inside its directory opened the same
    symlink-free way, so a directory swapped for a symlink after the permission check cannot
    redirect the deletion. Raises FileNotFoundError, IsADirectoryError or AtomicWriteError."""
    path = Path(path)
    if not SUPPORTED:
        raise AtomicWriteError(errno.ENOSYS, "this platform cannot delete relative to a directory descriptor")
    try:
        dfd = beneath.open_dir(path.parent)
    except FileNotFoundError:
        raise
    except SymlinkInPath as e:
        raise AtomicWriteError(e.errno, f"{e.link or path.parent} is a symlink, not a directory (was it just "
                               "replaced?); the deletion was refused") from e
    except OSError as e:
        raise AtomicWriteError(e.errno, _describe(e, path.parent)) from e
    try:
        os.unlink(path.name, dir_fd=dfd)
    finally:
        os.close(dfd)


def _keep_owner(fd: int, st: os.stat_result) -> None:
    """Give the new file the old one's owner and group where allowed (root editing a user's
    file must not leave it root-owned); otherwise keep at least the group if we can."""
    if (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid()):
        return
    for uid in (st.st_uid, -1):
        try:
            os.fchown(fd, uid, st.st_gid)
            return
        except OSError:
            continue


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino, a.st_size, a.st_mtime_ns) == (b.st_dev, b.st_ino, b.st_size, b.st_mtime_ns)


def _check_expected(name: str, dfd: int, path: Path, expect) -> None:
    try:
        now = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        now = None
    if expect is ABSENT:
        if now is not None:
            raise FileChanged(errno.EEXIST, f"{path} was created by someone else while it was being written")
    elif now is None:
        raise FileChanged(errno.ENOENT, f"{path} was deleted while it was being written")
    elif not _same_file(now, expect):
        raise FileChanged(errno.ESTALE, f"{path} was changed by someone else while it was being written")


def _write_in_dir(path: Path, data, mode: int | None, fsync: bool, before_replace, beneath: Beneath,
                  expect) -> os.stat_result:
    try:
        dfd = beneath.open_dir(path.parent, create=True)
    except SymlinkInPath as e:
        raise AtomicWriteError(e.errno, f"{e.link or path.parent} is a symlink, not a directory (was it just "
                               "replaced?); the write was refused") from e
    except OSError as e:
        if e.errno == errno.ENOTDIR:
            raise AtomicWriteError(e.errno, f"a part of {path.parent} is a file, not a directory") from e
        raise AtomicWriteError(e.errno, _describe(e, path.parent)) from e
    name = path.name
    tmp_name = None
    try:
        st = None
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                raise FileNotFoundError  # a symlink is replaced like a missing file: its mode is not a file's
            keep_mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISREG(st.st_mode) and not os.access(name, os.W_OK, dir_fd=dfd):
                if _read_only_fs(dfd):
                    raise AtomicWriteError(errno.EROFS, f"{path} is on a read-only file system")
                raise AtomicWriteError(errno.EACCES, f"{path} is read-only (mode {keep_mode:o})")
        except FileNotFoundError:
            st = keep_mode = None
        if mode is not None:
            keep_mode = mode
        tmp_name = f".{name[:200]}.{os.urandom(4).hex()}.codebelt-tmp"
        fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                     0o600, dir_fd=dfd)
        try:
            _write_all(fd, data)
            if keep_mode is None:
                umask = os.umask(0)
                os.umask(umask)
                keep_mode = 0o666 & ~umask
            if st is not None:
                _keep_owner(fd, st)
            os.fchmod(fd, keep_mode)  # after chown, which may clear set-id bits
            if fsync:
                os.fsync(fd)
            written = os.fstat(fd)
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace()
        if expect is not None:
            _check_expected(name, dfd, path, expect)
        os.replace(tmp_name, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        tmp_name = None
        if fsync:
            try:
                os.fsync(dfd)
            except OSError:
                pass
        return written
    except AtomicWriteError:
        raise
    except OSError as e:
        raise AtomicWriteError(e.errno, _describe(e, path)) from e
    finally:
        if tmp_name is not None:
            try:
                os.unlink(tmp_name, dir_fd=dfd)
            except OSError:
                pass
        os.close(dfd)
