"""Lookups in the file system kept until the kernel says a directory they looked in changed.

Why: as every jailed command starts, codebelt resolves each PATH directory a component at a
time and looks for the user's credential files (~0.3 ms of Python and some fifty system calls),
and the answer is almost always the one of the last command. Keeping it needs an exact reason to
believe it, not a time: inotify queues an event on a directory, synchronously with the change,
whenever an entry in it is created, removed, renamed or has its attributes changed. A lookup that
resolves a path looks at one entry in each directory on the way (the link targets' included), so
if none of those directories has an event queued, every entry it looked at is as it was, and so
is its answer.

How a lookup stays exact:
- it names each directory before it looks in it (`consult`), and the watch is added then: a
  change made before the watch is in what the lookup sees, one made after queues an event;
- each call first reads the queue (one non-blocking read) and forgets every answer that looked in
  a directory with an event; a lost event (the queue overflowed) forgets all;
- only directories on file systems whose changes all pass through this kernel are watched
  (`LOCAL_FILESYSTEMS`): on NFS, CIFS, FUSE or 9p another machine or a daemon may change an
  entry without an event, and a lookup that looks in such a directory is not kept;
- a directory that cannot be watched (the per-user watch limit, no permission) makes the lookup
  uncached, as does inotify missing altogether; after a fork the child starts afresh (the queue
  is shared with the parent: reading it would take the parent's events).

Mounts are not seen by inotify; a lookup's answer here is a path string, which a mount does not
change, and mounting needs privileges no command codebelt runs for the model has on the host.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import threading
from typing import Any, Callable, Hashable, TypeVar

T = TypeVar("T")

IN_ATTRIB, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x4, 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW = 0x01000000, 0x02000000
# what changes which entries a directory holds, or whether they may be looked up (a mode)
MASK = (IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
        | IN_ONLYDIR | IN_DONT_FOLLOW)
_HEADER = struct.Struct("iIII")
MAX_WATCHES = 1024  # past it, everything is forgotten and watched afresh
MAX_ANSWERS = 256

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


class _Unwatchable(Exception):
    """A directory the lookup looked in cannot be watched: its answer is not kept."""


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


class WatchedLookups:
    """Answers of lookups, each kept while no directory it looked in has changed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = -1
        self._fd = -1
        self._broken = False  # inotify does not work here: nothing is kept
        self._wd_of: dict[str, int] = {}  # directory -> watch
        self._users: dict[int, set[Hashable]] = {}  # watch -> keys of the answers that looked in it
        self._answers: dict[Hashable, Any] = {}
        self._generation = 0  # bumped when everything is forgotten: a lookup's watches are then stale
        self.misses = 0  # lookups run (a test's and a benchmark's view)

    def get(self, key: Hashable, lookup: Callable[[Callable[[str], None]], T]) -> T:
        """The answer of `lookup(consult)` for `key`: kept from an earlier call while nothing it
        consulted changed, else run now. `lookup` calls `consult(directory)` with each directory
        (a real path: no link in it) before it looks at an entry in it."""
        with self._lock:
            if self._ready():
                self._read_events()
                if key in self._answers:
                    return self._answers[key]
            self.misses += 1
            if self._broken:
                return lookup(_ignore)
            consulted: list[int] = []
            unwatched: list[str] = []
            generation = self._generation

            def consult(directory: str) -> None:
                if unwatched:
                    return  # not kept anyway
                try:
                    wd = self._watch(directory)
                except _Unwatchable:
                    unwatched.append(directory)
                    return
                if wd >= 0:
                    consulted.append(wd)

            answer = lookup(consult)
            if unwatched or generation != self._generation:
                # a directory it looked in cannot be watched, or its first watches were dropped
                # while it ran: answered, not kept
                return answer
            if len(self._answers) >= MAX_ANSWERS:  # the answers only: the watches stay valid
                self._answers.clear()
                self._users.clear()
            self._answers[key] = answer
            for wd in consulted:
                self._users.setdefault(wd, set()).add(key)
            return answer

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0 and self._pid == os.getpid():
                os.close(self._fd)
            self._fd, self._broken = -1, True
            self._answers.clear()

    # -- inside the lock ----------------------------------------------------------------------
    def _ready(self) -> bool:
        """The queue is this process's (made now, or afresh after a fork)."""
        if self._broken:
            return False
        if self._pid == os.getpid():
            return True
        self._pid = os.getpid()
        self._wd_of, self._users, self._answers = {}, {}, {}
        # a forked child's copy of the descriptor shares the parent's queue: left alone, not read
        try:
            fd = _lib().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            fd = -1
        if fd < 0:
            self._broken = True
            return False
        self._fd = fd
        return True

    def _watch(self, directory: str) -> int:
        wd = self._wd_of.get(directory)
        if wd is not None:
            return wd
        if len(self._wd_of) >= MAX_WATCHES:
            self._forget_all()
        if filesystem_type(directory) not in LOCAL_FILESYSTEMS:
            raise _Unwatchable(directory)
        wd = _lib().inotify_add_watch(self._fd, os.fsencode(directory), MASK)
        if wd < 0:
            if ctypes.get_errno() in (errno.ENOENT, errno.ENOTDIR):
                # gone since the lookup saw it: that change queued an event on its parent, which
                # was watched before the lookup looked at it there
                return -1
            raise _Unwatchable(directory)
        self._wd_of[directory] = wd
        return wd

    def _read_events(self) -> None:
        while True:
            try:
                buf = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                self._forget_all()
                return
            offset = 0
            while offset + _HEADER.size <= len(buf):
                wd, mask, _cookie, length = _HEADER.unpack_from(buf, offset)
                offset += _HEADER.size + length
                if mask & IN_Q_OVERFLOW:
                    self._forget_all()
                    continue
                for key in self._users.pop(wd, ()):
                    self._answers.pop(key, None)
                if mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT):
                    # the watch is gone or now names another path: looked up afresh
                    for directory in [d for d, w in self._wd_of.items() if w == wd]:
                        del self._wd_of[directory]
                    if not mask & IN_IGNORED:
                        _lib().inotify_rm_watch(self._fd, wd)

    def _forget_all(self) -> None:
        """Every answer and watch dropped (a lost event, too many watches): a new queue."""
        self._answers.clear()
        self._users.clear()
        self._wd_of.clear()
        self._generation += 1
        if self._fd >= 0 and self._pid == os.getpid():
            os.close(self._fd)
        self._pid, self._fd = -1, -1
        self._ready()


def _ignore(_directory: str) -> None:
    pass
