"""Which paths changed, from the kernel: inotify on every directory of the tracked trees.

A change made by anyone (a sandboxed command, an unsandboxed one, the person's editor) queues an
event on the directory holding the path, synchronously with the change: once a command has
exited, every change it made is in the queue, and reading the queue costs time in proportion to
what changed, not to the size of the tree. A thread reads the queue while commands run, so a
command that writes a hundred thousand files does not overflow the kernel's queue (16,384
events by default); if it overflows anyway, `drain` says so and the caller rescans.

inotify watches directories, not trees: each new directory is watched as it appears (the caller
lists it after adding the watch, so nothing created in between is missed). The per-user watch
limit (`fs.inotify.max_user_watches`) bounds how many directories can be watched; past it `add`
returns False and the caller falls back to scanning.
"""

from __future__ import annotations

import ctypes
import errno
import os
import select
import threading
from dataclasses import dataclass

from ..files.inotify import (
    IN_ATTRIB, IN_CLOSE_WRITE, IN_CREATE, IN_DELETE, IN_DELETE_SELF, IN_DONT_FOLLOW, IN_EXCL_UNLINK, IN_IGNORED,
    IN_MODIFY, IN_MOVE_SELF, IN_MOVED_FROM, IN_MOVED_TO, IN_ONLYDIR, IN_Q_OVERFLOW, drain, libc,
)

IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)


@dataclass
class Detached:
    """An inotify instance taken out of a journal, to be given to another (in this process or,
    the descriptor passed along, in another): its descriptor, its watches (watch descriptor →
    directory) and the paths read from it that no drain has returned yet."""

    fd: int
    dirs: dict[int, str]
    pending: set[str]
    overflow: bool


def available() -> tuple[bool, str]:
    try:
        fd = libc().inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    except (OSError, AttributeError) as e:
        return False, f"inotify is not available: {e}"
    if fd < 0:
        return False, f"inotify_init1 failed: {os.strerror(ctypes.get_errno())}"
    os.close(fd)
    return True, "inotify"


class Journal:
    def __init__(self, kept: "Detached | None" = None) -> None:
        """A new inotify instance, or (`kept`) one detached from an earlier journal, with its
        watches and whatever that journal had read and not yet drained."""
        if kept is None:
            fd = libc().inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd < 0:
                err = ctypes.get_errno()
                raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        else:
            fd = kept.fd
        self.fd = fd
        self._lock = threading.Lock()
        self._dirs: dict[int, str] = dict(kept.dirs) if kept else {}  # watch descriptor → directory path
        self._wds: dict[str, int] = {d: wd for wd, d in self._dirs.items()}
        self._pending: set[str] = set(kept.pending) if kept else set()
        self._overflow = kept.overflow if kept else False
        self._stop = False
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)  # close() wakes the reader at once
        self._thread = threading.Thread(target=self._read_loop, name="codebelt-journal", daemon=True)
        self._thread.start()

    @property
    def watched(self) -> int:
        return len(self._wds)

    def add(self, directory: str) -> bool:
        """Watch `directory`. False when the watch limit is reached (the caller must scan)."""
        wd = libc().inotify_add_watch(self.fd, os.fsencode(directory), MASK)
        if wd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOSPC, errno.ENOMEM):
                return False
            return True  # gone or not a directory any more: its parent's event says so
        with self._lock:
            old = self._dirs.get(wd)
            if old is not None and old != directory:  # the same directory, moved: one watch
                self._wds.pop(old, None)
            self._dirs[wd] = directory
            self._wds[directory] = wd
        return True

    def watches(self, directory: str) -> bool:
        with self._lock:
            return directory in self._wds

    def remove(self, directory: str) -> None:
        with self._lock:
            wd = self._wds.pop(directory, None)
            if wd is None or self._dirs.get(wd) != directory:
                return
            del self._dirs[wd]
        libc().inotify_rm_watch(self.fd, wd)

    def drain(self) -> tuple[set[str], bool]:
        """Paths changed since the last drain, and whether events were lost (rescan)."""
        with self._lock:
            self._read_available()
            paths, overflow = self._pending, self._overflow
            self._pending, self._overflow = set(), False
        return paths, overflow

    def peek(self) -> set[str] | None:
        """The paths changed since the last drain, leaving them for it (None: events were lost,
        so any path may have changed)."""
        with self._lock:
            self._read_available()
            return None if self._overflow else set(self._pending)

    def _read_loop(self) -> None:
        while not self._stop:
            try:
                ready, _, _ = select.select([self.fd, self._wake_r], [], [])
            except (OSError, ValueError):
                return
            if self.fd in ready and not self._stop:
                with self._lock:
                    self._read_available()

    def _read_available(self) -> None:
        for wd, mask, name in drain(self.fd):
            if mask & IN_Q_OVERFLOW:
                self._overflow = True
                continue
            directory = self._dirs.get(wd)
            if directory is None:
                continue
            if mask & IN_IGNORED:
                del self._dirs[wd]
                if self._wds.get(directory) == wd:
                    del self._wds[directory]
                continue
            if name:
                self._pending.add(directory + "/" + os.fsdecode(name))
            else:  # the watched directory itself (deleted, moved, its mode changed)
                self._pending.add(directory)

    def detach(self) -> "Detached":
        """Stop reading and hand over the descriptor, its watches and what was read but not
        drained: events after this stay in the kernel's queue for whoever holds it next. The
        caller owns the descriptor from here (this journal closes only its own pipe)."""
        self._stop_reader()
        with self._lock:
            kept = Detached(self.fd, dict(self._dirs), set(self._pending), self._overflow)
            self._pending, self._overflow = set(), False
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        return kept

    def _stop_reader(self) -> None:
        self._stop = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        self._thread.join(timeout=2)

    def close(self) -> None:
        self._stop_reader()
        # Closing an inotify descriptor waits for the kernel to retire its watches (~10–20 ms):
        # not on the caller's time.
        threading.Thread(target=self._close_fds, name="codebelt-journal-close", daemon=True).start()

    def _close_fds(self) -> None:
        with self._lock:
            for fd in (self.fd, self._wake_r, self._wake_w):
                try:
                    os.close(fd)
                except OSError:
                    pass
