"""What a sandboxed command may and may not write, per backend: one table, one test.

Each row: a command, whether it must succeed under bwrap and under Landlock, and (for the
refused ones) a path that must not exist afterwards. Rows where the backends differ are the
documented trade-off: Landlock cannot make protected paths inside the workspace read-only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from .conftest import WRITE_SANDBOXES, run, write_sandbox

OK, FAIL = True, False
LANDLOCK_SCOPES = "landlock-abi6"  # refused by Landlock only when it has signal scoping (ABI >= 6)

# (id, command, {backend: must succeed}, path that must not exist afterwards or None)
CASES = [
    ("write-in-workspace", "echo hi > new.txt && mkdir -p sub/d && echo x > sub/d/f && mv new.txt sub/ "
     "&& rm sub/new.txt && cat sub/d/f", {"bwrap": OK, "landlock": OK}, None),
    ("overwrite-existing", "echo changed > existing.txt && grep -q changed existing.txt",
     {"bwrap": OK, "landlock": OK}, None),
    ("tmpdir", 'test "$TMPDIR" = "{tmpd}" && echo x > "$TMPDIR/f" && mktemp', {"bwrap": OK, "landlock": OK}, None),
    ("dev-null", "echo x > /dev/null && head -c 4 /dev/zero | wc -c", {"bwrap": OK, "landlock": OK}, None),
    ("git-commit", "git add existing.txt && git -c user.name=t -c user.email=t@example.com commit -qm m "
     "&& git log --oneline | grep -q m", {"bwrap": OK, "landlock": OK}, None),
    ("home", "touch {home}/.codebelt-sandbox-{uniq}", {"bwrap": FAIL, "landlock": FAIL},
     "{home}/.codebelt-sandbox-{uniq}"),
    ("etc", "touch /etc/codebelt-sandbox-{uniq}", {"bwrap": FAIL, "landlock": FAIL},
     "/etc/codebelt-sandbox-{uniq}"),
    ("tmp-outside-tmpdir", "touch /tmp/codebelt-sandbox-{uniq}", {"bwrap": FAIL, "landlock": FAIL},
     "/tmp/codebelt-sandbox-{uniq}"),
    ("parent-dir", "touch ../escape-{uniq}", {"bwrap": FAIL, "landlock": FAIL}, "{parent}/escape-{uniq}"),
    ("symlink-out", "echo x > out/escaped-{uniq}", {"bwrap": FAIL, "landlock": FAIL},
     "{outside}/escaped-{uniq}"),
    ("symlink-mkdir", "mkdir out/d-{uniq}", {"bwrap": FAIL, "landlock": FAIL}, "{outside}/d-{uniq}"),
    ("rename-out", "mv existing.txt ../moved-{uniq}", {"bwrap": FAIL, "landlock": FAIL},
     "{parent}/moved-{uniq}"),
    ("hardlink-out", "ln existing.txt ../hl-{uniq}", {"bwrap": FAIL, "landlock": FAIL}, "{parent}/hl-{uniq}"),
    ("remount-rw", "mount -o remount,rw / ; touch /etc/codebelt-sandbox-{uniq}",
     {"bwrap": FAIL, "landlock": FAIL}, "/etc/codebelt-sandbox-{uniq}"),
    ("no-capabilities", r"grep -Eq '^CapEff:\s+0+$' /proc/self/status", {"bwrap": OK, "landlock": OK}, None),
    ("signal-test-runner", "kill -0 {runner_pid}", {"bwrap": FAIL, "landlock": LANDLOCK_SCOPES}, None),
    # Protected paths: read-only under bwrap; Landlock cannot carve them out (docs/sandbox.md).
    ("git-hook", "echo 'echo pwned' > .git/hooks/pre-commit", {"bwrap": FAIL, "landlock": OK}, None),
    ("git-config", "echo '[core]' >> .git/config", {"bwrap": FAIL, "landlock": OK}, None),
    ("codebelt-settings", "echo '{{}}' > .codebelt/settings.json", {"bwrap": FAIL, "landlock": OK}, None),
    ("claude-dir-missing", "mkdir -p .claude && echo '{{}}' > .claude/settings.json",
     {"bwrap": FAIL, "landlock": OK}, None),
    ("dotenv", "echo SECRET=1 >> .env", {"bwrap": FAIL, "landlock": OK}, None),
    # Directories, not only files: `.git` is a mount point, so it cannot be renamed or replaced
    # by a copy whose config would then run a program at the next git command on the host.
    ("git-rename", "mv .git .g", {"bwrap": FAIL, "landlock": OK}, None),
    ("git-replace", "cp -a .git .g2 && echo '[core] fsmonitor = id' >> .g2/config && rm -rf .git",
     {"bwrap": FAIL, "landlock": OK}, None),
    ("git-remove", "rm -rf .git", {"bwrap": FAIL, "landlock": OK}, None),
    ("nested-git-config", "echo '[core]' >> nested/.git/config", {"bwrap": FAIL, "landlock": OK}, None),
    ("nested-git-hook", "echo id > nested/.git/hooks/pre-commit", {"bwrap": FAIL, "landlock": OK}, None),
    ("submodule-config", "echo '[core]' >> .git/modules/sub/config", {"bwrap": FAIL, "landlock": OK}, None),
    ("commondir", "echo /tmp > .git/commondir", {"bwrap": FAIL, "landlock": OK}, None),
    ("nested-claude", "echo '{{}}' > pkg/.claude/settings.json", {"bwrap": FAIL, "landlock": OK}, None),
    ("nested-dotenv", "echo X=1 >> pkg/.env.local", {"bwrap": FAIL, "landlock": OK}, None),
]


@pytest.fixture(params=WRITE_SANDBOXES)
def backend(request, monkeypatch) -> str:
    """Every case in each write sandbox: bwrap in the session's resident sandbox and built per
    command, and Landlock."""
    return write_sandbox(request.param, monkeypatch)


@pytest.fixture
def workspace(ws: Path, tmp_path: Path) -> dict[str, str]:
    """A git repository with protected paths and a symlink pointing outside."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    subprocess.run([git, "init", "-q", str(ws)], check=True, timeout=30)
    (ws / "existing.txt").write_text("original\n")
    (ws / ".codebelt").mkdir()
    (ws / ".codebelt" / "settings.json").write_text('{"permissions": {}}\n')
    (ws / ".env").write_text("TOKEN=x\n")
    subprocess.run([git, "init", "-q", str(ws / "nested")], check=True, timeout=30)
    (ws / ".git" / "modules" / "sub" / "hooks").mkdir(parents=True)
    (ws / ".git" / "modules" / "sub" / "config").write_text("[core]\n")
    (ws / ".git" / "commondir").write_text(".\n")
    (ws / "pkg" / ".claude").mkdir(parents=True)
    (ws / "pkg" / ".claude" / "settings.json").write_text("{}\n")
    (ws / "pkg" / ".env.local").write_text("A=1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "out").symlink_to(outside)
    return {
        "home": os.path.expanduser("~"),
        "parent": str(ws.parent),
        "outside": str(outside),
        "uniq": uuid.uuid4().hex[:10],
        "runner_pid": str(os.getpid()),
    }


@pytest.mark.parametrize("case_id,command,expect,absent", CASES, ids=[c[0] for c in CASES])
def test_write_policy(case_id, command, expect, absent, backend, make_sandbox, workspace, ws, tmpd):
    sb = make_sandbox(backend)
    values = {**workspace, "tmpd": str(tmpd.resolve())}
    must_succeed = expect[backend]
    if must_succeed == LANDLOCK_SCOPES:
        must_succeed = sb.ruleset.abi < 6
    target = Path(absent.format(**values)) if absent else None
    before = (ws / ".git" / "config").read_bytes()
    protected = {p: p.read_bytes() for p in (ws / "nested" / ".git" / "config", ws / ".git" / "modules" / "sub" / "config",
                                             ws / ".git" / "commondir", ws / "pkg" / ".env.local")}
    try:
        proc = run(sb, command.format(**values), ws)
        assert (proc.returncode == 0) == must_succeed, (
            f"{backend}: {case_id} exit {proc.returncode}, output: {proc.stdout[-600:]}"
        )
        if target is not None:
            assert not target.exists(), f"{backend}: {case_id} created {target}"
        if not must_succeed:  # verified on the host: nothing protected changed, .git still there
            assert (ws / ".git" / "config").read_bytes() == before
            assert all(p.read_bytes() == data for p, data in protected.items())
    finally:
        if target is not None and target.exists():
            shutil.rmtree(target) if target.is_dir() else target.unlink()


def test_placeholders_are_removed_at_close(make_sandbox, ws):
    """bwrap needs a mount point for a missing protected dir; the session cleans it up."""
    from .conftest import backend_unusable

    if backend_unusable("bwrap"):
        pytest.skip(f"bwrap cannot work here: {backend_unusable('bwrap')}")
    (ws / ".git").mkdir()
    sb = make_sandbox("bwrap")
    proc = run(sb, "mkdir .claude/x; touch .git/hooks/h; ls -a", ws)
    assert ".claude" in proc.stdout.split()
    assert not (ws / ".claude" / "x").exists() and not (ws / ".git" / "hooks" / "h").exists()
    sb.close()
    assert sorted(p.name for p in ws.iterdir()) == [".git"]
    assert list((ws / ".git").iterdir()) == []


def test_additional_directory_is_writable(make_sandbox, ws, tmp_path, backend):
    extra = tmp_path / "extra"
    extra.mkdir()
    sb = make_sandbox(backend, roots=(ws.resolve(), extra.resolve()))
    proc = run(sb, f"echo x > {extra}/f && echo y > {ws}/g", ws)
    assert proc.returncode == 0, proc.stdout
    assert (extra / "f").read_text() == "x\n"
