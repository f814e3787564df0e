"""A program the write sandbox runs unasked cannot read a Read-denied file's old versions from
git's object store.

The classifier asks for the git commands it can see (`git show HEAD:.env`); a script it cannot
see (`python3 leak.py`, which runs git itself or reads `.git/objects`) ran unasked under
sandboxed auto-allow, and the sandbox masks the denied file, not the store git needs. So while a
Read deny rule could match a file under a workspace root and a repository holds that root or
lies inside it, such a command is decided by the mode (asks here; no approver, so it does not
run). By effect, per place the history can sit: loose objects, packs, the index and a stash;
alternates; a linked worktree's common directory; a second clone's `.git` and a bare clone
inside the workspace; a workspace below its repository's top."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from ..sandbox.conftest import backend_unusable

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t"}

# What a model could write and run: every repository it can find, every object printed.
LEAK = r'''
import os, subprocess, sys
found = [[]]  # git's own discovery from here (a repository above, a worktree, alternates)
for d, dirs, files in os.walk(os.getcwd()):
    names = set(dirs) | set(files)
    if ".git" in names:
        found.append(["-C", d])
    if {"HEAD", "objects", "refs"} <= names:  # a bare repository
        found.append(["--git-dir", d])
for where in found:
    r = subprocess.run(["git", *where, "cat-file", "--batch-all-objects", "--batch"], capture_output=True)
    sys.stdout.write(r.stdout.decode("latin-1"))
'''


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=ENV).stdout


def history(repo: Path) -> str:
    """A repository whose packed history, loose stash and index hold versions of `.env`; the
    file itself is gone from the work tree. Returns the secret every version carries."""
    secret = f"SECRET-{uuid.uuid4().hex}"
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("print('a')\n")
    (repo / ".env").write_text(f"KEY={secret}-1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    git(repo, "gc", "-q")
    (repo / ".env").write_text(f"KEY={secret}-2\n")
    git(repo, "stash", "-q")
    (repo / ".env").write_text(f"KEY={secret}-3\n")
    git(repo, "add", ".env")
    return secret


def plain(tmp: Path) -> tuple[Path, str]:
    ws = tmp / "ws"
    return ws, history(ws)


def alternates(tmp: Path) -> tuple[Path, str]:
    secret = history(tmp / "origin")
    git(tmp, "clone", "-q", "--shared", str(tmp / "origin"), "ws")
    assert (tmp / "ws" / ".git" / "objects" / "info" / "alternates").exists()
    return tmp / "ws", secret


def worktree(tmp: Path) -> tuple[Path, str]:
    secret = history(tmp / "main")
    git(tmp / "main", "worktree", "add", "-q", str(tmp / "ws"))
    assert (tmp / "ws" / ".git").is_file()
    return tmp / "ws", secret


def second_clone(tmp: Path) -> tuple[Path, str]:
    secret = history(tmp / "origin")
    (tmp / "ws" / "vendor").mkdir(parents=True)
    git(tmp, "clone", "-q", "--no-local", str(tmp / "origin"), str(tmp / "ws" / "vendor" / "copy"))
    return tmp / "ws", secret


def bare_clone(tmp: Path) -> tuple[Path, str]:
    secret = history(tmp / "origin")
    (tmp / "ws").mkdir()
    git(tmp, "clone", "-q", "--bare", "--no-local", str(tmp / "origin"), str(tmp / "ws" / "backup.git"))
    return tmp / "ws", secret


def below_the_top(tmp: Path) -> tuple[Path, str]:
    secret = history(tmp / "top")
    (tmp / "top" / "pkg").mkdir()
    (tmp / "top" / "pkg" / "x.py").write_text("x = 1\n")
    return tmp / "top" / "pkg", secret


PLACES = {"loose objects, packs, index, stash": plain, "alternates": alternates,
          "a linked worktree's common directory": worktree, "a second clone's .git inside": second_clone,
          "a bare clone inside": bare_clone, "the workspace below the repository's top": below_the_top}
DENY = {"Read(./.env)": "./.env", "Read(**/.env)": "**/.env", "Read(.env) (a bare name)": ".env"}


@pytest.fixture
def bwrap():
    why = backend_unusable("bwrap")
    if why:
        pytest.skip(f"bwrap cannot work here: {why}")


def session(make_session, root: Path, deny: list[str]):
    settings = {"sandbox": {"mode": "bwrap", "autoAllowBash": True}, "permissions": {"deny": deny}}
    s = make_session(root, settings=settings, sandbox="bwrap", approver=None)
    return s


CASES = [(place, "Read(./.env)") for place in PLACES] + [
    ("loose objects, packs, index, stash", deny) for deny in DENY if deny != "Read(./.env)"]


@pytest.mark.parametrize("place, deny", CASES)
def test_a_script_cannot_read_a_denied_files_history_unasked(bwrap, tmp_path, make_session, place, deny):
    base = tmp_path / "t"  # tmp_path/ws is make_session's own workspace
    base.mkdir()
    ws, secret = PLACES[place](base)
    (ws / "leak.py").write_text(LEAK)
    s = session(make_session, ws, [f"Read({DENY[deny]})"])
    r = s.call("Bash", {"command": "python3 leak.py"})
    assert secret not in r.text, f"{place}: the script printed the denied file's history"
    assert "old versions" in r.text and "Read(" in r.text, r.text  # says why it was not run unasked
    # the rule's file itself stays masked for what does run, and other work runs unasked
    r = s.call("Bash", {"command": "echo made > made.txt && cat made.txt"})
    assert "made" in r.text and not r.is_error, r.text


def test_the_script_is_real(bwrap, tmp_path, make_session):
    """Without a deny rule the same script prints every version: the test above does not pass for
    want of a history to find (and auto-allow still runs it unasked)."""
    for place, make in PLACES.items():
        base = tmp_path / place.replace(" ", "_").replace("'", "").replace(",", "")
        base.mkdir()
        ws, secret = make(base)
        (ws / "leak.py").write_text(LEAK)
        s = session(make_session, ws, [])
        r = s.call("Bash", {"command": "python3 leak.py"})
        kept = (1,) if "clone" in place else (1, 2, 3)  # a clone takes the history, not the stash or index
        assert all(f"{secret}-{i}" in r.text for i in kept), (place, r.text[-800:])


@pytest.mark.parametrize("case", ["no repository anywhere", "a rule only outside the workspace"])
def test_auto_allow_stays_where_no_history_can_hold_a_denied_file(bwrap, tmp_path, make_session, case):
    base = tmp_path / "t"
    base.mkdir()
    if case == "no repository anywhere":
        ws = base / "ws"
        ws.mkdir()
        (ws / ".env").write_text("KEY=x\n")
        deny = ["Read(./.env)"]
    else:
        ws, _ = plain(base)
        deny = ["Read(//nonexistent-elsewhere/**)"]
    s = session(make_session, ws, deny)
    r = s.call("Bash", {"command": "python3 -c 'print(6*7)'"})
    assert "42" in r.text and not r.is_error, r.text


@pytest.mark.parametrize("where", ["the user's settings", "the workspace's own settings"])
def test_only_the_user_can_accept_the_history_risk(bwrap, tmp_path, make_session, where):
    """`sandbox.filesystem.allowGitHistory` is the user's informed choice to keep sandboxed
    auto-allow beside Read deny rules in a repository (the script then prints the history, as
    the question warned); a checkout's own settings file cannot make that choice for them."""
    base = tmp_path / "t"
    base.mkdir()
    ws, secret = plain(base)
    (ws / "leak.py").write_text(LEAK)
    settings = {"sandbox": {"mode": "bwrap", "autoAllowBash": True}, "permissions": {"deny": ["Read(./.env)"]}}
    if where == "the user's settings":
        settings["sandbox"]["filesystem"] = {"allowGitHistory": True}
    else:
        (ws / ".codebelt").mkdir()
        (ws / ".codebelt" / "settings.json").write_text('{"sandbox": {"filesystem": {"allowGitHistory": true}}}')
    s = make_session(ws, settings=settings, sandbox="bwrap", approver=None)
    r = s.call("Bash", {"command": "python3 leak.py"})
    if where == "the user's settings":
        assert f"{secret}-1" in r.text and not r.is_error, r.text[-800:]
    else:
        assert secret not in r.text and "allowGitHistory" in r.text, r.text
