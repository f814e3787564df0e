"""Protected paths that do not exist yet: a command auto-allowed because the sandbox contains it
cannot create them, or what it creates is removed afterwards and the result says so. Verified by
effect with real sandboxed commands (bwrap): the path does not exist on the host afterwards.

The commands write through python3 so the classifier cannot see the path (it would ask for a
protected redirect target): the sandbox, not the classifier, is what is tested here."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.sandbox import Sandbox


def py(path: str, text: str = "x") -> str:
    return (f"python3 -c \"import os; p = '{path}'; os.makedirs(os.path.dirname(p) or '.', exist_ok=True); "
            f"open(p, 'w').write('{text}')\"")


# (label, command, path that must not exist afterwards, how: "undone" | "prevented")
CASES = [
    ("commondir", py(".git/commondir", "/tmp/evil"), ".git/commondir", "undone"),
    ("config.worktree", py(".git/config.worktree", "[core] fsmonitor = id"), ".git/config.worktree", "undone"),
    ("nested claude settings", py("sub/.claude/settings.json", "{}"), "sub/.claude", "undone"),
    ("nested codebelt settings", py("sub/.codebelt/settings.local.json", "{}"), "sub/.codebelt", "undone"),
    ("new gitfile", py("sub/.git", "gitdir: ../evil"), "sub/.git", "undone"),
    ("new nested repository", "git init -q deep/repo", "deep/repo/.git", "undone"),
    ("submodule hook", py(".git/modules/m/hooks/post-checkout", "#!/bin/sh"), ".git/modules/m/hooks/post-checkout",
     "undone"),
    ("submodule commondir", py(".git/modules/m/commondir", "/tmp"), ".git/modules/m/commondir", "undone"),
    ("envrc", "cp a.txt .envrc", ".envrc", "undone"),
    ("nested env", py("app/x/.env.production", "A=1"), "app/x/.env.production", "undone"),
    ("hook", py(".git/hooks/pre-commit", "#!/bin/sh"), ".git/hooks/pre-commit", "prevented"),
    ("top codebelt settings", py(".codebelt/settings.local.json", "{}"), ".codebelt/settings.local.json",
     "prevented"),
    ("top claude settings", py(".claude/settings.local.json", "{}"), ".claude/settings.local.json", "prevented"),
    # What makes a program run later: editor tasks, hook managers, tool and shell configuration.
    ("editor tasks", py(".vscode/tasks.json", "{}"), ".vscode", "undone"),
    ("nested editor tasks", py("web/.vscode/tasks.json", "{}"), "web/.vscode", "undone"),
    ("husky hook", py(".husky/pre-commit", "#!/bin/sh"), ".husky", "undone"),
    ("cargo config", py("crate/.cargo/config.toml", "[build]"), "crate/.cargo", "undone"),
    ("gitmodules", py(".gitmodules", "[submodule]"), ".gitmodules", "undone"),
    ("shell start-up", py("sub/.bashrc", "echo"), "sub/.bashrc", "undone"),
    ("mcp servers", py(".mcp.json", "{}"), ".mcp.json", "undone"),
]

SETTINGS = {"sandbox": {"mode": "bwrap", "autoAllowBash": True}}


@pytest.fixture(autouse=True, params=["resident", "one-shot"])
def how(request, monkeypatch) -> str:
    """Every case in bwrap's resident write sandbox (what the Bash runner uses) and in a bwrap
    built for the one command (the PTY path, the fallback)."""
    monkeypatch.setattr(Sandbox, "resident_sandbox", "now" if request.param == "resident" else False)
    return request.param


@pytest.fixture
def repo(ws: Path) -> Path:
    (ws / "a.txt").write_text("alpha\n")
    (ws / "sub").mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def sandboxed(repo: Path) -> Session:
    s = Session(repo, settings=SETTINGS, load_user_settings=False, audit=False)
    if not s.sandbox().status.protected_paths:
        s.close()
        pytest.skip(f"no bwrap sandbox here: {s.sandbox().status.reason}")
    return s


@pytest.mark.parametrize("label,command,path,how", CASES, ids=[c[0] for c in CASES])
def test_creations_are_prevented_or_undone(repo, label, command, path, how):
    with sandboxed(repo) as s:
        result = s.call("Bash", {"command": command})
    assert "Permission to use Bash" not in result.text, result.text  # it ran, unasked
    assert not os.path.lexists(repo / path), f"{label}: {path} exists after {command!r}\n{result.text}"
    if how == "undone":
        assert "Removed" in result.text and Path(path).parts[0] in result.text, result.text
    assert (repo / "a.txt").read_text() == "alpha\n"


def test_ordinary_writes_are_kept(repo):
    with sandboxed(repo) as s:
        result = s.call("Bash", {"command": py("src/app.env.py", "ok") + " && " + py("sub/notes.txt", "ok")})
    assert "Removed" not in result.text, result.text
    assert (repo / "src" / "app.env.py").read_text() == "ok" and (repo / "sub" / "notes.txt").read_text() == "ok"


def test_a_new_env_directory_is_left_alone(repo):
    """`python -m venv .env` is common: a new `.env` directory is not a secrets file."""
    with sandboxed(repo) as s:
        s.call("Bash", {"command": py(".env/bin/activate", "# venv")})
    assert (repo / ".env" / "bin" / "activate").exists()


def test_background_commands_are_undone_when_they_end(repo):
    with sandboxed(repo) as s:
        r = s.call("Bash", {"command": "sleep 0.3; " + py(".git/commondir", "/tmp/evil"), "run_in_background": True})
        assert not r.is_error, r.text
        task = r.data["backgroundTaskId"]
        seen = s.call("TaskOutput", {"task_id": task, "block": True, "timeout": 30000}).text
        deadline = time.monotonic() + 10
        while os.path.lexists(repo / ".git" / "commondir") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.lexists(repo / ".git" / "commondir")
        seen += s.call("Glob", {"pattern": "*.txt"}).text  # the next result says so, if none did yet
        assert "Removed .git/commondir" in seen, seen


def test_a_person_approved_command_keeps_what_it_made(repo):
    """The undo is for commands that ran unasked; a rule or a person chose otherwise."""
    settings = {**SETTINGS, "permissions": {"allow": ["Bash(git init *)"]}}
    with Session(repo, settings=settings, load_user_settings=False, audit=False) as s:
        if not s.sandbox().status.protected_paths:
            pytest.skip("no bwrap sandbox here")
        r = s.call("Bash", {"command": "git init -q deep/repo"})
    assert (repo / "deep" / "repo" / ".git").is_dir(), r.text


# (label, what exists before, command: a directory above it renamed away and another put in its
# place, the planted path that must be gone, where the original went and what it holds)
SWAPS = [
    ("nested repository's parent", "vendor/lib/.git/config",
     "mv vendor v2 && git init -q vendor/lib && " + py("vendor/lib/.git/hooks/post-checkout", "#!/bin/sh"),
     "vendor/lib/.git", "v2/lib/.git/config"),
    ("nested repository's grandparent", "vendor/lib/.git/config",
     "mv vendor/lib vendor/l2 && " + py("vendor/lib/.git/config", "[core] fsmonitor = id"),
     "vendor/lib/.git", "vendor/l2/.git/config"),
    ("nested env file's parent", "app/x/.env.production",
     "mv app app2 && " + py("app/x/.env.production", "A=evil"), "app/x/.env.production", "app2/x/.env.production"),
    ("nested agent settings' parent", "pkg/.claude/settings.json",
     "mv pkg p2 && " + py("pkg/.claude/settings.json", "{}"), "pkg/.claude", "p2/.claude/settings.json"),
    ("shell start-up's parent", "sub/.bashrc", "mv sub s2 && " + py("sub/.bashrc", "echo evil"), "sub/.bashrc",
     "s2/.bashrc"),
    ("submodule's directory's parent", ".git/modules/m/config",
     "mv .git/modules .git/mods && " + py(".git/modules/m/hooks/post-checkout", "#!/bin/sh"),
     ".git/modules/m/hooks/post-checkout", ".git/mods/m/config"),
]


@pytest.mark.parametrize("label,existing,command,planted,moved", SWAPS, ids=[c[0] for c in SWAPS])
def test_one_put_in_place_of_a_protected_path_is_undone_and_the_original_kept(repo, label, existing, command,
                                                                               planted, moved):
    """What is new is an object that was at no guarded path before: the one planted where the
    original was is removed, and the original, carried along by the rename, is the user's."""
    original = repo / existing
    original.parent.mkdir(parents=True, exist_ok=True)
    if existing.endswith(".git/config") and existing != ".git/modules/m/config":
        subprocess.run(["git", "init", "-q", str(original.parent.parent)], check=True)
    else:
        original.write_text("original\n")
    text = original.read_text()
    with sandboxed(repo) as s:
        result = s.call("Bash", {"command": command})
    assert "Permission to use Bash" not in result.text, result.text
    assert not os.path.lexists(repo / planted), f"{label}: {planted} kept after {command!r}\n{result.text}"
    assert "Removed" in result.text, result.text
    assert (repo / moved).read_text() == text, f"{label}: the original was not kept at {moved}\n{result.text}"


