"""The process's one inotify queue (files/inotify.py), shared by every kept view: each watcher
gets the events of its own watches, a directory two watch is one watch let go by the last, a
lost event reaches every watcher, and a forked child never reads its parent's queue."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from codebelt.files import inotify
from codebelt.files.inotify import IN_Q_OVERFLOW, Watcher


def lose_events() -> None:
    """As when the kernel's queue overflows: its next read says events were lost."""
    hub = inotify._the_hub()
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    os.write(w, struct.pack("iIII", -1, IN_Q_OVERFLOW, 0, 0))
    with hub.lock:
        real, hub.queue.fd = hub.queue.fd, r
        try:
            hub.read()
        finally:
            hub.queue.fd = real
    os.close(r)
    os.close(w)


def test_each_watcher_gets_the_events_of_its_watches(tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    one, two = Watcher(), Watcher()
    try:
        wa, wb = one.watch(str(a)), two.watch(str(b))
        (a / "f").write_text("")
        (b / "g").write_text("")
        assert [wd for wd, _ in one.events()] == [wa] and [wd for wd, _ in two.events()] == [wb]
        assert one.events() == [] and two.events() == []
    finally:
        one.close()
        two.close()


def test_a_directory_two_watch_is_let_go_by_the_last(tmp_path: Path):
    one, two = Watcher(), Watcher()
    try:
        w1, w2 = one.watch(str(tmp_path)), two.watch(str(tmp_path))
        assert w1 == w2  # one watch
        one.unwatch(w1)
        (tmp_path / "f").write_text("")
        assert one.events() == [] and [wd for wd, _ in two.events()] == [w2]  # still watched for two
        two.unwatch(w2)
        (tmp_path / "g").write_text("")
        assert two.events() in ([], [(w2, inotify.IN_IGNORED)])  # gone from the kernel too
        assert w2 not in inotify._the_hub().owners
    finally:
        one.close()
        two.close()


def test_a_lost_event_reaches_every_watcher(tmp_path: Path):
    one, two = Watcher(), Watcher()
    try:
        one.watch(str(tmp_path))
        (tmp_path / "f").write_text("")
        lose_events()
        assert one.events() == [(-1, IN_Q_OVERFLOW)] and two.events() == [(-1, IN_Q_OVERFLOW)]
        assert one.events() == []
    finally:
        one.close()
        two.close()


def test_a_forked_child_has_a_queue_of_its_own(tmp_path: Path):
    parent = Watcher()
    try:
        wd = parent.watch(str(tmp_path))
        pid = os.fork()
        if pid == 0:
            try:
                child = Watcher()
                ok = not parent.mine and child.mine and inotify._the_hub().queue.pid == os.getpid()
                (tmp_path / "from-child").write_text("")
                os._exit(0 if ok and child.events() == [] else 1)
            finally:
                os._exit(2)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        assert [w for w, _ in parent.events()] == [wd]  # the child's change, in the parent's queue still
    finally:
        parent.close()


def test_one_queue_for_many_watchers(tmp_path: Path):
    """The kernel allows a user 128 queues across all their programs: a process with many
    kept views holds one."""
    before = _queues_held()
    watchers = [Watcher() for _ in range(200)]
    try:
        for w in watchers:
            w.watch(str(tmp_path))
        assert _queues_held() <= max(before, 1)
    finally:
        for w in watchers:
            w.close()


def _queues_held() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
        except OSError:
            pass
    return n
