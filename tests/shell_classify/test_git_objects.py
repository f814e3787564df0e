"""git's object store and Read deny rules: every row of tests/fixtures/git_objects.tsv, decided
with no rule and with `Read(./.env)` denied, in a real repository whose history holds `.env`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codebelt.permissions.requests import CommandRequest
from codebelt.shell.analysis.git_args import parse_git
from codebelt.shell.analysis.git_objects import classify_revision

from .conftest import load_table, make_engine

ROWS = load_table("git_objects.tsv", columns=4)
DENY = {"permissions": {"deny": ["Read(./.env)"]}}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = Path(os.path.realpath(tmp_path_factory.mktemp("gitobj") / "repo"))
    (root / "src").mkdir(parents=True)
    (root / "sub").mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".env").write_text("SECRET=one\n")
    (root / "a.py").write_text("print('a')\n")
    (root / "src" / "main.py").write_text("def main(): pass\n")
    (root / "sub" / "x.txt").write_text("x\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    (root / ".env").write_text("SECRET=two\n")
    git(root, "commit", "-qam", "two")
    git(root, "tag", "v1")
    return root


def test_table_covers_both_sides():
    asks = [r for r in ROWS if r[1] == "allow" and r[2] != "allow"]
    stays = [r for r in ROWS if r[1] == "allow" and r[2] == "allow"]
    assert len(asks) >= 100 and len(stays) >= 50


@pytest.mark.parametrize("command,no_rule,denied,note", ROWS, ids=[f"{i}:{r[3][:40]}" for i, r in enumerate(ROWS)])
def test_git_objects(repo, command, no_rule, denied, note):
    plain = make_engine(repo).decide("Bash", [CommandRequest(command, repo)])
    assert plain.behavior == no_rule, f"{command!r} ({note}), no rule: got {plain.behavior}: {plain.reason}"
    d = make_engine(repo, settings=DENY).decide("Bash", [CommandRequest(command, repo)])
    assert d.behavior == denied, f"{command!r} ({note}), Read(./.env) denied: got {d.behavior}: {d.reason}"
    if no_rule == "allow" and denied != "allow":
        assert "Read(./.env)" in d.reason, d.reason  # the reason names the rule


# What a revision names, as far as its spelling tells (git_objects.classify_revision).
REVISIONS = [
    ("HEAD", "commit"), ("@", "commit"), ("HEAD~2", "commit"), ("HEAD^2", "commit"), ("main~0", "commit"),
    ("v1^{commit}", "commit"), ("HEAD@{1}", "commit"), ("@{-1}", "commit"), ("main@{upstream}", "commit"),
    (":/fix the bug", "commit"), ("HEAD~3..HEAD", "commit"), ("^HEAD~1", "commit"), ("HEAD^@", "commit"),
    ("main", "object"), ("v1", "object"), ("1a2b3c", "object"), ("v1^{}", "object"), ("v1^{blob}", "object"),
    ("main..feature", "object"), ("main^{/fix}", "object"),
    ("HEAD^{tree}", "tree"), ("1a2b3c^{tree}", "tree"), ("HEAD:", "tree"),
    ("HEAD:.env", "path"), (":.env", "path"), (":2:.env", "path"), ("HEAD^{tree}:.env", "path"),
    ("HEAD@{2026-01-01 10:00:00}:.env", "path"), ("HEAD:./.env", "path"),
    ("main:.env", "object"), ("1a2b3c:.env", "object"), ("1a2b3c^{tree}:.env", "object"),
]


@pytest.mark.parametrize("rev,kind", REVISIONS)
def test_classify_revision(rev, kind):
    assert classify_revision(rev)[0] == kind


@pytest.mark.parametrize("argv,cdir", [
    (["git", "-C", "sub", "status"], "sub"),
    (["git", "-C", "..", "-C", "other", "status"], "../other"),  # each relative -C is taken from the last
    (["git", "-Ca", "-C", "b", "log"], "a/b"),
    (["git", "-C", "a", "-C", "/abs", "log"], "/abs"),
    (["git", "-C", "", "log"], None),  # an empty -C changes nothing
])
def test_git_dash_c_combines(argv, cdir):
    assert parse_git(argv)[2] == cdir


# git's environment: under a variable that makes git read another repository, index, object
# store or configuration, a command's output is no longer bounded by the paths it names.
ELSEWHERE = {"GIT_DIR": "/elsewhere/.git", "GIT_WORK_TREE": "/elsewhere", "GIT_INDEX_FILE": "/elsewhere/index",
             "GIT_OBJECT_DIRECTORY": "/elsewhere/objects", "GIT_ALTERNATE_OBJECT_DIRECTORIES": "/elsewhere/objects",
             "GIT_COMMON_DIR": "/elsewhere/.git", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_PARAMETERS": "'a.b'='c'",
             "GIT_CONFIG_GLOBAL": "/elsewhere/cfg", "GIT_CONFIG_SYSTEM": "/elsewhere/cfg",
             "GIT_ICASE_PATHSPECS": "1", "GIT_NAMESPACE": "n", "GIT_DISCOVERY_ACROSS_FILESYSTEM": "1"}


@pytest.mark.parametrize("name", sorted(ELSEWHERE))
def test_a_git_variable_naming_another_repository_widens_what_a_command_prints(name, repo, monkeypatch):
    for other in ELSEWHERE:
        monkeypatch.delenv(other, raising=False)
    request = [CommandRequest("git diff HEAD~1 -- src/", repo)]
    assert make_engine(repo, settings=DENY).decide("Bash", request).behavior == "allow"  # control
    monkeypatch.setenv(name, ELSEWHERE[name])
    d = make_engine(repo, settings=DENY).decide("Bash", request)
    assert d.behavior == "ask" and name in d.reason and "Read(./.env)" in d.reason, d.reason


@pytest.mark.parametrize("name,value", [("GIT_SSH_COMMAND", "ssh -i k"), ("GIT_ASKPASS", "/x/askpass"),
                                        ("GIT_AUTHOR_NAME", "a"), ("GIT_CEILING_DIRECTORIES", "/nowhere")])
def test_git_variables_that_choose_no_repository_change_nothing(name, value, repo, monkeypatch):
    for other in ELSEWHERE:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(name, value)
    assert make_engine(repo, settings=DENY).decide("Bash", [CommandRequest("git diff HEAD~1 -- src/", repo)]).behavior == "allow"


# The top of the working tree whose paths `git show HEAD:x` names: the classifier's is git's
# own, by the same discovery (files/gitrepo.py), checked against `git rev-parse --show-toplevel`.
def _layouts(base: Path) -> dict[str, tuple[Path, dict[str, str]]]:
    """name -> (the directory git runs in, extra environment)."""
    out = {}
    plain = base / "plain"
    (plain / "sub" / "deeper").mkdir(parents=True)
    git(plain, "init", "-q")
    out["in a subdirectory"] = (plain / "sub" / "deeper", {})
    out["at the top"] = (plain, {})
    out["below a ceiling"] = (plain / "sub" / "deeper", {"GIT_CEILING_DIRECTORIES": str(plain)})
    out["a ceiling above the top"] = (plain / "sub", {"GIT_CEILING_DIRECTORIES": str(base)})
    linked = base / "linked"
    (linked / "sub").mkdir(parents=True)
    (linked / ".git").symlink_to(plain / ".git")
    out["a symlinked .git"] = (linked / "sub", {})
    gitfile = base / "gitfile"
    (gitfile / "sub").mkdir(parents=True)
    (gitfile / ".git").write_text(f"gitdir: {plain / '.git'}\n")
    out["a gitdir: file"] = (gitfile / "sub", {})
    (base / "none").mkdir()
    out["no repository"] = (base / "none", {})
    if os.geteuid() == 0:
        theirs = base / "theirs"
        (theirs / "sub").mkdir(parents=True)
        git(theirs, "init", "-q")
        for p in (theirs, theirs / ".git"):
            os.chown(p, 12345, 12345)
        out["another user's repository"] = (theirs / "sub", {})
    return out


def test_the_worktree_top_is_the_one_git_finds(tmp_path, monkeypatch):
    from codebelt.shell.analysis.analyze import _worktree_top

    base = Path(os.path.realpath(tmp_path))
    for name, (cwd, extra) in _layouts(base).items():
        for var in ("GIT_CEILING_DIRECTORIES", "GIT_DIR", "GIT_WORK_TREE", "GIT_DISCOVERY_ACROSS_FILESYSTEM"):
            monkeypatch.delenv(var, raising=False)
        for k, v in extra.items():
            monkeypatch.setenv(k, v)
        r = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True,
                           env={**os.environ, "HOME": str(base)})
        ours = _worktree_top(cwd)
        if r.returncode == 0:
            assert ours == Path(r.stdout.strip()), (name, ours, r.stdout)
        elif "dubious ownership" in r.stderr:
            assert ours == cwd.parent, name  # refused by both; its paths would be mapped from its top
        else:
            assert ours == cwd, (name, ours, r.stderr)  # git finds none: nothing to map
