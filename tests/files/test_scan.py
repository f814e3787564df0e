"""The shared walk: whole tree, refreshed by directory keys (mtime and ctime), never through a
symlink, and bounded in time with an incomplete snapshot that says so."""

from __future__ import annotations

import os
from pathlib import Path

from codebelt.files import scan as scan_mod
from codebelt.files.scan import DIR, FILE, LINK, TreeScan


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
