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
