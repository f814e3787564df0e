"""inotify, for the kept views of directories (files/scan.py, sandbox/watched.py): the kernel
queues an event on a watched directory, synchronously with the change, whenever an entry in it
is created, removed, renamed or has its attributes changed, so a view refreshed from the queue is
exact — unlike a directory's mtime, which the kernel sets from a coarse clock (two changes within
one tick, a listing between them, leave it as it was).

Only directories on file systems whose changes all pass through this kernel are watched
(`LOCAL_FILESYSTEMS`): on NFS, CIFS, FUSE or 9p another machine or a daemon may change an entry
without an event. One queue serves the whole process (`Watcher`s share it: the kernel allows a
user 128 queues across all their programs); it belongs to the process that made it — a forked
child shares its parent's, and reading it would take the parent's events (`Watcher.mine`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import threading
import weakref
from collections.abc import Iterator

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK, IN_MASK_ADD = 0x01000000, 0x02000000, 0x04000000, 0x20000000
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


def libc():
    """The C library, for inotify's calls (and statfs)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        _libc.statfs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    return _libc


def parse(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(watch, mask, name) of each event in what one read of a queue returned; the name is empty
    for an event on the watched directory itself."""
    offset = 0
    while offset + _HEADER.size <= len(buf):
        wd, mask, _cookie, length = _HEADER.unpack_from(buf, offset)
        offset += _HEADER.size
        name = buf[offset:offset + length].split(b"\0", 1)[0]
        offset += length
        yield wd, mask, name


def drain(fd: int) -> Iterator[tuple[int, int, bytes]]:
    """(watch, mask, name) of every event queued on the non-blocking queue `fd`, without
    waiting; (-1, IN_Q_OVERFLOW, b"") when it cannot be read: events may have been lost."""
    while True:
        try:
            buf = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            yield -1, IN_Q_OVERFLOW, b""
            return
        if not buf:
            return
        yield from parse(buf)


def filesystem_type(path: str) -> int | None:
    """statfs's f_type for `path` (None: unknown). os.statvfs does not give it."""
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if libc().statfs(os.fsencode(path), buf) != 0:
        return None
    return ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF


def local(path: str) -> bool:
    """Whether every change to `path`'s file system makes an event here."""
    return filesystem_type(path) in LOCAL_FILESYSTEMS


_budget: int | None = None


def watch_budget() -> int:
    """How many directories one tree may watch: a quarter of the user's limit
    (`fs.inotify.max_user_watches`), which every program of the user shares (an editor's file
    watcher, another session); a bigger tree is refreshed by keys instead."""
    global _budget
    if _budget is None:
        try:
            with open("/proc/sys/fs/inotify/max_user_watches") as f:
                _budget = max(1024, int(f.read()) // 4)
        except (OSError, ValueError):
            _budget = 2048
    return _budget


class Unwatchable(OSError):
    """A directory that cannot be watched: the per-user watch limit, no permission, or a file
    system whose changes do not all pass through this kernel."""


class Queue:
    """One inotify queue (non-blocking, close-on-exec)."""

    def __init__(self) -> None:
        try:
            fd = libc().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError) as e:
            raise Unwatchable(f"inotify is not available: {e}") from None
        if fd < 0:
            err = ctypes.get_errno()
            raise Unwatchable(err, f"inotify_init1: {os.strerror(err)}")
        self.fd = fd
        self.pid = os.getpid()

    def watch(self, path: str, mask: int = ENTRIES) -> int | None:
        """The watch descriptor of directory `path` (the same one for a directory already
        watched), None when it is gone or not a directory; Unwatchable when it cannot be."""
        if not local(path):
            raise Unwatchable(f"{path}: not on a local file system")
        wd = libc().inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOENT, errno.ENOTDIR):
                return None
            raise Unwatchable(err, f"inotify_add_watch {path}: {os.strerror(err)}")
        return wd

    def unwatch(self, wd: int) -> None:
        libc().inotify_rm_watch(self.fd, wd)

    def events(self) -> Iterator[tuple[int, int]]:
        """(watch, mask) of each queued event, without waiting; (-1, IN_Q_OVERFLOW) when events
        were lost."""
        for wd, mask, _name in drain(self.fd):
            yield wd, mask

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


MAX_PENDING = 4096  # events kept for a watcher that has not read them: past it, "lost"


class _Hub:
    """The process's one queue, shared by every watcher: the kernel allows a user 128 queues
    (`fs.inotify.max_user_instances`) across all their programs. A directory two watchers watch
    is one watch (the kernel gives one descriptor per directory and queue), removed when the last
    of them lets it go; each event is handed to every watcher of its watch."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.queue = Queue()
        self.owners: dict[int, set["Watcher"]] = {}
        self.watchers: "weakref.WeakSet[Watcher]" = weakref.WeakSet()

    def read(self) -> None:
        """Hand every queued event to its watchers (under `lock`)."""
        for wd, mask in self.queue.events():
            if mask & IN_Q_OVERFLOW:
                for w in list(self.watchers):
                    w._lost = True
                continue
            for w in self.owners.get(wd, ()):
                if len(w._pending) < MAX_PENDING:
                    w._pending.append((wd, mask))
                else:
                    w._lost = True
            if mask & IN_IGNORED:
                self.owners.pop(wd, None)


_hub: _Hub | None = None
_hub_lock = threading.Lock()


def _the_hub() -> _Hub:
    global _hub
    with _hub_lock:
        if _hub is None or _hub.queue.pid != os.getpid():
            # a forked child's copy of the parent's queue is left unread (reading it would take
            # the parent's events): a queue of its own
            _hub = _Hub()
        return _hub


class Watcher:
    """One kept view's watches on the process's queue, and the events on them since it last
    asked (`events`). Unwatchable when inotify cannot be used here at all."""

    def __init__(self) -> None:
        self._hub = _the_hub()
        self.pid = os.getpid()
        self._wds: set[int] = set()
        self._pending: list[tuple[int, int]] = []
        self._lost = False
        with self._hub.lock:
            self._hub.watchers.add(self)

    @property
    def mine(self) -> bool:
        """Made in this process (a forked child's watchers watch nothing of its own)."""
        return self.pid == os.getpid()

    def watch(self, path: str, mask: int = ENTRIES) -> int | None:
        """The watch of directory `path` (None: gone, or not a directory)."""
        hub = self._hub
        with hub.lock:
            wd = hub.queue.watch(path, mask | IN_MASK_ADD)
            if wd is not None:
                hub.owners.setdefault(wd, set()).add(self)
                self._wds.add(wd)
            return wd

    def unwatch(self, wd: int) -> None:
        hub = self._hub
        with hub.lock:
            self._wds.discard(wd)
            owners = hub.owners.get(wd)
            if owners is None:
                return
            owners.discard(self)
            if not owners:
                del hub.owners[wd]
                hub.queue.unwatch(wd)

    def events(self) -> list[tuple[int, int]]:
        """(watch, mask) of each event on its watches since the last call, in order; a single
        (-1, IN_Q_OVERFLOW) when some were lost (everything may have changed)."""
        hub = self._hub
        with hub.lock:
            hub.read()
            out, self._pending = self._pending, []
            if self._lost:
                self._lost = False
                return [(-1, IN_Q_OVERFLOW)]
            return out

    def close(self) -> None:
        """Every watch of its let go (in the process that made it)."""
        if not self.mine:
            return
        for wd in list(self._wds):
            self.unwatch(wd)
        with self._hub.lock:
            self._hub.watchers.discard(self)
