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
  (`files/inotify.py`): on NFS, CIFS, FUSE or 9p another machine or a daemon may change an
  entry without an event, and a lookup that looks in such a directory is not kept;
- a directory that cannot be watched (the per-user watch limit, no permission) makes the lookup
  uncached, as does inotify missing altogether; after a fork the child starts afresh (the queue
  is shared with the parent: reading it would take the parent's events).

Mounts are not seen by inotify; a lookup's answer here is a path string, which a mount does not
change, and mounting needs privileges no command codebelt runs for the model has on the host.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Hashable, TypeVar

from ..files import inotify
from ..files.inotify import IN_DONT_FOLLOW, IN_Q_OVERFLOW

T = TypeVar("T")

MASK = inotify.ENTRIES | IN_DONT_FOLLOW
MAX_WATCHES = 1024  # past it, everything is forgotten and watched afresh
MAX_ANSWERS = 256


class WatchedLookups:
    """Answers of lookups, each kept while no directory it looked in has changed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watcher: inotify.Watcher | None = None
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
                except inotify.Unwatchable:
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
            if self._watcher is not None:
                self._watcher.close()
            self._watcher, self._broken = None, True
            self._answers.clear()

    # -- inside the lock ----------------------------------------------------------------------
    def _ready(self) -> bool:
        """The watcher is this process's (made now, or afresh after a fork)."""
        if self._broken:
            return False
        if self._watcher is not None and self._watcher.mine:
            return True
        self._wd_of, self._users, self._answers = {}, {}, {}
        # a forked child's copy of the descriptor shares the parent's queue: left alone, not read
        try:
            self._watcher = inotify.Watcher()
        except inotify.Unwatchable:
            self._watcher, self._broken = None, True
            return False
        return True

    def _watch(self, directory: str) -> int:
        wd = self._wd_of.get(directory)
        if wd is not None:
            return wd
        if len(self._wd_of) >= MAX_WATCHES:
            self._forget_all()
        assert self._watcher is not None
        wd = self._watcher.watch(directory, MASK)  # Unwatchable: the lookup's answer is not kept
        if wd is None:
            # gone since the lookup saw it: that change queued an event on its parent, which was
            # watched before the lookup looked at it there
            return -1
        self._wd_of[directory] = wd
        return wd

    def _read_events(self) -> None:
        assert self._watcher is not None
        for wd, mask in self._watcher.events():
            if mask & IN_Q_OVERFLOW:
                self._forget_all()  # a new watcher: what was left for the old one no longer matters
                return
            for key in self._users.pop(wd, ()):
                self._answers.pop(key, None)
            if mask & inotify.GONE:
                # the watch is gone or now names another path: looked up afresh
                for directory in [d for d, w in self._wd_of.items() if w == wd]:
                    del self._wd_of[directory]
                if not mask & inotify.IN_IGNORED:
                    self._watcher.unwatch(wd)

    def _forget_all(self) -> None:
        """Every answer and watch dropped (a lost event, too many watches): a new watcher."""
        self._answers.clear()
        self._users.clear()
        self._wd_of.clear()
        self._generation += 1
        if self._watcher is not None:
            self._watcher.close()
        self._watcher = None
        self._ready()


def _ignore(_directory: str) -> None:
    pass
