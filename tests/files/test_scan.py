"""The shared walk: whole tree, refreshed by directory keys (mtime and ctime), never through a
symlink, and bounded in time with an incomplete snapshot that says so."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codebelt.files import scan as scan_mod
from codebelt.files.scan import DIR, FILE, LINK, PerDirectory, TreeScan


def names(snap) -> set[str]:
    return {f"{rel}/{n}" if rel else n for rel, d in snap.dirs.items() for n in d.names}


def test_lists_every_entry_with_its_kind(tmp_path: Path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    (tmp_path / "l").symlink_to(tmp_path / "a")
    snap = TreeScan(tmp_path).snapshot()
    assert snap.complete and names(snap) == {"a", "a/b", "a/b/f", "l"}
    kinds = {n: k for n, k in zip(snap.dirs[""].names, snap.dirs[""].kinds)}
    assert kinds == {"a": DIR, "l": LINK}
    assert snap.dirs["a/b"].kinds == FILE
    assert list(snap.dirs["a/b"].inos) == [os.stat(tmp_path / "a" / "b" / "f").st_ino]


def test_unchanged_directories_are_not_listed_again(tmp_path: Path):
    for i in range(3):
        (tmp_path / f"d{i}").mkdir()
    scan = TreeScan(tmp_path)
    first = scan.snapshot()
    (tmp_path / "d1" / "new").write_text("x")
    second = scan.snapshot()
    assert second.dirs["d0"] is first.dirs["d0"] and second.dirs["d2"] is first.dirs["d2"]
    assert second.dirs["d1"] is not first.dirs["d1"] and "new" in second.dirs["d1"].names


def test_a_new_link_is_seen_even_when_the_mtime_is_put_back(tmp_path: Path):
    """`ln .env x; touch -d <old> .` restores the directory's mtime, not its ctime."""
    (tmp_path / ".env").write_text("SECRET")
    scan = TreeScan(tmp_path)
    scan.snapshot()
    st = os.stat(tmp_path)
    os.link(tmp_path / ".env", tmp_path / "x")
    os.utime(tmp_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(tmp_path).st_mtime_ns == st.st_mtime_ns
    assert "x" in scan.snapshot().dirs[""].names


def test_a_directory_swapped_for_a_symlink_is_not_listed_through_it(tmp_path: Path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret").write_text("x")
    scan = TreeScan(root)
    assert "d" in scan.snapshot().dirs
    (root / "d").rmdir()
    (root / "d").symlink_to(outside)
    snap = scan.snapshot()
    assert "d" not in snap.dirs and "secret" not in names(snap)


def test_a_walk_out_of_time_is_incomplete_and_resumes(tmp_path: Path, monkeypatch):
    for i in range(30):
        (tmp_path / f"d{i}").mkdir()
    clock = iter(range(10**6))
    monkeypatch.setattr(scan_mod.time, "monotonic", lambda: next(clock) * 0.001)  # 1 ms per look
    scan = TreeScan(tmp_path, budget_s=0.010)
    snap = scan.snapshot()
    assert not snap.complete and "longer than" in snap.reason
    for _ in range(20):
        snap = scan.snapshot()
        if snap.complete:
            break
    assert snap.complete and len(snap.dirs) == 31


# -- refreshed from inotify: the view after any change is the one a fresh walk sees ------------
import ctypes  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402

from codebelt.files import inotify  # noqa: E402

from .test_inotify import lose_events  # noqa: E402


def view(snap) -> dict[str, list[tuple[str, str, int]]]:
    return {rel: sorted(zip(d.names, d.kinds, d.inos)) for rel, d in snap.dirs.items()}


def _exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:  # RENAME_EXCHANGE
        raise OSError(ctypes.get_errno(), "renameat2")


def _random_change(rng: random.Random, root: Path, outside: Path) -> None:
    names = ["a", "b", "c", ".git", ".env"]

    def pick(base: Path = root) -> Path:
        return base.joinpath(*rng.sample(names, rng.randint(1, 3)))

    a, b = pick(), pick()
    op = rng.randrange(10)
    try:
        if op == 0:
            a.mkdir()
        elif op == 1:
            a.write_text("x")
        elif op == 2:
            os.rename(a, b)  # within the tree, a subtree with it
        elif op == 3:
            _exchange(a, b)
        elif op == 4:
            shutil.rmtree(a) if a.is_dir() and not a.is_symlink() else a.unlink()
        elif op == 5:
            a.symlink_to(b)
        elif op == 6:  # out of the tree and back in, elsewhere
            os.rename(a, outside / "away")
            os.rename(outside / "away", b)
        elif op == 7:  # a directory replaced by one of the same name
            shutil.rmtree(a)
            a.mkdir()
            (a / "new").write_text("")
        elif op == 8:
            os.link(a, b)
        else:
            (a / "f").write_text("")
    except OSError:
        pass


def test_a_watched_view_is_the_fresh_walk_after_every_change(tmp_path: Path):
    """Random creations, removals, renames within, out of and into the tree, exchanges, links and
    replacements, several between refreshes at times: after each refresh the kept view is the
    view of a walk made from nothing."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    rng = random.Random(20261126)
    scan = TreeScan(root)
    scan.snapshot()
    assert scan._watching  # refreshed from events, not by keys
    # a value per directory kept up to date from the changed directories alone
    calls: list[str] = []
    dotted = PerDirectory(lambda snap, rel, d: calls.append(rel) or tuple(n for n in d.names if n.startswith(".")))
    for step in range(400):
        for _ in range(rng.choice((1, 1, 1, 3, 8))):
            _random_change(rng, root, outside)
        kept = scan.snapshot()
        assert kept.complete and scan._watching
        fresh = TreeScan(root)._refresh()
        assert view(kept) == view(fresh), f"step {step}"
        calls.clear()
        assert dotted.of(kept) == {rel: v for rel, d in fresh.dirs.items() if (v := tuple(n for n in d.names if n.startswith(".")))}
        assert step == 0 or set(calls) <= kept.changed, f"step {step}: worked out again for unchanged directories"


def test_only_directories_with_events_are_listed_again(tmp_path: Path, monkeypatch):
    for i in range(20):
        (tmp_path / f"d{i}" / "sub").mkdir(parents=True)
    scan = TreeScan(tmp_path)
    scan.snapshot()
    listed: list[str] = []
    real = TreeScan._list
    monkeypatch.setattr(TreeScan, "_list", lambda self, rel, watch=False: listed.append(rel) or real(self, rel, watch))
    assert scan.snapshot().complete and listed == []  # nothing changed: nothing listed, nothing statted
    (tmp_path / "d3" / "sub" / "f").write_text("")
    (tmp_path / "d7" / "new").mkdir()
    snap = scan.snapshot()
    assert sorted(listed) == ["d3/sub", "d7", "d7/new"] and "new" in snap.dirs["d7"].subdirs


def test_lost_events_make_a_whole_walk(tmp_path: Path, monkeypatch):
    (tmp_path / "d").mkdir()
    scan = TreeScan(tmp_path)
    scan.snapshot()
    (tmp_path / "d" / "f").write_text("")
    lose_events()
    walked: list[str] = []
    real = TreeScan._walk_watched
    monkeypatch.setattr(TreeScan, "_walk_watched", lambda self: walked.append("whole") or real(self))
    snap = scan.snapshot()
    assert "f" in snap.dirs["d"].names and scan._watching and walked == ["whole"]


def test_a_tree_that_cannot_be_watched_is_refreshed_by_keys(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(inotify, "local", lambda path: False)  # NFS, FUSE, 9p…
    (tmp_path / "d").mkdir()
    scan = TreeScan(tmp_path)
    assert "d" in scan.snapshot().dirs and scan._by_keys and not scan._watching
    (tmp_path / "d" / "f").write_text("")
    assert "f" in scan.snapshot().dirs["d"].names


def test_a_forked_child_goes_on_by_keys_and_leaves_its_parents_events(tmp_path: Path):
    (tmp_path / "d").mkdir()
    scan = TreeScan(tmp_path)
    scan.snapshot()
    pid = os.fork()
    if pid == 0:
        try:
            (tmp_path / "d" / "child").write_text("")
            snap = scan.snapshot()
            os._exit(0 if "child" in snap.dirs["d"].names and scan._by_keys else 1)
        finally:
            os._exit(2)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert "child" in scan.snapshot().dirs["d"].names and scan._watching  # its event was the parent's still


def test_by_keys_a_directory_listed_within_a_clock_tick_of_a_change_is_listed_again(tmp_path: Path, monkeypatch):
    """The kernel stamps directories from a coarse clock: a change in the same tick after the
    listing leaves the key as it was (here every key is made to look unchanged)."""
    monkeypatch.setattr(inotify, "local", lambda path: False)
    monkeypatch.setattr(scan_mod, "_key", lambda st: (st.st_dev, st.st_ino, 0, 0))
    (tmp_path / "d").mkdir()
    scan = TreeScan(tmp_path)
    assert scan.snapshot().dirs["d"].racy  # just made
    (tmp_path / "d" / "f").write_text("")
    assert "f" in scan.snapshot().dirs["d"].names
    monkeypatch.setattr(scan_mod, "RACY_NS", 0)  # a listing long after the change: the key vouches
    scan.snapshot()
    (tmp_path / "d" / "g").write_text("")
    assert "g" not in scan.snapshot().dirs["d"].names  # (what the racy mark guards against)


def test_a_value_per_directory_catches_up_over_snapshots_it_did_not_see(tmp_path: Path):
    """Consumers ask at different times (the permission check, before and after a command): one
    that skipped snapshots is brought up to date from the changes of all of them."""
    for i in range(50):
        (tmp_path / f"d{i}").mkdir()
    scan = TreeScan(tmp_path)
    calls: list[str] = []
    dotted = PerDirectory(lambda snap, rel, d: calls.append(rel) or tuple(n for n in d.names if n.startswith(".")))
    dotted.of(scan.snapshot())
    (tmp_path / "d1" / ".env").write_text("")
    scan.snapshot()  # seen by another consumer only
    (tmp_path / "d2" / ".git").mkdir()
    scan.snapshot()
    (tmp_path / "d1" / ".env").unlink()
    calls.clear()
    assert dotted.of(scan.snapshot()) == {"d2": (".git",)}
    assert sorted(calls) == ["d1", "d2", "d2/.git"]  # not the other 48


def test_a_tree_bigger_than_its_share_of_the_watch_limit_is_refreshed_by_keys(tmp_path: Path, monkeypatch):
    """Every program of the user shares `fs.inotify.max_user_watches`: a tree past a quarter of
    it is not watched (an editor's file watcher would find none left)."""
    monkeypatch.setattr(inotify, "watch_budget", lambda: 5)
    for i in range(10):
        (tmp_path / f"d{i}").mkdir()
    scan = TreeScan(tmp_path)
    snap = scan.snapshot()
    assert snap.complete and len(snap.dirs) == 11 and scan._by_keys and scan._watcher is None
    (tmp_path / "d9" / "f").write_text("")
    assert "f" in scan.snapshot().dirs["d9"].names


# A directory moved while a relisting walks it: the relisting that follows must not take the
# parent's unchanged listing for proof that what it holds is right. Each move is made from
# inside the walk (before the listing of the directory named), at the point that loses it.
def _mv(a: str, b: str):
    return lambda root: os.rename(root / a, root / b)


RELIST_RACES = {
    # away (its new name's walk fails: it is back), back (its walk fails: away again), back
    # once more before the parent's listing: the parent lists it as it was two relistings ago
    "moved away and back": ([("a/e", _mv("a/e", "a/d")), ("a/d", _mv("a/d", "a/e")), ("a", _mv("a/e", "a/d"))],
                            lambda root: os.rename(root / "a" / "d", root / "a" / "e")),
}


@pytest.mark.parametrize("race", RELIST_RACES)
def test_a_directory_moved_during_a_relisting_is_in_the_view_as_it_is(race, tmp_path: Path, monkeypatch):
    root = tmp_path / "ws"
    (root / "a" / "d").mkdir(parents=True)
    (root / "a" / "d" / "f").write_text("x")
    steps, first = RELIST_RACES[race]
    scan = TreeScan(root)
    assert scan.snapshot().complete
    if not scan._watching:
        pytest.skip("inotify cannot watch this tree")
    pending = list(steps)
    listing = TreeScan._list

    def racing(self, rel, watch=False):
        if pending and pending[0][0] == rel:
            pending.pop(0)[1](root)
        return listing(self, rel, watch)

    monkeypatch.setattr(TreeScan, "_list", racing)
    first(root)
    snap = scan.snapshot()
    assert not pending, pending  # every step was made, inside the walk
    monkeypatch.setattr(TreeScan, "_list", listing)
    for sub in [r for r in ("a/d", "a/e") if (root / r).exists()]:
        assert sub in snap.dirs, (sub, view(snap))
        assert snap.dirs[sub].key[1] == os.stat(root / sub).st_ino, (sub, view(snap))
        assert sorted(snap.dirs[sub].names) == sorted(os.listdir(root / sub)), (sub, view(snap))
