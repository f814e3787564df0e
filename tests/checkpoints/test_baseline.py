"""The baseline Bash checkpoints need: begun in the background, pre-images named by git's blob ids
where the index proves them, regenerable directories left out — and each of those said where a
rewind cannot give something back."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from codebelt.checkpoints import Checkpoints
from codebelt.checkpoints import tracker as tracker_mod
from codebelt.checkpoints.gitindex import find_repo, read_index

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")
ENV = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
       "GIT_COMMITTER_EMAIL": "a@b"}


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, text=True, env=ENV).stdout


def repo(ws: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "first")
    # git leaves entries written in the index's own second racily clean: stat them again later
    os.utime(ws / ".git" / "index", ns=(os.stat(ws / ".git" / "index").st_mtime_ns + 2_000_000_000,) * 2)


def dot_git(ws: Path) -> dict[str, tuple]:
    """Everything in .git, byte for byte, with each entry's mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(ws / ".git"):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(ws))] = (st.st_mode, st.st_mtime_ns, p.read_bytes() if p.is_file() else None)
    return out


def book_of(session) -> Checkpoints:
    book = session._checkpoints()
    book.start_tracking()
    return book


def test_tracked_file_rewound_from_gits_objects_and_git_left_untouched(make_session, ws):
    repo(ws, {"src/app.py": "print('hello')\n", "src/util.py": "X = 1\n", "README": "r\n"})
    before_git = dot_git(ws)
    s = make_session(mode="bypassPermissions")
    book = book_of(s)
    entry = book.tracker.entries[str(ws / "src/app.py")]
    assert entry.hash.startswith("git:"), entry  # named by its blob, not copied
    assert book.store.total_bytes() == 0
    r = s.call("Bash", {"command": "sed -i s/hello/bye/ src/app.py && rm src/util.py && echo n > new.txt"})
    assert r.data["exitCode"] == 0, r.text
    cp = s.checkpoints()[0]
    assert cp["notKept"] == [] and sorted(cp["paths"]) == ["new.txt", "src/app.py", "src/util.py"]
    report = s.rewind(cp["id"])
    assert not report.conflicts, report.text()
    assert (ws / "src/app.py").read_text() == "print('hello')\n"
    assert (ws / "src/util.py").read_text() == "X = 1\n"
    assert not (ws / "new.txt").exists()
    s.close()
    assert dot_git(ws) == before_git  # read, never written: not a byte, not an mtime


def test_pre_image_read_from_a_pack_with_deltas(make_session, ws):
    big = "".join(f"line {i} of a file git will store as a delta\n" for i in range(400))
    repo(ws, {"a.txt": big})
    (ws / "a.txt").write_text(big.replace("line 7 ", "line seven "))
    git(ws, "commit", "-qam", "second")
    git(ws, "gc", "-q", "--aggressive")  # both versions in one pack, one a delta of the other
    os.utime(ws / ".git" / "index", ns=(os.stat(ws / ".git" / "index").st_mtime_ns + 2_000_000_000,) * 2)
    assert not list((ws / ".git" / "objects").glob("??/*"))
    s = make_session(mode="bypassPermissions")
    book = book_of(s)
    assert book.tracker.entries[str(ws / "a.txt")].hash.startswith("git:")
    s.call("Bash", {"command": "echo tail >> a.txt"})
    s.undo()
    assert (ws / "a.txt").read_text() == big.replace("line 7 ", "line seven ")


def test_modified_but_unstaged_file_is_copied_not_taken_from_git(make_session, ws):
    repo(ws, {"a.txt": "committed\n", "b.txt": "b\n"})
    (ws / "a.txt").write_text("the person's unstaged edit\n")
    s = make_session(mode="bypassPermissions")
    book = book_of(s)
    entry = book.tracker.entries[str(ws / "a.txt")]
    assert not entry.hash.startswith("git:")
    assert book.store.read(entry.hash) == b"the person's unstaged edit\n"
    assert book.tracker.entries[str(ws / "b.txt")].hash.startswith("git:")
    s.call("Bash", {"command": "echo model > a.txt"})
    s.undo()
    assert (ws / "a.txt").read_text() == "the person's unstaged edit\n"