EXISTING = [".vscode/tasks.json", ".gitmodules", "sub/.bashrc", "crate/.cargo/config.toml"]


@pytest.mark.parametrize("rel", EXISTING)
def test_existing_config_that_runs_programs_is_read_only(repo, rel):
    target = repo / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("original\n")
    with sandboxed(repo) as s:
        s.call("Bash", {"command": py(rel, "pwned")})
    assert target.read_text() == "original\n"


def test_a_root_holding_the_home_directory_binds_its_configuration_read_only(tmp_path, monkeypatch):
    from codebelt.sandbox.protected import protected_paths

    home = tmp_path / "home"
    for rel in (".bashrc", ".ssh/config", ".local/bin/tool", "bin/x", "work/app.py"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("x")
    monkeypatch.setenv("HOME", str(home))
    for root in (home, tmp_path):
        found = protected_paths(root, (root,))
        ro = {p for p, kind in found if kind == "ro"}
        assert {home / ".bashrc", home / ".ssh", home / ".local", home / "bin"} <= ro
        assert home / "work" not in ro
        # held in place: renamed away, the home directory would take the binds along
        assert ((home, "pin") in found) == (root != home)


def test_the_home_directory_in_a_root_cannot_be_renamed_away(tmp_path, monkeypatch):
    """`mv home home2 && mkdir -p home/.ssh`: the binds go with the renamed directory, and the
    command's own `.ssh` (not a name whose creation is undone) would be the user's from then on."""
    root = tmp_path / "root"
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("original\n")
    monkeypatch.setenv("HOME", str(home))
    with sandboxed(root) as s:
        r = s.call("Bash", {"command": "mv home home2; " + py("home/.ssh/authorized_keys", "ssh-ed25519 evil")})
    assert "Permission to use Bash" not in r.text, r.text
    assert not (home / ".ssh" / "authorized_keys").exists() and not (root / "home2").exists(), r.text
    assert (home / ".ssh" / "config").read_text() == "original\n"
