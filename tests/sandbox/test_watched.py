"""Lookups kept until a directory they looked in changes (watched.py), for the lookups every
jailed command starts with: the PATH directories the jail shows (jail.path_dirs) and the
user's credential files it masks (credentials.credential_paths). A kept answer must be the
answer a fresh lookup gives, after any change to the file system: checked after each step of
scripted changes (links replaced and retargeted, directories renamed, exchanged and removed,
files created through a linked directory) and of random sequences of them."""

from __future__ import annotations

import ctypes
import os
import random
import shutil
from pathlib import Path

import pytest

from codebelt.files import inotify
from codebelt.sandbox.credentials import credential_paths
from codebelt.sandbox.jail import path_dirs
from codebelt.sandbox.watched import WatchedLookups

from ..files.test_inotify import lose_events

AT_FDCWD, RENAME_EXCHANGE = -100, 2


def _exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


def _relink(at: Path, to: "Path | str") -> None:
    tmp = at.with_name(at.name + ".new")
    os.symlink(to, tmp)
    os.replace(tmp, at)


@pytest.fixture
def tree(tmp_path):
    """root/{a,b}/bin, a home, a workspace, a directory on no PATH entry's way; PATH through
    links into them."""
    root = tmp_path / "root"
    for d in ("a/bin", "b/bin", "home", "ws/.venv/bin", "stash"):
        (root / d).mkdir(parents=True)
    (root / "link").symlink_to(root / "a")
    return root


def random_change(rng: random.Random, a: Path, b: Path, outside: "Path | None" = None) -> None:
    """One change at `a`, `b` the other name it may involve: a directory or file made, a link
    to `b` (absolute or relative; or to `outside`) made or put in `a`'s place, a rename or an
    exchange with `b`, a removal. What the file system refuses is skipped."""
    try:
        op = rng.randrange(7)
        target = outside if outside is not None and rng.random() < 0.3 else (
            b if rng.random() < 0.5 else os.path.relpath(b, a.parent))
        if op == 0:
            a.mkdir()
        elif op == 1:
            a.symlink_to(target)
        elif op == 2:
            os.rename(a, b)
        elif op == 3:
            _exchange(a, b)
        elif op == 4:
            shutil.rmtree(a) if a.is_dir() and not a.is_symlink() else a.unlink()
        elif op == 5:
            a.write_text("")
        else:
            _relink(a, target)
    except OSError:
        pass


def _path(root: Path) -> str:
    return ":".join(str(root / e) for e in ("link/bin", "a/bin", "b/bin", "c/bin", "deep/x/bin", "b/bin/../bin",
                                            "ws/.venv/bin", "home/bin"))


def _fresh_and_kept(cache: WatchedLookups, root: Path) -> tuple[list[Path], list[Path]]:
    path, home, untrusted = _path(root), str(root / "home"), (str(root / "ws"),)
    fresh = path_dirs(path, home, untrusted)
    kept = cache.get(("path", path, home, untrusted), lambda consult: path_dirs(path, home, untrusted, consult))
    return fresh, kept


# one scripted change each: (name, change); the answers are compared after each
STEPS = [
    ("a missing entry created", lambda r: (r / "c" / "bin").mkdir(parents=True)),
    ("a link retargeted", lambda r: _relink(r / "link", r / "b")),
    ("the link moved into a directory no lookup looks in", lambda r: os.rename(r / "link", r / "stash" / "link")),
    ("and back", lambda r: os.rename(r / "stash" / "link", r / "link")),
    ("an entry removed", lambda r: (r / "b" / "bin").rmdir()),
    ("an entry made again", lambda r: (r / "b" / "bin").mkdir()),
    ("a parent renamed away", lambda r: os.rename(r / "a", r / "a-old")),
    ("a parent renamed back", lambda r: os.rename(r / "a-old", r / "a")),
    ("two parents exchanged", lambda r: _exchange(r / "a", r / "b")),
    # into and out of a directory no lookup looks in: one side of the move only is seen
    ("a parent moved into an unwatched directory", lambda r: os.rename(r / "a", r / "stash" / "a")),
    ("and back", lambda r: os.rename(r / "stash" / "a", r / "a")),
    ("a deep entry through a new link", lambda r: ((r / "elsewhere" / "x" / "bin").mkdir(parents=True),
                                                   (r / "deep").symlink_to(r / "elsewhere"))),
    ("the new link's target's child removed", lambda r: shutil.rmtree(r / "elsewhere" / "x")),
    ("a link to the home's parent", lambda r: _relink(r / "link", r)),
    ("a link into the workspace", lambda r: _relink(r / "link", r / "ws")),
    ("the home made a link", lambda r: (os.rename(r / "home", r / "home-real"), (r / "home").symlink_to(r / "a"))),
    ("an entry made a file", lambda r: (shutil.rmtree(r / "c"), (r / "c").mkdir(), (r / "c" / "bin").write_text(""))),
]


def test_kept_path_directories_follow_each_change(tree):
    cache = WatchedLookups()
    try:
        fresh, kept = _fresh_and_kept(cache, tree)
        assert kept == fresh
        for name, change in STEPS:
            change(tree)
            fresh, kept = _fresh_and_kept(cache, tree)
            assert kept == fresh, name
    finally:
        cache.close()


