"""A tracker's state kept between processes: what lets a process that lives for one call (a
`codebelt call` forked by the resident helper) begin where the previous call ended, instead of
listing and watching the whole tree again.

What is kept is exactly what a session keeps between two calls: the inotify descriptor (its
watches, and the kernel's queue of every change since the last look), the paths read from it and
not yet drained, and the tracker's entries. A process given it drains the queue first, as a
session's next call does, so a change made between calls by anyone is seen; anything that would
make the kept state differ from a fresh walk (another process's manifest, git's index now
tracking an excluded tree) makes the tracker walk afresh instead.

This module knows nothing of how the state travels: a `Keeper` (the resident helper's, see
`codebelt.cli.helper`) is installed in the process, and `Checkpoints` asks it. The wire form is
plain data for `marshal` (no code runs on reading it), the descriptor passed beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .entries import PENDING_FILE, Entry
from .journal import Detached


@dataclass
class KeptState:
    journal: Detached
    entries: dict[str, Entry]
    excluded: dict[str, list[int]]  # left-out directory → [entries in it, paths changed since the last sync]
    started_ns: int
    stamps: dict[str, str | None]  # root → the stamp of the manifest saved from these entries
    overflows: int = 0  # queue overflows met (each meant a rescan): said in the helper's log

    def size(self) -> int:
        return len(self.entries) + len(self.journal.dirs)


class Keeper(Protocol):
    def take(self, key: str) -> KeptState | None:
        """The state kept for `key`, now this process's alone (None: walk afresh)."""

    def give(self, key: str, state: KeptState | None) -> None:
        """Hand the state back after the call (None: what was taken is not usable any more)."""


_installed: list[Keeper] = []


def install(keeper: Keeper | None) -> None:
    """The keeper of this process (one process, one call: the resident helper's child)."""
    _installed[:] = [keeper] if keeper is not None else []


def current() -> Keeper | None:
    return _installed[0] if _installed else None


# -- the wire form ---------------------------------------------------------------------------------
_PENDING = 0  # a placeholder the fill has not reached (its identity matters to the tracker)


def _entry_out(e: Entry, pending: Entry) -> Any:
    if e is pending:
        return _PENDING
    return (e.kind, e.mode, e.hash, e.size, e.target, e.lost, e.key)


def _entry_in(t: Any, pending: Entry) -> Entry:
    if t == _PENDING:
        return pending
    kind, mode, hash_, size, target, lost, key = t
    return Entry(kind, mode, hash_, size, target, lost, tuple(key) if key is not None else None)


def to_wire(state: KeptState, base: dict[str, Entry] | None = None) -> dict[str, Any]:
    """`state` as plain data; with `base` (the entries it was given), only the entries that
    differ from them (an entry is replaced, never changed in place, so identity says it)."""
    if base is None:
        entries = {p: _entry_out(e, PENDING_FILE) for p, e in state.entries.items()}
        gone: list[str] = []
    else:
        entries = {p: _entry_out(e, PENDING_FILE) for p, e in state.entries.items() if base.get(p) is not e}
        gone = [p for p in base if p not in state.entries]
    j = state.journal
    return {"full": base is None, "entries": entries, "gone": gone, "excluded": state.excluded,
            "dirs": j.dirs, "pending": j.pending, "overflow": j.overflow, "started_ns": state.started_ns,
            "overflows": state.overflows, "stamps": state.stamps}


def from_wire(wire: dict[str, Any], fd: int, into: KeptState | None = None) -> KeptState:
    """The state `wire` describes, around the descriptor `fd`; a partial one (`full` false)
    applied to `into`, the state it was taken from (whose entries it updates in place)."""
    if wire["full"]:
        entries: dict[str, Entry] = {}
    else:
        if into is None:
            raise ValueError("a partial state needs the state it was taken from")
        entries = into.entries
        for p in wire["gone"]:
            entries.pop(p, None)
    for p, t in wire["entries"].items():
        entries[str(p)] = _entry_in(t, PENDING_FILE)
    journal = Detached(fd, {int(wd): str(d) for wd, d in wire["dirs"].items()}, {str(p) for p in wire["pending"]},
                       bool(wire["overflow"]))
    excluded = {str(p): [int(c[0]), int(c[1])] for p, c in wire["excluded"].items()}
    stamps = {str(r): (str(t) if t is not None else None) for r, t in wire["stamps"].items()}
    return KeptState(journal, entries, excluded, int(wire["started_ns"]), stamps, int(wire["overflows"]))