def test_racily_clean_entry_is_not_trusted(ws):
    (ws / "a.txt").write_text("one\n")
    git(ws, "init", "-q")
    git(ws, "add", "a.txt")
    # the file changes within the index's own timestamp: same size, git cannot tell by stat
    st = os.stat(ws / ".git" / "index")
    (ws / "a.txt").write_text("two\n")
    os.utime(ws / "a.txt", ns=(st.st_mtime_ns, st.st_mtime_ns))
    index = read_index(find_repo(str(ws)))
    assert index.blob_for(b"a.txt", os.lstat(ws / "a.txt")) is None


def test_a_workspace_below_the_top_of_its_repository(make_session, tmp_path):
    top = tmp_path / "top"
    top.mkdir()
    repo(top, {"pkg/sub/a.txt": "a\n", "other.txt": "o\n"})
    s = make_session(root=top / "pkg", mode="bypassPermissions")
    book = book_of(s)
    assert book.tracker.entries[str(top / "pkg/sub/a.txt")].hash.startswith("git:")
    s.call("Bash", {"command": "rm -rf sub"})
    s.undo()
    assert (top / "pkg/sub/a.txt").read_text() == "a\n"


def test_content_converting_attributes_mean_copies(make_session, ws):
    repo(ws, {".gitattributes": "*.bin filter=lfs diff=lfs merge=lfs -text\n", "a.txt": "a\n"})
    s = make_session(mode="bypassPermissions")
    book = book_of(s)
    assert not book.tracker.git and "converts content" in book.tracker.git_note
    assert not book.tracker.entries[str(ws / "a.txt")].hash.startswith("git:")