def test_an_answer_is_kept_while_no_directory_it_consulted_changes(tmp_path):
    """(A lookup consulting only directories of the test's own: /tmp, above them, changes all
    the time on a shared machine.)"""
    (tmp_path / "seen" / "deep").mkdir(parents=True)
    (tmp_path / "seen" / "deep" / "f").write_text("")
    (tmp_path / "unseen").mkdir()
    cache = WatchedLookups()

    def lookup(consult):
        consult(str(tmp_path / "seen"))
        consult(str(tmp_path / "seen" / "deep"))
        return sorted(os.listdir(tmp_path / "seen" / "deep"))

    try:
        for _ in range(5):
            assert cache.get("k", lookup) == ["f"]
        (tmp_path / "unseen" / "f").write_text("")
        (tmp_path / "seen" / "deep" / "f").write_text("changed in place, no entry made or removed")
        assert cache.get("k", lookup) == ["f"] and cache.misses == 1
        (tmp_path / "seen" / "deep" / "g").write_text("")
        assert cache.get("k", lookup) == ["f", "g"] and cache.misses == 2
        (tmp_path / "seen" / "x").mkdir()
        assert cache.get("k", lookup) == ["f", "g"] and cache.misses == 3
    finally:
        cache.close()


def test_kept_path_directories_follow_random_changes(tmp_path):
    """Random renames, exchanges, removals, links and directories among a few names, each a
    PATH entry's component: after every change the kept answer is the fresh one."""
    rng = random.Random(20261126)
    root = tmp_path / "r"
    names = ["p", "q", "s", "t"]
    root.mkdir()
    cache = WatchedLookups()
    entries = [f"{root}/{x}/{y}" for x in names for y in names] + [f"{root}/{x}/../{y}/{x}" for x in names for y in names[:2]]
    path = ":".join(entries)

    def pick() -> Path:
        return root.joinpath(*rng.sample(names, rng.randint(1, 2)))

    try:
        for step in range(300):
            a, b = pick(), pick()
            random_change(rng, a, b)
            fresh = path_dirs(path, None, ())
            kept = cache.get(("p", path), lambda consult: path_dirs(path, None, (), consult))
            assert kept == fresh, f"step {step}"
    finally:
        cache.close()


def _creds(cache: WatchedLookups) -> tuple[list[Path], list[Path]]:
    return credential_paths(), cache.get(("c",), credential_paths)


CREDENTIAL_STEPS = [
    ("a token file created", lambda h, o: (h / ".netrc").write_text("machine x password y\n")),
    ("a credential directory created", lambda h, o: (h / ".docker").mkdir()),
    ("a file in it", lambda h, o: (h / ".docker" / "config.json").write_text("{}")),
    ("a linked directory", lambda h, o: (h / ".aws").symlink_to(o)),
    ("a file made in the link's target", lambda h, o: (o / "credentials").write_text("[default]\n")),
    ("the XDG directory's git credentials", lambda h, o: ((h / ".config" / "git").mkdir(parents=True),
                                                          (h / ".config" / "git" / "credentials").write_text(""))),
    ("the link's target renamed", lambda h, o: os.rename(o, o.with_name("gone"))),
    ("a file removed", lambda h, o: (h / ".netrc").unlink()),
    ("the home's directory removed and made again", lambda h, o: (shutil.rmtree(h), h.mkdir(),
                                                                  (h / ".pgpass").write_text(""))),
]


def test_kept_credential_files_follow_each_change(tmp_path, monkeypatch):
    home, other = tmp_path / "home", tmp_path / "other"
    home.mkdir()
    other.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    cache = WatchedLookups()
    try:
        fresh, kept = _creds(cache)
        assert kept == fresh == []
        for name, change in CREDENTIAL_STEPS:
            change(home, other)
            fresh, kept = _creds(cache)
            assert kept == fresh, name
        assert fresh == [home / ".pgpass"]  # the steps did change the answer
    finally:
        cache.close()


def test_a_lookup_through_an_unwatchable_file_system_is_not_kept(tree, monkeypatch):
    """A directory on a file system another machine or a daemon can change without an event
    (NFS, FUSE…): its answers are looked up afresh each time."""
    monkeypatch.setattr(inotify, "filesystem_type", lambda path: 0x6969)  # NFS
    cache = WatchedLookups()
    try:
        for _ in range(3):
            fresh, kept = _fresh_and_kept(cache, tree)
            assert kept == fresh
        assert cache.misses == 3
    finally:
        cache.close()


def test_lost_events_forget_every_answer(tmp_path):
    """The kernel's queue overflowed: any directory may have changed."""
    cache = WatchedLookups()

    def lookup(consult):
        consult(str(tmp_path))
        return os.listdir(tmp_path)

    try:
        cache.get("k", lookup)
        cache.get("k", lookup)
        assert cache.misses == 1
        lose_events()
        cache.get("k", lookup)
        assert cache.misses == 2
    finally:
        cache.close()


def test_a_forked_child_does_not_read_its_parents_queue(tree):
    """After a fork the child looks up afresh on a queue of its own; the parent's events stay
    the parent's: a change made while the child ran still reaches the parent's next call."""
    cache = WatchedLookups()
    try:
        _fresh_and_kept(cache, tree)
        pid = os.fork()
        if pid == 0:
            try:
                (tree / "c" / "bin").mkdir(parents=True)
                fresh, kept = _fresh_and_kept(cache, tree)
                os._exit(0 if kept == fresh and cache.misses == 2 else 1)
            finally:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        fresh, kept = _fresh_and_kept(cache, tree)
        assert kept == fresh and Path(tree / "c" / "bin") in fresh
    finally:
        cache.close()
