"""Read deny rules bind the write sandbox too: a command a person approved, or one auto-allowed
because the sandbox contains it, cannot read what the settings deny — by its name, through a
symlink or hard link old or new, after renaming it or a directory above it, through the
session's TMPDIR, or outside the workspace (`~/.aws/**`, a file in the home directory).

Tried per backend (bwrap and Landlock, each where it works) through the sandbox's own wrapper
with the masks a real PermissionEngine computes as each command starts, and through a real
Session for an approved command. Every check is by effect: a planted secret must not come back.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.permissions.engine import PermissionEngine
from codebelt.sandbox import Sandbox, SandboxConfig
from codebelt.settings import Settings
from codebelt.workspace import Workspace

from ..sandbox.conftest import WRITE_SANDBOXES, backend_unusable, spawn, write_sandbox

SECRETS = {
    ".env": "SECRET-dotenv-7f1",
    "deep/a/b/key.pem": "SECRET-pem-3c9",
    "private/token.txt": "SECRET-token-51d",
}
HOME_SECRETS = {".aws/credentials": "SECRET-aws-a02", ".netrc": "SECRET-netrc-e44"}
DENY = ["Read(./.env)", "Read(**/*.pem)", "Read(./private/token.txt)", "Read(~/.aws/**)", "Read(~/.netrc)"]


@pytest.fixture(params=WRITE_SANDBOXES)
def backend(request, monkeypatch) -> str:
    """bwrap in the session's resident sandbox and built per command, and Landlock."""
    return write_sandbox(request.param, monkeypatch)


@pytest.fixture
def planted(ws: Path, tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    home = tmp_path / "home"
    for base, files in ((ws, SECRETS), (home, HOME_SECRETS)):
        for rel, text in files.items():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_text(text + "\n")
    (ws / "a.txt").write_text("plain\n")
    os.symlink(".env", ws / "envlink")
    os.link(ws / ".env", ws / "notes.txt")
    os.symlink(home / ".aws/credentials", ws / "awslink")
    os.link(home / ".aws/credentials", ws / "awshard")
    monkeypatch.setenv("HOME", str(home))
    return ws, home


def _sandbox(ws: Path, tmp_path: Path, backend: str):
    tmpd = tmp_path / "session-tmp"
    tmpd.mkdir(exist_ok=True)
    settings = Settings([("test", {"permissions": {"deny": DENY}, "sandbox": {"mode": backend}})])
    engine = PermissionEngine(settings, Workspace(ws), "default")
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode=backend, name="codebelt-test"))
    return sb, sb.wrapper(engine.read_denied_paths), tmpd


def _run(wrap, command: str, ws: Path, tmpd: Path) -> str:
    return spawn(wrap(["/bin/bash", "-c", command], ws, dict(os.environ, TMPDIR=str(tmpd))), ws).stdout


