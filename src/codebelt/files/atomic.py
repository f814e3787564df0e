"""Atomic file replacement: temp file in the same directory, fsync, rename.

A crash or kill at any moment leaves either the old file or the new one, never a torn one.
The mode of an existing file is kept; a new file gets the umask's default.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import Callable, Iterable


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


def write_atomic(
    path: Path,
    data: bytes | Iterable[bytes | bytearray | memoryview],
    *,
    mode: int | None = None,
    fsync: bool = True,
    before_replace: Callable[[], None] | None = None,
) -> None:
    """Replace `path` with `data` atomically, creating parent directories.

    `path` must be resolved (no symlinked directory on it, as `Workspace.resolve` returns):
    the directory is reached component by component without following symlinks, and the temp
    file and rename happen inside that directory's descriptor. A directory swapped for a
    symlink after the permission check therefore fails the write instead of redirecting it
    outside the workspace. Raises AtomicWriteError (the file is left as it was) on any failure.

    `data` is bytes or an iterable of byte chunks written in order (a big file need not be
    joined in memory first). `before_replace` runs after the temp file is complete and synced,
    just before the rename; whatever it raises aborts the write (the temp file is removed).
    """
    path = Path(path)
    if not _DIR_FD:  # refuse rather than fall back to a write a symlink swap could redirect
        raise AtomicWriteError(errno.ENOSYS, "this platform cannot write relative to a directory "
                               "descriptor; codebelt's file tools need Linux, macOS or a BSD")
    return _write_in_dir(path, data, mode, fsync, before_replace)


def _write_all(fd: int, data) -> None:
    chunks = (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            n = os.write(fd, view)
            view = view[n:]


def _read_only_fs(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False


# Where the OS lets us work relative to a directory descriptor (Linux, macOS, BSDs).
_DIR_FD = {os.open, os.mkdir, os.stat, os.rename, os.unlink} <= os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _open_dir(directory: Path, create: bool = True) -> int:
    """A descriptor of `directory`, walked from `/` one component at a time without following
    symlinks, creating missing directories (if `create`). A symlinked component raises
    OSError(ELOOP)."""
    fd = os.open(directory.anchor or "/", _DIR_FLAGS)
    try:
        for name in directory.parts[1:]:
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def remove_file(path: Path) -> None:
    """Unlink `path` (resolved, like write_atomic's) through the same symlink-free directory
    walk, so a directory swapped for a symlink after the permission check cannot redirect the
    deletion outside the workspace. Raises FileNotFoundError, IsADirectoryError or
    AtomicWriteError."""
    path = Path(path)
    if not _DIR_FD:
        raise AtomicWriteError(errno.ENOSYS, "this platform cannot delete relative to a directory descriptor")
    try:
        dfd = _open_dir(path.parent, create=False)
    except FileNotFoundError:
        raise
    except OSError as e:
        link = _first_symlink(path.parent) if e.errno in (errno.ELOOP, errno.ENOTDIR) else None
        if link is not None:
            raise AtomicWriteError(e.errno, f"{link} is a symlink, not a directory (was it just "
                                   "replaced?); the deletion was refused") from e
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


def _first_symlink(directory: Path) -> Path | None:
    for p in reversed([directory, *directory.parents]):
        if p.is_symlink():
            return p
    return None


def _write_in_dir(path: Path, data, mode: int | None, fsync: bool, before_replace) -> None:
    try:
        dfd = _open_dir(path.parent)
    except OSError as e:
        link = _first_symlink(path.parent) if e.errno in (errno.ELOOP, errno.ENOTDIR) else None
        if link is not None:
            raise AtomicWriteError(e.errno, f"{link} is a symlink, not a directory (was it just "
                                   "replaced?); the write was refused") from e
        if e.errno == errno.ENOTDIR:
            raise AtomicWriteError(e.errno, f"a part of {path.parent} is a file, not a directory") from e
        raise AtomicWriteError(e.errno, _describe(e, path.parent)) from e
    name = path.name
    tmp_name = None
    try:
        st = None
        try:
            st = os.stat(name, dir_fd=dfd)
            keep_mode = stat.S_IMODE(st.st_mode)
            if not os.access(path, os.W_OK):
                if _read_only_fs(path.parent):
                    raise AtomicWriteError(errno.EROFS, f"{path} is on a read-only file system")
                raise AtomicWriteError(errno.EACCES, f"{path} is read-only (mode {keep_mode:o})")
        except FileNotFoundError:
            keep_mode = None
        if mode is not None:
            keep_mode = mode
        tmp_name = f".{name[:200]}.{secrets.token_hex(4)}.codebelt-tmp"
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
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace()
        os.replace(tmp_name, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        tmp_name = None
        if fsync:
            try:
                os.fsync(dfd)
            except OSError:
                pass
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
