"""Checkpoints through a real Session: real commands change the workspace, rewind puts it back.

Each case of COMMANDS runs a real shell command (sandboxed when the machine allows), then
rewinds its checkpoint and compares the whole tree — content, modes, symlinks, directories —
with the tree before the command.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

GIT = shutil.which("git")


def tree(root: Path) -> dict[str, tuple]:
    """Everything under root except .git and the sandbox's empty mount points (.claude and
    .codebelt, there while the session lives): kind, mode, content or link target."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git" and not (d in (".claude", ".codebelt") and dirpath == str(root))]
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("file", stat.S_IMODE(st.st_mode), p.read_bytes())
    return out


def populate(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("print('hello')\n")
    (ws / "src" / "util.py").write_text("X = 1\n")
    (ws / "docs" / "deep").mkdir(parents=True)
    (ws / "docs" / "deep" / "a.md").write_text("# a\n")
    (ws / "docs" / "b.md").write_text("# b\n")
    (ws / "run.sh").write_text("#!/bin/sh\necho run\n")
    (ws / "run.sh").chmod(0o755)
    (ws / "target.txt").write_text("target\n")
    os.symlink("target.txt", ws / "link")


COMMANDS = [
    ("sed -i", "sed -i 's/hello/bye/' src/app.py"),
    ("mv file", "mv src/util.py src/helpers.py"),
    ("mv dir", "mv docs manual"),
    ("rm -rf dir", "rm -rf docs"),
    ("chmod", "chmod 600 run.sh && chmod 700 src"),
    ("symlink replaced by a file", "rm link && echo plain > link"),
    ("file replaced by a symlink", "rm src/app.py && ln -s ../target.txt src/app.py"),
    ("in-place overwrite and append", "echo new > target.txt && echo more >> docs/b.md"),
    ("create tree", "mkdir -p gen/a/b && for i in 1 2 3; do echo $i > gen/a/b/f$i; done"),
    ("dir replaced by a file", "rm -rf docs/deep && echo x > docs/deep"),
    ("many steps", "cp -r src src2 && rm -rf src && mv src2 src && sed -i 's/1/2/' src/util.py"),
]


@pytest.mark.parametrize("sandbox", ["auto", "off"])
@pytest.mark.parametrize("name,command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_command_rewound(make_session, ws, name, command, sandbox):
    """Sandboxed or not, a command's changes are found the same way (the tracker watches the
    roots, not the command)."""
    populate(ws)
    before = tree(ws)
    s = make_session(mode="bypassPermissions", sandbox=sandbox)
    r = s.call("Bash", {"command": command})
    assert r.data["exitCode"] == 0, r.text
    assert tree(ws) != before
    cps = s.checkpoints()
    assert len(cps) == 1 and cps[0]["tool"] == "Bash", cps
    report = s.rewind(cps[0]["id"])
    assert not report.conflicts, report.text()
    assert tree(ws) == before
    # the rewind is a checkpoint: undoing it redoes the command's changes
    changed = tree(ws)
    s.undo()
    assert tree(ws) != changed
    s.undo()
    assert tree(ws) == before


def test_file_tools_rewound_with_created_directories(make_session, ws):
    populate(ws)
    nb = {"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": ["x = 1\n"], "outputs": [],
                     "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (ws / "nb.ipynb").write_text(json.dumps(nb, indent=1))
    before = tree(ws)
    s = make_session(mode="bypassPermissions")
    assert not s.call("Read", {"file_path": str(ws / "nb.ipynb")}).is_error
    r = s.call("NotebookEdit", {"notebook_path": str(ws / "nb.ipynb"), "cell_id": "c1", "new_source": "x = 2"})
    assert not r.is_error, r.text
    [nb_cp] = s.checkpoints()
    assert nb_cp["tool"] == "NotebookEdit" and nb_cp["paths"] == ["nb.ipynb"]
    s.undo()
    assert tree(ws) == before  # the notebook byte for byte
    assert not s.call("Read", {"file_path": str(ws / "src/app.py")}).is_error
    assert not s.call("Edit", {"file_path": str(ws / "src/app.py"), "old_string": "hello", "new_string": "hi"}).is_error
    assert not s.call("Write", {"file_path": str(ws / "new/deeper/n.txt"), "content": "n"}).is_error
    patch = "*** Begin Patch\n*** Delete File: docs/b.md\n*** Add File: added.txt\n+added\n*** End Patch\n"
    assert not s.call("ApplyPatch", {"input": patch}).is_error, "patch"
    assert [c["tool"] for c in s.checkpoints()] == ["NotebookEdit", "rewind", "Edit", "Write", "ApplyPatch"]
    report = s.reset()
    assert not report.conflicts, report.text()
    assert tree(ws) == before


def test_audit_row_names_its_checkpoint(make_session, ws, audit_db):
    import sqlite3

    s = make_session(mode="bypassPermissions")
    s.call("Bash", {"command": "echo a > a.txt"})
    s.call("Bash", {"command": "true"})
    cid = s.checkpoints()[0]["id"]
    s.close()
    rows = sqlite3.connect(audit_db).execute("SELECT tool, checkpoint FROM calls ORDER BY id").fetchall()
    assert rows == [("Bash", cid), ("Bash", None)]


def test_read_only_command_makes_no_checkpoint(make_session, ws):
    populate(ws)
    s = make_session()
    r = s.call("Bash", {"command": "cat src/app.py"})
    assert not r.is_error
    assert s.checkpoints() == []


def test_concurrent_external_edit_is_not_clobbered(make_session, ws):
    populate(ws)
    s = make_session(mode="bypassPermissions")
    s.call("Bash", {"command": "sed -i 's/hello/bye/' src/app.py && echo t > docs/b.md"})
    cid = s.checkpoints()[0]["id"]
    (ws / "src/app.py").write_text("the person's own edit\n")  # the person's editor, after the call
    report = s.rewind(cid, dry_run=True)
    assert [Path(p).name for p, _ in report.conflicts] == ["app.py"]
    report = s.rewind(cid)
    assert (ws / "src/app.py").read_text() == "the person's own edit\n"
    assert (ws / "docs/b.md").read_text() == "# b\n"  # the other path was restored
    assert "changed since checkpoint" in report.conflicts[0][1]
    report = s.rewind(cid, force=True)
    assert (ws / "src/app.py").read_text() == "print('hello')\n"


def test_edit_between_calls_is_not_lost(make_session, ws):
    """A person's edit between two commands: rewinding both would discard it, so it is a conflict."""
    populate(ws)
    s = make_session(mode="bypassPermissions")
    s.call("Bash", {"command": "echo one > target.txt"})
    (ws / "target.txt").write_text("person\n")
    s.call("Bash", {"command": "echo two >> target.txt"})
    first = s.checkpoints()[0]["id"]
    report = s.rewind(first)
    assert report.conflicts and "between checkpoints" in report.conflicts[0][1]
    assert (ws / "target.txt").read_text() == "person\ntwo\n"


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_git_checkout_of_another_branch(make_session, ws):
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, text=True,
                              env={**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b",
                                   "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}).stdout

    populate(ws)
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "main")
    git("checkout", "-qb", "other")
    (ws / "src/app.py").write_text("other branch\n")
    (ws / "only-on-other.txt").write_text("o\n")
    git("add", "-A")
    git("commit", "-qm", "other")
    git("checkout", "-q", "main")
    before = tree(ws)
    head = (ws / ".git/HEAD").read_text()
    s = make_session(mode="bypassPermissions")
    r = s.call("Bash", {"command": "git checkout -q other"})
    assert r.data["exitCode"] == 0, r.text
    assert (ws / "only-on-other.txt").exists()
    report = s.undo()
    assert not report.conflicts, report.text()
    assert tree(ws) == before
    # the repository itself is never written: HEAD still names the branch the command checked out
    assert (ws / ".git/HEAD").read_text() != head
    assert not any(".git" in p.split("/") for c in s.checkpoints() for p in c["paths"])


@pytest.mark.parametrize("how", ["run_in_background", "moved after autoBackgroundMs"])
def test_background_task_writes_after_returning(make_session, ws, how):
    if how == "run_in_background":
        s = make_session(mode="bypassPermissions")
        extra = {"run_in_background": True}
    else:
        s = make_session(mode="bypassPermissions", settings={"bash": {"autoBackgroundMs": 300, "autoBackground": True}})
        extra = {}
    r = s.call("Bash", {"command": "sleep 1 && echo late > late.txt && mkdir out && echo o > out/o", **extra})
    task_id = r.data["backgroundTaskId"]
    assert not (ws / "late.txt").exists()
    s.call("TaskOutput", {"task_id": task_id, "block": True, "timeout": 20000})
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        cps = s.checkpoints()
        if any(c["kind"] == "task" and not c["open"] for c in cps):
            break
        time.sleep(0.05)
    task = [c for c in s.checkpoints() if c["kind"] == "task"]
    assert len(task) == 1 and not task[0]["open"], s.checkpoints()
    assert sorted(task[0]["paths"]) == ["late.txt", "out", "out/o"]
    report = s.rewind(task[0]["id"])
    assert not report.conflicts, report.text()
    assert not (ws / "late.txt").exists() and not (ws / "out").exists()


def test_non_git_directory_and_file_over_the_cap(make_session, ws):
    (ws / "big.bin").write_bytes(os.urandom(3 << 20))
    (ws / "small.txt").write_text("s\n")
    s = make_session(mode="bypassPermissions", settings={"checkpoints": {"maxFileMB": 1}})
    s.call("Bash", {"command": "head -c 100 /dev/zero > big.bin && echo t > small.txt"})
    cp = s.checkpoints()[0]
    assert cp["notKept"] == ["big.bin"]
    report = s.rewind(cp["id"])
    assert (ws / "small.txt").read_text() == "s\n"
    assert [(Path(p).name, "not kept" in why) for p, why in report.conflicts] == [("big.bin", True)]
    assert "maxFileMB" in report.conflicts[0][1]


def test_call_over_the_call_cap_is_recorded_as_not_kept(make_session, ws):
    s = make_session(mode="bypassPermissions", settings={"checkpoints": {"maxCallMB": 1}})
    s.call("Bash", {"command": "head -c 3000000 /dev/urandom > a.bin && head -c 3000000 /dev/urandom > b.bin"})
    cp = s.checkpoints()[0]
    assert cp["changed"] == 2
    # the rewind can still remove what the command created, but cannot prove it unchanged
    report = s.rewind(cp["id"], dry_run=True)
    assert any("maxCallMB" in why for _, why in report.conflicts), report.text()
    s.rewind(cp["id"], force=True)
    assert not (ws / "a.bin").exists()


def test_checkpoints_off(make_session, ws):
    s = make_session(mode="bypassPermissions", settings={"checkpoints": {"enabled": False}})
    s.call("Bash", {"command": "echo a > a"})
    assert s.checkpoints() == []


def test_model_tool_is_off_unless_the_user_turns_it_on(make_session, ws):
    (ws / ".codebelt").mkdir()
    (ws / ".codebelt" / "settings.json").write_text('{"checkpoints": {"modelTool": true}}')
    assert "Checkpoints" not in make_session().tools  # a workspace's own file cannot turn it on
    s = make_session(mode="bypassPermissions", settings={"checkpoints": {"modelTool": True}})
    assert "Checkpoints" in s.tools
    s.call("Bash", {"command": "echo a > a.txt"})
    listed = s.call("Checkpoints", {"action": "list"})
    assert "a.txt" in listed.text
    cid = listed.data["checkpoints"][0]["id"]
    preview = s.call("Checkpoints", {"action": "rewind", "checkpoint_id": cid, "dry_run": True})
    assert "+++ b/a.txt" in preview.text or "a.txt" in preview.text
    assert (ws / "a.txt").exists()
    done = s.call("Checkpoints", {"action": "rewind", "checkpoint_id": cid})
    assert not done.is_error, done.text
    assert not (ws / "a.txt").exists()


def test_model_rewind_asks_for_the_paths_it_writes(make_session, ws):
    s = make_session(mode="bypassPermissions", settings={"checkpoints": {"modelTool": True},
                                                         "permissions": {"deny": ["Edit(secret/**)"]}})
    made = s.call("Bash", {"command": "python3 -c \"import os; os.mkdir('secret'); open('secret/a', 'w').write('a')\""})
    assert made.data["exitCode"] == 0, made.text
    r = s.call("Checkpoints", {"action": "undo"})
    assert r.is_error and "secret" in r.text, r.text
    assert (ws / "secret" / "a").exists()


def test_the_sessions_own_temp_files_are_not_changes(make_session, ws, monkeypatch):
    import tempfile

    (ws / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(ws / "tmp"))  # TMPDIR inside the workspace
    s = make_session(mode="bypassPermissions")
    s.call("Bash", {"command": "echo hi > a.txt && seq 1 100000"})  # output spooled under the session's temp dir
    assert [c["paths"] for c in s.checkpoints()] == [["a.txt"]]
