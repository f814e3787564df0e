"""inotify, for the kept views of directories (files/scan.py, sandbox/watched.py): the kernel
queues an event on a watched directory, synchronously with the change, whenever an entry in it
is created, removed, renamed or has its attributes changed, so a view refreshed from the queue is
exact — unlike a directory's mtime, which the kernel sets from a coarse clock (two changes within
one tick, a listing between them, leave it as it was).

Only directories on file systems whose changes all pass through this kernel are watched
(`LOCAL_FILESYSTEMS`): on NFS, CIFS, FUSE or 9p another machine or a daemon may change an entry
without an event. A queue belongs to the process that made it: a forked child shares its
parent's, and reading it would take the parent's events (`Queue.mine`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
from collections.abc import Iterator

IN_ATTRIB, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x4, 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW = 0x01000000, 0x02000000
# what changes which entries a directory holds, or whether they may be looked up (a mode)
ENTRIES = (IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
           | IN_ONLYDIR)
GONE = IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT  # the watch no longer names its path
_HEADER = struct.Struct("iIII")

# statfs f_type of file systems changed only through this kernel (local disks and memory)
LOCAL_FILESYSTEMS = frozenset({
    0xEF53,  # ext2/3/4
    0x58465342,  # xfs
    0x9123683E,  # btrfs
    0x01021994,  # tmpfs
    0x858458F6,  # ramfs
    0x794C7630,  # overlayfs
    0xF2F52010,  # f2fs
    0x2FC12FC1,  # zfs
    0x73717368,  # squashfs (read-only)
    0x9660,  # iso9660 (read-only)
    0x3153464A,  # jfs
    0x52654973,  # reiserfs
})

_libc = None


def _lib():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        _libc.statfs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    return _libc


def filesystem_type(path: str) -> int | None:
    """statfs's f_type for `path` (None: unknown). os.statvfs does not give it."""
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if _lib().statfs(os.fsencode(path), buf) != 0:
        return None
    return ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF


def local(path: str) -> bool:
    """Whether every change to `path`'s file system makes an event here."""
    return filesystem_type(path) in LOCAL_FILESYSTEMS


class Unwatchable(OSError):
    """A directory that cannot be watched: the per-user watch limit, no permission, or a file
    system whose changes do not all pass through this kernel."""


class Queue:
    """One inotify queue (non-blocking, close-on-exec)."""

    def __init__(self) -> None:
        try:
            fd = _lib().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError) as e:
            raise Unwatchable(f"inotify is not available: {e}") from None
        if fd < 0:
            err = ctypes.get_errno()
            raise Unwatchable(err, f"inotify_init1: {os.strerror(err)}")
        self.fd = fd
        self.pid = os.getpid()

    @property
    def mine(self) -> bool:
        """Made by this process (not inherited across a fork)."""
        return self.pid == os.getpid()

    def watch(self, path: str, mask: int = ENTRIES) -> int | None:
        """The watch descriptor of directory `path` (the same one for a directory already
        watched), None when it is gone or not a directory; Unwatchable when it cannot be."""
        if not local(path):
            raise Unwatchable(f"{path}: not on a local file system")
        wd = _lib().inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOENT, errno.ENOTDIR):
                return None
            raise Unwatchable(err, f"inotify_add_watch {path}: {os.strerror(err)}")
        return wd

    def unwatch(self, wd: int) -> None:
        _lib().inotify_rm_watch(self.fd, wd)

    def events(self) -> Iterator[tuple[int, int]]:
        """(watch, mask) of each queued event, without waiting; (-1, IN_Q_OVERFLOW) when events
        were lost."""
        while True:
            try:
                buf = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                yield -1, IN_Q_OVERFLOW
                return
            offset = 0
            while offset + _HEADER.size <= len(buf):
                wd, mask, _cookie, length = _HEADER.unpack_from(buf, offset)
                offset += _HEADER.size + length
                yield wd, mask

    def close(self) -> None:
        """Close this process's descriptor (a forked child's copy too: the parent's stays open)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
