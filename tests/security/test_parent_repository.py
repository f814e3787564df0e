"""A repository found by walking up from the workspace is used only where git itself would use
it: a `.git` above the workspace that belongs to another user (`/tmp/.git` planted by someone
else) is refused as git refuses it ("dubious ownership"), and nothing of it is read — not its
index by the checkpoints, not its ignore rules by Grep and Glob.

Each case is checked against git itself where git has an opinion (`git rev-parse` in the
workspace), so the rule cannot drift from git's."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codebelt.checkpoints import Checkpoints
from codebelt.checkpoints.gitindex import find_repo
from codebelt.files.gitrepo import find_repository
from codebelt.search.ignore_files import outside_reads


GIT = shutil.which("git")
NOBODY = 65534
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
       "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}
pytestmark = [
    pytest.mark.skipif(GIT is None, reason="git is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's repository needs root (chown)"),
]


def git(cwd: Path, *args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env or ENV, check=check)


def chown_tree(path: Path, uid: int) -> None:
    os.lchown(path, uid, uid)
    if path.is_dir() and not path.is_symlink():
        for dirpath, dirnames, filenames in os.walk(path):
            for name in dirnames + filenames:
                os.lchown(os.path.join(dirpath, name), uid, uid)


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """`parent/.git`, a real repository tracking `proj/a.txt`, and the workspace `parent/proj`
    (the user's). Who owns what is up to each case."""
    parent = tmp_path / "parent"
    ws = parent / "proj"
    ws.mkdir(parents=True)
    (ws / "a.txt").write_text("mine\n")
    (parent / ".gitignore").write_text("*.txt\n")
    git(parent, "init", "-q", "-b", "main")
    git(parent, "add", "-f", "proj/a.txt")
    git(parent, "commit", "-qm", "x")
    idx = parent / ".git" / "index"
    os.utime(idx, ns=(os.stat(idx).st_mtime_ns + 2_000_000_000,) * 2)  # not racily clean
    return parent, ws


def _gitfile_elsewhere(parent: Path, owner_of: str) -> None:
    """`parent/.git` becomes a `gitdir:` file naming the repository moved elsewhere; `owner_of`
    says which of the two then belongs to nobody."""
    moved = parent.parent / "moved.git"
    (parent / ".git").rename(moved)
    (parent / ".git").write_text(f"gitdir: {moved}\n")
    chown_tree(moved if owner_of == "target" else parent / ".git", NOBODY)


# case → (how the parent repository is planted, whether git itself uses it)
CASES = {
    "the user's own repository (control)": (lambda p: None, True),
    ".git belongs to another user": (lambda p: chown_tree(p / ".git", NOBODY), False),
    "the top directory belongs to another user": (lambda p: os.lchown(p, NOBODY, NOBODY), False),
    "only the index belongs to the user, the rest to another": (
        lambda p: (chown_tree(p / ".git", NOBODY), os.lchown(p / ".git" / "index", 0, 0)), False),
    "a gitdir: file naming another user's directory": (lambda p: _gitfile_elsewhere(p, "target"), False),
    "another user's gitdir: file naming the user's directory": (lambda p: _gitfile_elsewhere(p, "file"), False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_parent_repository_is_used_exactly_when_git_uses_it(planted, case):
    parent, ws = planted
    plant, git_uses = CASES[case]
    plant(parent)
    chown_tree(ws, 0)
    os.lchown(parent.parent, 0, 0)
    rev = git(ws, "rev-parse", "--show-toplevel", check=False)
    assert (rev.returncode == 0) == git_uses, rev.stderr
    if not git_uses:
        assert "dubious ownership" in rev.stderr

    found = find_repository(ws, env=ENV)
    assert found is not None and found.top == parent
    assert (found.refused is None) == git_uses
    repo = find_repo(str(ws))
    assert (repo.why_not is None) == git_uses, repo.why_not
    files, markers = outside_reads([ws], env=ENV)
    seen = [*files, *markers]
    assert any(".git" in p.parts for p in seen) == git_uses
    if not git_uses:
        assert "uid 65534" in found.refused and "dubious ownership" in found.refused


def test_another_users_index_cannot_choose_a_checkpoints_pre_image(planted, tmp_path):
    """The attack itself: the planted index names the user's file with its exact stat and the
    id of the attacker's blob. Used, a rewind would write the attacker's content."""
    parent, ws = planted
    evil = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=parent, input="EVIL\n",
                          capture_output=True, text=True, env=ENV, check=True).stdout.strip()
    mine = hashlib.sha1(b"blob 5\0mine\n").hexdigest()
    idx = parent / ".git" / "index"
    data = idx.read_bytes()
    assert bytes.fromhex(mine) in data
    body = data[:-20].replace(bytes.fromhex(mine), bytes.fromhex(evil))
    st = os.stat(idx)
    idx.write_bytes(body + hashlib.sha1(body).digest())
    os.utime(idx, ns=(st.st_atime_ns, st.st_mtime_ns))

    def pre_image() -> str:
        book = Checkpoints(tmp_path / f"store-{os.urandom(4).hex()}", [ws], "s")
        try:
            book.start_tracking()
            book.tracker.filled.wait(30)
            return book.tracker.entries[str(ws / "a.txt")].hash or ""
        finally:
            book.close()

    assert pre_image() == "git:" + evil  # the user's own repository is trusted, as git trusts it
    chown_tree(parent / ".git", NOBODY)
    got = pre_image()
    assert not got.startswith("git:"), got  # copied from the file itself


@pytest.mark.parametrize("kind", ["symlink to another user's repository", "symlink to the user's repository"])
def test_a_symlinked_dot_git_above_is_not_followed(planted, kind):
    parent, ws = planted
    real = parent.parent / "real.git"
    (parent / ".git").rename(real)
    (parent / ".git").symlink_to(real)
    if kind.startswith("symlink to another"):
        chown_tree(real, NOBODY)
    found = find_repository(ws, env=ENV)
    assert found.refused and "symlink" in found.refused
    assert find_repo(str(ws)).why_not
    files, markers = outside_reads([ws], env=ENV)
    assert not any(".git" in p.parts for p in [*files, *markers])


def test_ceiling_directories_and_file_system_boundaries_stop_the_walk(planted):
    parent, ws = planted
    chown_tree(parent / ".git", NOBODY)
    assert find_repository(ws, env={**ENV, "GIT_CEILING_DIRECTORIES": str(parent)}) is None
    # the start directory itself is examined whatever the ceilings say (as git)
    assert find_repository(parent, env={**ENV, "GIT_CEILING_DIRECTORIES": str(parent)}).top == parent
    # git's answer with the same ceiling: no repository at all
    rev = git(ws, "rev-parse", "--show-toplevel", env={**ENV, "GIT_CEILING_DIRECTORIES": str(parent)}, check=False)
    assert rev.returncode != 0 and "not a git repository" in rev.stderr
    # /proc is another file system: nothing above it is looked at
    assert find_repository("/proc/self", env=ENV) is None or find_repository("/proc/self", env=ENV).top.is_relative_to("/proc")


SAFE = {
    "no safe.directory": ("", False),
    "safe.directory = the top": ("[safe]\n\tdirectory = {top}\n", True),
    "safe.directory = *": ("[safe]\n\tdirectory = *\n", True),
    "a prefix above with /* (older git: nothing)": ("[safe]\n\tdirectory = {above}/*\n", None),
    "an emptied list": ("[safe]\n\tdirectory = *\n\tdirectory =\n", False),
    "another directory": ("[safe]\n\tdirectory = {above}/other\n", False),
    "a subsection is another key": ('[safe "x"]\n\tdirectory = *\n', False),
}


@pytest.mark.parametrize("case", list(SAFE))
def test_safe_directory_in_the_users_config_trusts_as_git_does(planted, tmp_path, case):
    parent, ws = planted
    chown_tree(parent / ".git", NOBODY)
    text, safe = SAFE[case]
    cfg = tmp_path / "global.gitconfig"
    cfg.write_text(text.format(top=parent, above=parent.parent))
    env = {**ENV, "GIT_CONFIG_GLOBAL": str(cfg)}
    rev = git(ws, "rev-parse", "--show-toplevel", env=env, check=False)
    if safe is not None:
        assert (rev.returncode == 0) == safe, rev.stderr
    found = find_repository(ws, env=env)
    assert (found.refused is None) == bool(safe), found.refused  # never wider than git
    # a repository's own config is never where safe.directory comes from
    (parent / ".git" / "config").write_text("[safe]\n\tdirectory = *\n")
    assert (find_repository(ws, env={**ENV}).refused is None) is False


def test_as_root_under_sudo_the_invoking_users_repository_is_the_users(planted):
    parent, ws = planted
    chown_tree(parent / ".git", NOBODY)
    os.lchown(parent, NOBODY, NOBODY)
    assert find_repository(ws, env=ENV).refused
    assert find_repository(ws, env={**ENV, "SUDO_UID": str(NOBODY)}).refused is None
    rev = git(ws, "rev-parse", "--show-toplevel", env={**ENV, "SUDO_UID": str(NOBODY)}, check=False)
    assert rev.returncode == 0, rev.stderr


# -- ignore rules above the workspace: Grep and Glob, jailed and not ----------------------------


@pytest.mark.parametrize("planted_as", ["another user's repository and .gitignore", "another user's .ignore",
                                        "the user's own repository and .gitignore (control)"])
def test_another_users_ignore_rules_above_hide_nothing(planted, make_session, confined, planted_as):
    parent, ws = planted
    (ws / "b.txt").write_text("needle\n")
    if planted_as == "another user's .ignore":
        shutil.rmtree(parent / ".git")
        (parent / ".gitignore").rename(parent / ".ignore")
    if not planted_as.endswith("(control)"):
        chown_tree(parent, NOBODY)
        chown_tree(ws, 0)
    sandbox = {"jail": False} if confined == "unjailed" else {"mode": confined}
    s = make_session(root=ws, settings={"sandbox": sandbox})
    if confined != "unjailed" and s.sandbox().jail.backend != confined:
        pytest.skip(f"no {confined} jail here: {s.sandbox().jail.reason}")
    grep = s.call("Grep", {"pattern": "needle", "output_mode": "files_with_matches"})
    glob = s.call("Glob", {"pattern": "*.txt"})
    hidden = planted_as.endswith("(control)")  # the user's own rules apply, as git and rg apply them
    assert ("b.txt" in grep.text) != hidden, grep.text
    assert ("b.txt" in glob.text) != hidden, glob.text


@pytest.mark.parametrize("variables", [("GIT_DIR",), ("GIT_DIR", "GIT_WORK_TREE"), ("GIT_COMMON_DIR",)])
def test_a_repository_named_in_the_environment_is_not_taken_in_process(planted, tmp_path, monkeypatch, variables):
    """codebelt's own readers find the repository by discovery only: `GIT_DIR` and friends in
    its environment (another user's directory) choose nothing it reads."""
    parent, ws = planted
    chown_tree(parent / ".git", NOBODY)
    lone = tmp_path / "lone"
    lone.mkdir()
    for name in variables:
        monkeypatch.setenv(name, str(parent / ".git") if name != "GIT_WORK_TREE" else str(parent))
    assert find_repo(str(ws)).why_not  # the planted one is still refused
    assert find_repo(str(lone)) is None or find_repo(str(lone)).top != parent
    files, markers = outside_reads([lone])
    assert not any(str(parent) in str(p) for p in [*files, *markers])
