"""Atomic file replacement: temp file in the same directory, fsync, rename.

A crash or kill at any moment leaves either the old file or the new one, never a torn one.
The mode of an existing file is kept; a new file gets the umask's default.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


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


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, fsync: bool = True) -> None:
    """Replace `path` with `data` atomically, creating parent directories.

    Raises AtomicWriteError (the file is left as it was) on any failure.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise AtomicWriteError(e.errno, _describe(e, path.parent)) from e
    try:
        st = path.stat()
        keep_mode = stat.S_IMODE(st.st_mode)
        if not os.access(path, os.W_OK):
            if _read_only_fs(path.parent):
                raise AtomicWriteError(errno.EROFS, f"{path} is on a read-only file system")
            raise AtomicWriteError(errno.EACCES, f"{path} is read-only (mode {keep_mode:o})")
    except FileNotFoundError:
        keep_mode = None
    if mode is not None:
        keep_mode = mode
    tmp_name = None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".codebelt-tmp", dir=path.parent)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if keep_mode is not None:
                os.fchmod(fd, keep_mode)
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, 0o666 & ~umask)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp_name, path)
        tmp_name = None
        if fsync:
            _fsync_dir(path.parent)
    except AtomicWriteError:
        raise
    except OSError as e:
        raise AtomicWriteError(e.errno, _describe(e, path)) from e
    finally:
        if tmp_name is not None:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _read_only_fs(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False