def test_blob_gone_from_the_repository_is_said_not_kept(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    repo(ws, {"a.txt": "a\n", "b.txt": "b\n"})
    book = Checkpoints(tmp_path / "store", [ws], "s")
    book.start_tracking()
    blob = book.tracker.entries[str(ws / "a.txt")].hash[4:]
    (ws / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # pruned, say, by a gc in between
    rec = book.begin_command("Bash", "x")
    (ws / "a.txt").write_text("changed\n")
    (ws / "b.txt").write_text("changed\n")
    cp = book.get(rec.finish())
    lost = {os.path.basename(c.path): c.before.lost for c in cp.changes}
    assert lost["b.txt"] is None
    assert "git's copy of it could not be read" in lost["a.txt"]
    report = book.rewind(cp.id)
    assert (ws / "b.txt").read_text() == "b\n" and (ws / "a.txt").read_text() == "changed\n"
    assert [os.path.basename(p) for p, _ in report.conflicts] == ["a.txt"]
    book.close()


# -- left-out directories -----------------------------------------------------------------------
def test_excluded_directory_is_said_not_kept_with_its_count(make_session, ws):
    repo(ws, {".gitignore": "node_modules/\n", "app.js": "x\n", "build/gen.py": "tracked = 1\n"})
    for i in range(30):
        (ws / "node_modules" / f"p{i}").mkdir(parents=True)
        (ws / "node_modules" / f"p{i}" / "index.js").write_text(f"module {i}\n")
    s = make_session(mode="bypassPermissions")
    book = book_of(s)
    assert str(ws / "node_modules/p1/index.js") not in book.tracker.entries  # neither read nor kept
    assert str(ws / "build/gen.py") in book.tracker.entries  # `build` git tracks is kept like any other
    s.call("Bash", {"command": "echo patched > node_modules/p3/index.js && echo y > app.js && echo 2 > build/gen.py"})
    cp = s.checkpoints()[-1]
    assert "node_modules" in cp["notKept"]
    assert any("node_modules" in n and "1 path(s) changed inside" in n for n in cp["notes"]), cp["notes"]
    report = s.rewind(cp["id"])
    assert (ws / "app.js").read_text() == "x\n" and (ws / "build/gen.py").read_text() == "tracked = 1\n"
    assert [(Path(p).name, "excluded" in why) for p, why in report.conflicts] == [("node_modules", True)]
    assert (ws / "node_modules/p3/index.js").read_text() == "patched\n"

    s.call("Bash", {"command": "rm -rf node_modules"})
    cp = s.checkpoints()[-1]
    assert cp["notKept"] == ["node_modules"]
    assert any("about 60 entries" in n for n in cp["notes"]), cp["notes"]  # 30 directories, 30 files
    report = s.rewind(cp["id"])
    assert report.conflicts and "excluded" in report.conflicts[0][1] and not (ws / "node_modules").exists()


def test_an_excluded_directory_a_command_makes(make_session, ws):
    (ws / "app.js").write_text("x\n")
    s = make_session(mode="bypassPermissions")
    book_of(s)
    s.call("Bash", {"command": "mkdir -p node_modules/a && echo m > node_modules/a/i.js && echo y > app.js"})
    cp = s.checkpoints()[-1]
    assert sorted(cp["paths"]) == ["app.js", "node_modules"]
    report = s.rewind(cp["id"])
    assert (ws / "app.js").read_text() == "x\n"
    assert (ws / "node_modules/a/i.js").exists()  # what it holds was never read: left, and said
    assert [Path(p).name for p, _ in report.conflicts] == ["node_modules"]


def test_workspace_may_add_exclusions_but_not_remove_the_users(make_session, ws):
    (ws / ".codebelt").mkdir()
    default = make_session().settings.checkpoints.exclude
    assert "node_modules" in default
    (ws / ".codebelt" / "settings.json").write_text('{"checkpoints": {"exclude": ["generated"]}}')
    assert sorted(make_session().settings.checkpoints.exclude) == sorted(default + ["generated"])
    (ws / ".codebelt" / "settings.json").write_text('{"checkpoints": {"exclude": []}}')
    assert make_session().settings.checkpoints.exclude == default


# -- a command before the baseline is complete ----------------------------------------------------
class HeldFill:
    """Holds the background fill until released (a slow baseline, made deterministic)."""

    def __init__(self, monkeypatch):
        self.go = threading.Event()
        real = tracker_mod.Tracker.fill

        def fill(tracker, budget, background=False):
            assert self.go.wait(30)
            return real(tracker, budget, background)

        monkeypatch.setattr(tracker_mod.Tracker, "fill", fill)


def populated(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    for name in ("f1", "f2", "d/f3"):
        (ws / name).write_text(f"{name}\n")
    return ws


def test_command_before_the_baseline_reached_a_file(tmp_path, monkeypatch):
    ws = populated(tmp_path)
    held = HeldFill(monkeypatch)
    book = Checkpoints(tmp_path / "store", [ws], "s")
    book.start_background()
    rec = book.begin_command("Bash", "early")  # waits for the watches only
    assert not book.tracker.filled.is_set()
    (ws / "f1").write_text("changed early\n")
    os.mkdir(ws / "new")
    cp = book.get(rec.finish())
    assert {os.path.relpath(c.path, ws) for c in cp.changes} == {"f1", "new"}
    assert [os.path.relpath(c.path, ws) for c in cp.not_kept] == ["f1"]
    assert any("baseline had not reached" in n for n in cp.notes)
    report = book.rewind(cp.id)
    assert not (ws / "new").exists()
    assert [(os.path.relpath(p, ws), "baseline had not reached" in why) for p, why in report.conflicts] == [("f1", True)]

    held.go.set()
    assert book.tracker.filled.wait(30)
    rec = book.begin_command("Bash", "later")  # now every file has its pre-image
    (ws / "f2").write_text("changed later\n")
    book.rewind(rec.finish())
    assert (ws / "f2").read_text() == "f2\n"
    book.close()


def test_fill_during_a_command_never_takes_the_commands_change_for_the_pre_image(tmp_path, monkeypatch):
    """The background fill reaches a file after the command changed it: it must not take that
    content as the pre-image (the change would vanish from the checkpoint)."""
    ws = populated(tmp_path)
    held = HeldFill(monkeypatch)
    book = Checkpoints(tmp_path / "store", [ws], "s")
    book.start_background()
    rec = book.begin_command("Bash", "x")
    (ws / "f1").write_text("by the command\n")
    os.rename(ws / "d", ws / "d2")
    os.mkdir(ws / "d")
    (ws / "d" / "f3").write_text("a new file of the same name\n")
    held.go.set()  # the fill now runs while the command "runs"
    assert book.tracker.filled.wait(30)
    cp = book.get(rec.finish())
    changes = {os.path.relpath(c.path, ws): c for c in cp.changes}
    assert {"f1", "d/f3", "d2", "d2/f3"} <= set(changes)
    assert changes["f1"].before.hash is None and "baseline" in changes["f1"].before.lost
    assert changes["d/f3"].before.hash is None
    assert "f2" not in changes
    book.close()


def test_session_begins_the_baseline_at_its_start(make_session, ws):
    (ws / "a.txt").write_text("a\n")
    s = make_session(mode="bypassPermissions")
    book = s._services.peek(__import__("codebelt.tools._services", fromlist=["checkpoints"]).checkpoints)
    for _ in range(200):
        if book is not None and book.tracker is not None:
            break
        threading.Event().wait(0.05)
        book = s._services.peek(__import__("codebelt.tools._services", fromlist=["checkpoints"]).checkpoints)
    assert book is not None and book.tracker is not None and book.tracker.filled.wait(30)
    assert book.tracker.entries[str(ws / "a.txt")].hash  # kept before any command asked


def test_cli_sessions_begin_no_baseline(ws):
    import argparse

    from codebelt.cli.common import make_session as cli_session

    args = argparse.Namespace(root=str(ws), mode=None, sandbox=None, settings=None)
    with cli_session(args, interactive=False, audit=False) as s:
        assert s.settings.checkpoints.baseline_at_start is False


def test_a_command_that_begins_the_baseline_waits_for_all_of_it(tmp_path, monkeypatch):
    """A session that began no baseline at its start (the command line's one call): the
    command that begins it has had no head start, so it waits for every pre-image — else each
    file it changes would be "not kept"."""
    ws = populated(tmp_path)
    held = HeldFill(monkeypatch)
    book = Checkpoints(tmp_path / "store", [ws], "s")
    recs = []
    begun = threading.Thread(target=lambda: recs.append(book.begin_command("Bash", "x")))
    begun.start()
    for _ in range(600):
        if book.tracker is not None and book.tracker.watched.is_set():
            break
        threading.Event().wait(0.05)
    assert book.tracker.watched.is_set()
    begun.join(0.5)
    assert not recs  # watched, yet still waiting: for the contents
    held.go.set()
    begun.join(30)
    assert recs and book.tracker.filled.is_set()
    (ws / "f1").write_text("changed\n")
    cp = book.get(recs[0].finish())
    assert cp.not_kept == [] and [os.path.relpath(c.path, ws) for c in cp.changes] == ["f1"]
    book.rewind(cp.id)
    assert (ws / "f1").read_text() == "f1\n"
    book.close()


def test_a_session_closed_before_its_baseline_filled_keeps_the_manifest(tmp_path, monkeypatch):
    """What an earlier session kept stays usable: a session that closes before its fill reached
    a file does not drop that file from the manifest (the next one would copy it all again)."""
    ws = populated(tmp_path)
    book = Checkpoints(tmp_path / "store", [ws], "one", use_git=False)
    book.start_tracking()
    book.close()
    real = tracker_mod.Tracker.fill

    def closing_first(tracker, budget, background=False):
        tracker.stopping = True  # the session closes as the fill begins: it stops at once
        return real(tracker, budget, background)

    monkeypatch.setattr(tracker_mod.Tracker, "fill", closing_first)
    early = Checkpoints(tmp_path / "store", [ws], "two", use_git=False)
    early.start_background()
    assert early.tracker.filled.wait(30) and early.tracker.pending == 3
    early.close()
    monkeypatch.undo()
    later = Checkpoints(tmp_path / "store", [ws], "three", use_git=False)
    later.start_tracking()
    assert later.tracker.counts["manifest"] == 3 and later.tracker.counts["copied"] == 0, later.tracker.counts
    later.close()


def test_git_objects_off_copies_every_file(make_session, ws):
    repo(ws, {"a.txt": "a\n"})
    s = make_session(mode="bypassPermissions", settings={"checkpoints": {"gitObjects": False}})
    book = book_of(s)
    entry = book.tracker.entries[str(ws / "a.txt")]
    assert not book.tracker.git and book.store.read(entry.hash) == b"a\n"


@pytest.mark.parametrize("attrs", ["*.txt filter=rot13", "*.txt text eol=crlf", "*.txt ident"])
def test_converting_attributes_below_the_top_mean_copies(tmp_path, attrs):
    ws = tmp_path / "ws"
    ws.mkdir()
    repo(ws, {"sub/.gitattributes": attrs + "\n", "sub/a.txt": "a\n", "b.txt": "b\n"})
    book = Checkpoints(tmp_path / "store", [ws], "s")
    book.start_tracking()
    assert not book.tracker.git and "sub/.gitattributes converts content" in book.tracker.git_note
    assert book.store.read(book.tracker.entries[str(ws / "sub/a.txt")].hash) == b"a\n"
    book.close()
