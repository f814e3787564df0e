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