# Each attack: commands run one after the other (each one masked as it starts).
ATTACKS = {
    "name": ["cat .env"],
    "dotdot": ["cd deep && cat ../.env"],
    "glob-deep": ["cat deep/a/b/key.pem"],
    "find-exec": ["find . -name '*.pem' -exec cat {} +"],
    "grep-recursive": ["grep -r SECRET . || true"],
    "old-symlink": ["cat envlink"],
    "old-hard-link": ["cat notes.txt"],
    "new-symlink": ["ln -s .env l2; cat l2"],
    "new-hard-link": ["ln .env h2; cat h2"],
    "new-hard-link-later": ["ln .env h3", "cat h3"],
    "rename-same-command": ["mv .env m2; cat m2"],
    "rename-then-read": ["mv .env m3", "cat m3"],
    "rename-parent-then-read": ["mv private public", "cat public/token.txt"],
    "copy-to-tmpdir": ["cp .env \"$TMPDIR/c\"; cat \"$TMPDIR/c\""],
    "move-to-tmpdir": ["mv .env \"$TMPDIR/x\"; cat \"$TMPDIR/x\"", "cat \"$TMPDIR/x\""],
    "home-glob": ["cat ~/.aws/credentials"],
    "home-file": ["cat \"$HOME/.netrc\""],
    "link-to-home": ["cat awslink"],
    "hard-link-to-home": ["cat awshard"],
    "home-listing": ["cat ~/.aws/* 2>&1; ls -la ~/.aws"],
    "python": ["python3 -c \"import os; print(open('.e'+'nv').read(), open(os.path.expanduser('~/.netrc')).read())\""],
    "tar": ["tar cf - . 2>/dev/null | tar xOf - 2>/dev/null"],
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_approved_commands_do_not_read_denied_files(attack, backend, planted, tmp_path):
    ws, home = planted
    sb, wrap, tmpd = _sandbox(ws, tmp_path, backend)
    try:
        out = "".join(_run(wrap, c, ws, tmpd) for c in ATTACKS[attack])
    finally:
        sb.close()
    leaked = [s for s in [*SECRETS.values(), *HOME_SECRETS.values()] if s in out]
    assert not leaked, out[-2000:]


def test_ordinary_work_still_works(backend, planted, tmp_path):
    ws, _ = planted
    (ws / "src").mkdir()
    sb, wrap, tmpd = _sandbox(ws, tmp_path, backend)
    try:
        out = _run(wrap, "cat a.txt; mkdir -p src/build && echo made > src/build/out.txt && cat src/build/out.txt; "
                         "echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"", ws, tmpd)
        assert out.split() == ["plain", "made", "t"], out
        # Directly in a directory that holds a masked path (here the top, for .env): under bwrap
        # all as usual; under Landlock an entry made there after the rules were built cannot be
        # read by the same command (the directory's entries are granted one by one) — the next
        # command's rules include it.
        out = _run(wrap, "mkdir -p build && echo made > build/out.txt && cat build/out.txt", ws, tmpd)
        if backend == "bwrap":
            assert out.strip() == "made", out
        assert _run(wrap, "cat build/out.txt", ws, tmpd).strip() == "made"
        # a denied name the command creates itself: it may write it (and, under bwrap, read it
        # back in the same command); the next command does not see it
        out = _run(wrap, "echo fresh > sub.pem; cat sub.pem", ws, tmpd)
        assert (ws / "sub.pem").read_text() == "fresh\n"
        if backend == "bwrap":
            assert out.strip() == "fresh", out
        assert "fresh" not in _run(wrap, "cat sub.pem", ws, tmpd)
    finally:
        sb.close()
    # the denied files are where they were, unchanged
    for rel, text in SECRETS.items():
        assert (ws / rel).read_text() == text + "\n"


def test_masks_are_current_when_the_command_starts(backend, planted, tmp_path):
    """A denied file made after the session started (or after the last command) is masked."""
    ws, _ = planted
    sb, wrap, tmpd = _sandbox(ws, tmp_path, backend)
    try:
        assert _run(wrap, "cat a.txt", ws, tmpd).strip() == "plain"
        (ws / "deep" / "later.pem").write_text("SECRET-later-9b0\n")
        out = _run(wrap, "cat deep/later.pem", ws, tmpd)
        assert "SECRET-later" not in out, out
    finally:
        sb.close()


def test_an_approved_command_through_a_session(backend, planted, make_session):
    """The Bash tool's write sandbox: an allow rule lets the command run (its text hides what
    it opens from the classifier); the masks hold anyway."""
    ws, _ = planted
    s = make_session(ws, settings={"permissions": {"deny": DENY, "allow": ["Bash(python3 *)"]},
                                   "sandbox": {"mode": backend}, "lsp": {"autoDetect": False}})
    result = s.call("Bash", {"command": "python3 -c \"import os; [print(open(p).read()) for p in "
                                        "('.e'+'nv', os.path.expanduser('~/.aw'+'s/credentials'), 'a.txt')]\""})
    assert "Permission to use Bash" not in result.text, result.text
    assert "SECRET" not in result.text, result.text


def test_claude_codes_filesystem_deny_read_is_a_read_deny_rule(backend, planted, tmp_path, make_session):
    """`sandbox.filesystem.denyRead` (Claude Code's name) merges with the Read deny rules: the
    sandbox masks it, and the file tools refuse it. A workspace's own file may add entries
    (it narrows)."""
    ws, home = planted
    (ws / ".codebelt").mkdir()
    (ws / ".codebelt" / "settings.json").write_text('{"sandbox": {"filesystem": {"denyRead": ["./a.txt"]}}}')
    s = make_session(ws, settings={"sandbox": {"mode": backend, "filesystem": {"denyRead": ["~/.netrc"]}},
                                   "permissions": {"allow": ["Bash(python3 *)"]}})
    texts = [r.text for r in s.settings.rules if r.behavior == "deny"]
    assert "Read(~/.netrc)" in texts and "Read(./a.txt)" in texts, texts
    result = s.call("Bash", {"command": "python3 -c \"import os; print(open(os.path.expanduser('~/.ne'+'trc')).read()); "
                                        "print(open('a.'+'txt').read())\""})
    assert "Permission to use Bash" not in result.text, result.text
    assert "SECRET-netrc" not in result.text and "plain" not in result.text, result.text
    assert s.call("Read", {"file_path": str(home / ".netrc")}).is_error


def test_landlock_says_why_a_new_entry_cannot_be_read(planted, tmp_path):
    if backend_unusable("landlock"):
        pytest.skip("no Landlock here")
    ws, _ = planted
    sb, wrap, tmpd = _sandbox(ws, tmp_path, "landlock")
    try:
        out = _run(wrap, "mkdir -p build && echo made > build/out.txt && cat build/out.txt", ws, tmpd)
        note = sb.explain_denial(out, 1)
        assert note and "cannot be read until the next command" in note and str(ws) in note, (out, note)
    finally:
        sb.close()
