"""The checkpoint engine on its own: store, journal and scan agree, caps, collection, and a
rewind that never follows a symlink out of the workspace."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from codebelt.checkpoints import Checkpoints, Limits
from codebelt.checkpoints import journal as journal_mod
from codebelt.checkpoints.store import LOOSE_BYTES

SCRIPTS = [
    "sed -i s/a/b/ f1 && echo x >> f2",
    "mv d e && mkdir d && echo n > d/new",
    "rm -rf d && ln -s f1 d",
    "chmod 700 f1 && mkdir -p g/h && touch g/h/i && rm f2",
    "for i in $(seq 1 300); do echo $i > many$i; done && rm many7",
]


def populate(root: Path) -> None:
    (root / "f1").write_text("aaa\n")
    (root / "f2").write_text("two\n")
    (root / "d" / "sub").mkdir(parents=True)
    (root / "d" / "sub" / "x").write_text("x\n")


def changes_of(book: Checkpoints, cwd: Path, script: str) -> set[tuple[str, str, str]]:
    rec = book.begin_command("Bash", script)
    subprocess.run(["bash", "-c", script], cwd=cwd, check=True)
    cid = rec.finish()
    cp = book.get(cid) if cid else None
    return {(os.path.relpath(c.path, cwd), c.before.kind, c.after.kind) for c in (cp.changes if cp else [])}


@pytest.mark.parametrize("script", SCRIPTS)
def test_journal_and_scan_see_the_same_changes(tmp_path, script):
    seen = []
    for use_journal in (True, False):
        root = tmp_path / f"ws-{use_journal}"
        root.mkdir()
        populate(root)
        book = Checkpoints(tmp_path / f"store-{use_journal}", [root], "s", use_journal=use_journal)
        assert book.start_tracking().startswith("journal" if use_journal else "scan")
        seen.append(changes_of(book, root, script))
        book.close()
    assert seen[0] == seen[1] and seen[0]


def test_watch_limit_falls_back_to_scanning(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    populate(root)
    monkeypatch.setattr(journal_mod.Journal, "add", lambda self, d: False)
    book = Checkpoints(tmp_path / "store", [root], "s")
    assert "watch limit" in book.start_tracking()
    assert ("f1", "file", "file") in changes_of(book, root, "echo z > f1")
    book.close()


def test_store_dedups_and_keeps_big_files_loose(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    big = os.urandom(LOOSE_BYTES + 10)
    (root / "big").write_bytes(big)
    (root / "copy").write_bytes(big)
    book = Checkpoints(tmp_path / "store", [root], "s")
    book.start_tracking()
    entries = book.tracker.entries
    h = entries[str(root / "big")].hash
    assert h == entries[str(root / "copy")].hash
    assert book.store.read(h) == big
    assert book.store.total_bytes() == len(big)
    assert len(list((tmp_path / "store" / "loose").glob("*/*"))) == 1
    book.close()


def test_collection_drops_expired_checkpoints_and_their_contents(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a").write_text("first\n")
    book = Checkpoints(tmp_path / "store", [root], "s", Limits(max_age_s=0.01))
    rec = book.begin_files("Write", "a", [str(root / "a")])
    (root / "a").write_text("second\n")
    rec.finish()
    before = book.store.total_bytes()
    time.sleep(0.05)
    assert book.collect(grace_s=0) == before
    assert book.list() == []
    book.close()


def test_collection_keeps_the_store_under_its_cap_dropping_the_oldest(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    book = Checkpoints(tmp_path / "store", [root], "s")
    for i in range(5):  # five files of 10,000 random bytes, each a checkpoint of its own
        p = root / f"f{i}"
        rec = book.begin_files("Write", p.name, [str(p)])
        p.write_bytes(os.urandom(10_000))
        rec.finish()
    assert book.store.total_bytes() == 50_000
    book.close()
    book = Checkpoints(tmp_path / "store", [root], "s", Limits(max_store_bytes=25_000))  # the cap lowered
    book.collect(grace_s=0)
    assert book.store.total_bytes() <= 25_000
    assert [cp.label for cp in book.list()] == ["f3", "f4"]  # the newest kept
    # and a call past the cap records its new content as not kept rather than growing the store
    rec = book.begin_files("Write", "f5", [str(root / "f5")])
    (root / "f5").write_bytes(os.urandom(10_000))
    cp = book.get(rec.finish())
    assert cp.changes[0].after.hash is None and "maxStoreMB" in (cp.changes[0].after.lost or "")
    assert book.store.total_bytes() <= 25_000
    book.close()


def test_rewind_never_follows_a_symlink_out_of_the_workspace(tmp_path):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "src").mkdir()
    (root / "src" / "a").write_text("mine\n")
    book = Checkpoints(tmp_path / "store", [root], "s")
    rec = book.begin_files("Write", "src/a", [str(root / "src" / "a")])
    (root / "src" / "a").write_text("model\n")
    cid = rec.finish()
    # a later, untracked swap: the directory becomes a symlink to a place outside
    os.rename(root / "src", root / "src.old")
    os.symlink(outside, root / "src")
    report = book.rewind(cid, force=True)
    assert list(outside.iterdir()) == []
    assert report.conflicts and not report.restored
    book.close()


def test_external_edit_between_calls_is_baseline_not_a_checkpoint(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    populate(root)
    book = Checkpoints(tmp_path / "store", [root], "s")
    book.start_tracking()
    (root / "f1").write_text("edited by a person\n")
    assert changes_of(book, root, "echo more >> f1") == {("f1", "file", "file")}
    cp = book.list()[-1]
    assert book.store.read(cp.changes[0].before.hash) == b"edited by a person\n"
    book.close()


def snapshot(root: Path) -> dict[str, tuple]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir", st.st_mode & 0o7777)
            else:
                out[rel] = ("file", st.st_mode & 0o7777, p.read_bytes())
    return out


def random_command(rnd, root: Path) -> None:
    """One 'command': a few random changes of every kind the tracker must see."""
    import random as _random
    import shutil

    assert isinstance(rnd, _random.Random)
    for _ in range(rnd.randint(1, 6)):
        entries = sorted(p for p in root.rglob("*"))
        files = [p for p in entries if p.is_file() and not p.is_symlink()]
        dirs = [root] + [p for p in entries if p.is_dir() and not p.is_symlink()]
        op = rnd.choice(["create", "modify", "append", "rename", "delete", "mkdir", "rmtree", "symlink",
                         "chmod", "dir_to_file", "file_to_dir"])
        target = rnd.choice(dirs) / f"n{rnd.randint(0, 999)}"
        if os.path.lexists(target):
            continue
        if op == "create":
            target.write_bytes(rnd.randbytes(rnd.randint(0, 300)))
        elif op == "modify" and files:
            rnd.choice(files).write_bytes(rnd.randbytes(50))
        elif op == "append" and files:
            with open(rnd.choice(files), "ab") as f:
                f.write(b"more")
        elif op == "rename" and len(entries) > 0:
            src = rnd.choice(entries)
            if src not in target.parents and src != root and not target.is_relative_to(src):
                os.rename(src, target)
        elif op == "delete" and files:
            rnd.choice(files).unlink()
        elif op == "mkdir":
            (target / "inner").mkdir(parents=True)
            (target / "inner" / "f").write_text("f")
        elif op == "rmtree" and len(dirs) > 1:
            shutil.rmtree(rnd.choice(dirs[1:]), ignore_errors=True)
        elif op == "symlink":
            os.symlink(rnd.choice(["f1", "../x", "nowhere"]), target)
        elif op == "chmod" and files:
            rnd.choice(files).chmod(rnd.choice([0o600, 0o755, 0o444]))
        elif op == "dir_to_file" and len(dirs) > 1:
            d = rnd.choice(dirs[1:])
            shutil.rmtree(d, ignore_errors=True)
            d.write_text("was a directory")
        elif op == "file_to_dir" and files:
            f = rnd.choice(files)
            f.unlink()
            f.mkdir()


@pytest.mark.parametrize("use_journal", [True, False], ids=["journal", "scan"])
@pytest.mark.parametrize("seed", range(8))
def test_random_commands_then_reset_gives_back_the_tree(tmp_path, seed, use_journal):
    import random

    rnd = random.Random(seed)
    root = tmp_path / "ws"
    root.mkdir()
    populate(root)
    start = snapshot(root)
    book = Checkpoints(tmp_path / "store", [root], "s", use_journal=use_journal)
    book.start_tracking()
    before: dict[int, dict] = {}  # checkpoint id → the tree before its command
    for _ in range(8):
        tree_before = snapshot(root)
        rec = book.begin_command("Bash", "random")
        random_command(rnd, root)
        cid = rec.finish()
        if cid is None:  # nothing changed: no checkpoint
            assert snapshot(root) == tree_before
        else:
            before[cid] = tree_before
    assert len(before) >= 5
    # undo them one at a time, newest first: each gives back the tree before its command
    for cid in sorted(before, reverse=True):
        report = book.rewind(cid)
        assert not report.conflicts, report.text()
        assert snapshot(root) == before[cid], f"after undoing checkpoint {cid}"
    assert snapshot(root) == start
    book.close()


def test_a_lost_event_queue_means_a_rescan(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    populate(root)
    book = Checkpoints(tmp_path / "store", [root], "s")
    book.start_tracking()
    rec = book.begin_command("Bash", "x")
    (root / "f1").write_text("changed\n")
    (root / "d" / "sub" / "x").unlink()
    book.tracker.journal.drain()  # the events are gone, as after a queue overflow …
    book.tracker.journal._overflow = True  # … which the kernel reports
    cp = book.get(rec.finish())
    assert {os.path.relpath(c.path, root) for c in cp.changes} == {"f1", "d/sub/x"}
    book.close()
