"""Read-only verdicts are backed by the OS: through a real Session, commands judged read-only run
in the read-only jail (a classifier blind spot changes nothing on the host); where no jail is
available, or a command mixes read-only parts with others, only exactly modelled programs run
without asking."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.permissions.engine import PermissionEngine
from codebelt.permissions.requests import CommandRequest
from codebelt.settings import Settings
from codebelt.workspace import Workspace


@pytest.fixture
def repo(ws: Path) -> Path:
    (ws / "a.txt").write_text("alpha\n")
    (ws / "sub").mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


# Repository config that makes a "read-only" git command run a program: the classifier does not
# read repository config, the jail makes the program harmless.
REPO_PROGRAMS = {
    "fsmonitor": (["core.fsmonitor"], "git status --short"),
    "diff-external": (["diff.external"], "git diff"),
    "textconv": (["diff.txt.textconv"], "git diff"),
}


@pytest.mark.parametrize("name", sorted(REPO_PROGRAMS))
def test_repository_config_programs_change_nothing(name, repo, tmp_path):
    keys, command = REPO_PROGRAMS[name]
    marker = tmp_path / f"pwned-{uuid.uuid4().hex[:8]}"
    payload = f"touch {marker}; echo pwned >> {repo}/a.txt; false"
    (repo / ".gitattributes").write_text("*.txt diff=txt\n")
    subprocess.run(["git", "-C", str(repo), "add", "a.txt"], check=True)
    (repo / "a.txt").write_text("alpha\nchanged\n")
    for key in keys:  # last: git on the host must not run the payload itself
        subprocess.run(["git", "-C", str(repo), "config", key, payload], check=True)
    with Session(repo) as s:
        if s.sandbox().jail.backend is None:
            pytest.skip(f"no read-only jail here: {s.sandbox().jail.reason}")
        result = s.call("Bash", {"command": command})
        assert "Permission to use Bash" not in result.text, result.text  # it ran, unasked
    assert not marker.exists()
    assert (repo / "a.txt").read_text() == "alpha\nchanged\n"


def engine(root: Path, jail: bool, settings: dict | None = None, sandboxed: bool = False) -> PermissionEngine:
    data = {"sandbox": {"mode": "bwrap" if sandboxed else "off"}, **(settings or {})}
    return PermissionEngine(Settings([("test", data)]), Workspace(root), "default",
                            jail_available=lambda: jail, sandbox_contains=lambda: sandboxed)


# (command, with a jail, without one)
UNJAILED = [
    ("ls -la", "allow", "allow"),
    ("cat a.txt | wc -l", "allow", "allow"),
    ("grep -rn alpha .", "allow", "allow"),
    ("cd sub && ls", "allow", "allow"),
    ("head -n 3 a.txt && tail a.txt", "allow", "allow"),
    ("git status", "allow", "ask"),
    ("git log --oneline", "allow", "ask"),
    ("find . -name '*.txt'", "allow", "ask"),
    ("sed -n 1p a.txt", "allow", "ask"),
    ("sort a.txt", "allow", "ask"),
    ("ls && git diff", "allow", "ask"),
    ("jq . a.txt", "allow", "ask"),
]


@pytest.mark.parametrize("command,jailed,unjailed", UNJAILED, ids=[c for c, _, _ in UNJAILED])
def test_read_only_set_shrinks_without_a_jail(command, jailed, unjailed, repo):
    for jail, expected in ((True, jailed), (False, unjailed)):
        d = engine(repo, jail).decide("Bash", [CommandRequest(command, repo)])
        assert d.behavior == expected, (jail, d.reason)
        if expected == "ask" and not jail:
            assert "jail" in d.reason


MIXED = [
    # `make` is allowed by a rule, so the command runs outside the jail: its read-only parts
    # must stand on their own
    ("make && ls", "allow"),
    ("make && cat a.txt", "allow"),
    ("make && git status", "ask"),
    ("make; find . -name x", "ask"),
]


@pytest.mark.parametrize("command,expected", MIXED, ids=[c for c, _ in MIXED])
def test_mixed_commands_are_not_jailed(command, expected, repo):
    e = engine(repo, True, {"permissions": {"allow": ["Bash(make)"]}})
    d = e.decide("Bash", [CommandRequest(command, repo)])
    assert d.behavior == expected, d.reason


def test_write_sandbox_auto_allow_contains_loose_verdicts(repo):
    e = engine(repo, False, {"sandbox": {"mode": "bwrap", "autoAllowBash": True}}, sandboxed=True)
    assert e.decide("Bash", [CommandRequest("git status", repo)]).behavior == "allow"


ENV_WRITES = [
    "echo TOKEN=x > .env",  # the classifier asks (a protected redirect target) …
    "printf 'NODE_OPTIONS=--require ./x.js' > .env.local",
    "mkdir -p app && echo A=1 > app/.env.production",
    "ln -s /etc/passwd .env.link",  # … these it cannot see: the file appears, and is removed
    "cp a.txt .envrc",
    "mkdir -p app && cp a.txt app/.env",
    "python3 -c \"open('.env', 'w').write('X=1')\"",
    "touch .e''nv.test",
]


@pytest.mark.parametrize("command", ENV_WRITES)
def test_sandboxed_auto_allow_cannot_create_env_files(command, repo):
    """Existing .env files are read-only mounts; new ones cannot be, so they are removed after a
    command that ran unasked because the sandbox contains it, and the result says so."""
    settings = {"sandbox": {"mode": "bwrap", "autoAllowBash": True}}
    with Session(repo, settings=settings) as s:
        if not s.sandbox().status.protected_paths:
            pytest.skip(f"no bwrap sandbox here: {s.sandbox().status.reason}")
        before = {p for p in repo.rglob(".env*")}
        result = s.call("Bash", {"command": command})
    assert {p for p in repo.rglob(".env*")} == before
    if "Permission to use Bash" not in result.text:  # it ran: then the removal is reported
        assert "Removed" in result.text and ".env" in result.text, result.text


ORDINARY = [
    ("ls", "a.txt"),
    ("cat a.txt", "alpha"),
    ("grep -rn alpha .", "./a.txt:1:alpha"),
    ("git status --short", "a.txt"),
    ("git log --oneline", "first"),
    ("git diff", "+more"),
    ("find . -name '*.txt'", "./a.txt"),
    ("cat a.txt | grep alp | wc -l", "1"),
    ("cd sub && ls -a", ".."),
    ("head -1 a.txt && tail -1 a.txt", "more"),
]


@pytest.mark.parametrize("command,expected", ORDINARY, ids=[c for c, _ in ORDINARY])
def test_ordinary_read_only_work_runs_unasked_in_the_jail(command, expected, repo):
    subprocess.run(["git", "-C", str(repo), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "first"], check=True)
    (repo / "a.txt").write_text("alpha\nmore\n")
    with Session(repo) as s:
        if s.sandbox().jail.backend is None:
            pytest.skip(f"no read-only jail here: {s.sandbox().jail.reason}")
        result = s.call("Bash", {"command": command})
    assert not result.is_error and expected in result.text, result.text
    assert result.data["exitCode"] == 0, result.text
