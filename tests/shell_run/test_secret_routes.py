"""A Read deny rule on `.env` holds by effect: through a real Session, in a real repository whose
history, index, stash, tags and packs all hold versions of `.env`, no route a command can take
prints any of them — with the read-only jail (bwrap, Landlock) and without one. Ordinary work
on the other files still runs unasked."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from codebelt import Session

TAGS = ("history", "head", "stash", "index", "worktree")


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture
def repo(ws: Path) -> tuple[Path, dict[str, str]]:
    secrets = {t: f"{t}-{uuid.uuid4().hex}" for t in TAGS}
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("def main():\n    return 'visible-main'\n")
    (ws / "a.py").write_text("print('visible-a')\n")
    _git(ws, "init", "-q", "-b", "main")
    (ws / ".env").write_text(f"API_KEY={secrets['history']}\n")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "first")
    blob = _git(ws, "rev-parse", "HEAD:.env").strip()
    _git(ws, "tag", "blobtag", blob)  # a tag that points at the blob itself
    (ws / ".env").write_text(f"API_KEY={secrets['head']}\n")
    (ws / "src" / "main.py").write_text("def main():\n    return 'visible-main-2'\n")
    _git(ws, "commit", "-qam", "second")
    _git(ws, "gc", "-q")  # history packed; the stash and index below stay loose
    (ws / ".env").write_text(f"API_KEY={secrets['stash']}\n")
    _git(ws, "stash", "-q")
    (ws / ".env").write_text(f"API_KEY={secrets['index']}\n")
    _git(ws, "add", ".env")
    (ws / ".env").write_text(f"API_KEY={secrets['worktree']}\n")
    return ws, secrets


# Every route we know of to a version of .env (git's grammar, git's files, other programs).
ROUTES = [
    # blobs by path and by name
    "git show HEAD:.env", "git show HEAD~1:.env", "git show :.env", "git show HEAD:./.env", "git show @:.env",
    "git show main:.env", "git show 'HEAD@{0}:.env'", "git show HEAD^{tree}:.env", "git show blobtag",
    "git show --stat blobtag", "git show -s HEAD:.env", "git -C src show HEAD:../.env", "cd src && git show :../.env",
    "git --no-pager show HEAD:.env", "env git show HEAD:.env", "command git show HEAD:.env",
    "/usr/bin/git show HEAD:.env", "timeout 10 git show HEAD:.env", "bash -lc 'git show HEAD:.env'",
    "git show HEAD:.env | base64", "git cat-file -p HEAD:.env", "git cat-file blob HEAD~1:.env",
    "git cat-file -p blobtag", "git cat-file --batch-all-objects --batch",
    "git rev-list --objects --all | git cat-file --batch", "git ls-files -s | cut -c8-47 | git cat-file --batch",
    "git for-each-ref --format='%(raw)'", "git tag -l --format='%(raw)'", "git config --blob=HEAD:.env --list",
    # patches
    "git log -p", "git log -p --all", "git log --all -p -- .env", "git log -p --follow -- .env", "git log -U0",
    "git log -p -- src .env", "git whatchanged -p", "git reflog -p", "git stash show -p", "git stash list -p",
    "git stash show", "git diff", "git diff --cached", "git diff HEAD~1", "git diff HEAD~1 HEAD", "git diff stash@{0}",
    "git diff HEAD:.env HEAD~1:.env", "git diff-tree -p HEAD", "git diff-index -p HEAD", "git diff-files -p",
    "git status -v", "git status -vv", "git show", "git show HEAD~1", "git log --cc -p", "git log --word-diff -p",
    "git log --check -p", "git diff --check",
    # searching and blaming
    "git grep API_KEY", "git grep API_KEY HEAD", "git grep API_KEY HEAD~1", "git grep --cached API_KEY",
    "git grep --no-index API_KEY", "git grep -e API_KEY $(git rev-list --all)", "git blame HEAD -- .env",
    "git blame .env", "git annotate .env",
    # commands that are not read-only: they ask
    "git archive HEAD | tar -xOf -", "git format-patch --stdout -1 HEAD~1", "git bundle create - --all | strings",
    "git fast-export --all", "git notes show", "git show $(git rev-parse HEAD:.env)",
    # git's files read by other programs
    "cat .git/objects/*/*", "zlib-flate -uncompress < .git/objects/pack/*.pack",
    "python3 -c \"import zlib,glob; [print(zlib.decompress(open(p,'rb').read())) for p in glob.glob('.git/objects/??/*')]\"",
    "tar -cf - .git | tar -xOf - | strings", "grep -ra API_KEY .git", "rg -uuu -a API_KEY .git", "strings .git/index",
    "xxd .git/objects/pack/*.pack | head", "cat .git/ORIG_HEAD .git/refs/stash",
    # the file itself, and listings of it
    "cat .env", "head .env", "cat .e*", "cat ./.env", "grep -r API_KEY .", "rg -uuu API_KEY",
    "find . -type f | xargs cat", "git ls-files | xargs cat", "ls -a | xargs cat", "find . -name '.env*' | xargs cat",
]

# Ordinary work that must still run unasked, and what it prints.
STAYS = [
    ("git log --oneline", "second"),
    ("git status --short", ".env"),
    ("git diff --stat HEAD~1 HEAD", "src/main.py"),
    ("git show HEAD:src/main.py", "visible-main-2"),
    ("git show HEAD~1:src/main.py", "visible-main"),
    ("git log -p -- src", "visible-main-2"),
    ("git diff HEAD~1 -- src", "visible-main-2"),
    ("git grep visible -- src", "visible-main"),
    ("git blame a.py", "visible-a"),
    ("cat a.py", "visible-a"),
]

JAILS = {
    "bwrap jail": {"sandbox": {"mode": "off"}},  # the jail's backend is chosen whatever the mode
    "landlock jail": {"sandbox": {"mode": "landlock"}},
    "no jail": {"sandbox": {"mode": "off", "jail": False}},
}


def _session(make_session, root: Path, jail: str, deny: bool) -> Session:
    settings = {**JAILS[jail], "permissions": {"deny": ["Read(./.env)"] if deny else []}}
    return make_session(root, settings=settings, sandbox=JAILS[jail]["sandbox"]["mode"], approver=None)


@pytest.mark.parametrize("jail", list(JAILS))
def test_no_route_prints_a_denied_file(jail, repo, make_session):
    root, secrets = repo
    s = _session(make_session, root, jail, deny=True)
    expected = {"bwrap jail": "bwrap", "landlock jail": "landlock", "no jail": None}[jail]
    if s.sandbox().jail.backend != expected:
        pytest.skip(f"{jail} is not available here: {s.sandbox().jail.reason}")
    for command in ROUTES:
        r = s.call("Bash", {"command": command})
        leaked = [t for t, v in secrets.items() if v in r.text]
        assert not leaked, f"{jail}: `{command}` printed {leaked}:\n{r.text[-1500:]}"
    for command, shown in STAYS:
        r = s.call("Bash", {"command": command})
        if jail == "no jail" and "Permission to use Bash" in r.text:
            continue  # without a jail only exactly modelled programs run unasked
        assert shown in r.text, f"{jail}: `{command}`:\n{r.text[-1500:]}"
        assert not [t for t, v in secrets.items() if v in r.text], (command, r.text)


def test_the_routes_are_real(repo, make_session):
    """Without the rule the same commands do print .env's versions: the test above is not
    passing for want of a secret to find."""
    root, secrets = repo
    s = _session(make_session, root, "bwrap jail", deny=False)
    if s.sandbox().jail.backend is None:
        pytest.skip("no read-only jail here")
    found = set()
    for command in ("git show HEAD~1:.env", "git show HEAD:.env", "git stash show -p", "git diff", "git diff --cached",
                    "git cat-file --batch-all-objects --batch", "git show blobtag"):
        r = s.call("Bash", {"command": command})
        found |= {t for t, v in secrets.items() if v in r.text}
    assert found == set(TAGS)
