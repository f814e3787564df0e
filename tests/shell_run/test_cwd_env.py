"""The working directory persists inside the workspace; environment variables do not."""

from __future__ import annotations

import os
from pathlib import Path


def _pwd(s) -> str:
    r = s.call("Bash", {"command": "pwd -P"})
    assert not r.is_error, r.text
    return r.text.strip()


def test_cd_persists_only_when_the_command_succeeds(shell):
    s = shell.session()
    root = os.path.realpath(shell.ws)
    r = s.call("Bash", {"command": "mkdir -p 'a b/c' && cd 'a b/c' && exit 3"})
    assert r.data["exitCode"] == 3 and r.is_error
    assert _pwd(s) == root  # as Claude Code: a failed command moves nobody
    s.call("Bash", {"command": "cd 'a b/c'"})
    assert _pwd(s) == f"{root}/a b/c"
    s.call("Bash", {"command": "cd .."})
    assert _pwd(s) == f"{root}/a b"
    r = s.call("Bash", {"command": "ls"})
    assert r.text.strip() == "c"


# Each command ends outside the workspace: the shell goes back to the workspace root and says so
# (as Claude Code); a command that failed moves nobody.
OUTSIDE = [
    "cd /",
    "cd /etc && echo moved",
    'cd "$TMPDIR"',  # the session temp dir is not the workspace
    "ln -sfn /usr link && cd link",  # a symlink inside pointing outside is outside
    "cd ../..",
]


def test_cd_outside_is_refused(shell):
    s = shell.session()
    root = os.path.realpath(shell.ws)
    for command in OUTSIDE:
        s.call("Bash", {"command": "mkdir -p sub && cd sub"})
        r = s.call("Bash", {"command": command})
        assert r.text.endswith(f"Shell cwd was reset to {shell.ws}"), (command, r.text)
        assert _pwd(s) == root, command
    s.call("Bash", {"command": "cd sub"})
    r = s.call("Bash", {"command": "cd /tmp; exit 5"})
    assert "reset" not in r.text and _pwd(s) == f"{root}/sub"


def test_forged_or_missing_record_keeps_directory(shell):
    s = shell.session()
    root = os.path.realpath(shell.ws)
    s.call("Bash", {"command": "mkdir -p one two && cd one"})
    # the command replaces the EXIT trap: nothing is recorded, the directory stays
    r = s.call("Bash", {"command": "trap - EXIT; cd ../two"})
    assert not r.is_error
    assert _pwd(s) == f"{root}/one"
    # a function named pwd cannot answer for the trap
    s.call("Bash", {"command": "pwd() { echo /etc; }; cd ../two"})
    assert _pwd(s) == f"{root}/two"
    # exec'd programs never return to the trap: nothing recorded
    s.call("Bash", {"command": "cd ../one && exec true"})
    assert _pwd(s) == f"{root}/two"


def test_deleted_directory_falls_back_to_root(shell):
    s = shell.session()
    root = os.path.realpath(shell.ws)
    s.call("Bash", {"command": "mkdir gone && cd gone"})
    os.rmdir(Path(root) / "gone")
    r = s.call("Bash", {"command": "pwd -P"})
    assert r.text.startswith(root)
    assert "no longer exists" in r.text


def test_environment_does_not_persist(shell, monkeypatch):
    s = shell.session()
    s.call("Bash", {"command": "export CB_PERSIST=1; alias ll=ls"})
    r = s.call("Bash", {"command": 'echo "[${CB_PERSIST:-unset}]"'})
    assert r.text.strip() == "[unset]"


def test_env_policy_clean_and_allow(shell, monkeypatch):
    monkeypatch.setenv("CB_SECRET_TOKEN", "s3cret")
    monkeypatch.setenv("CB_VISIBLE", "yes")
    inherit = shell.session()
    assert "s3cret" not in inherit.call("Bash", {"command": "echo $CB_SECRET_TOKEN"}).text  # looks secret
    clean = shell.session(bash={"env": "clean", "envAllow": ["CB_VIS*"]})
    r = clean.call("Bash", {"command": 'echo "[$CB_SECRET_TOKEN][$CB_VISIBLE]"; echo "$TMPDIR"; command -v ls'})
    lines = r.text.splitlines()
    assert lines[0] == "[][yes]"
    assert lines[1] == str(clean.temp_dir)
    assert lines[2].endswith("/ls")  # PATH is kept
