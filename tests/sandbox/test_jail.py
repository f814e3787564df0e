"""The read-only jail, per backend: real commands that try to write, read secrets or reach the
network, each checked on the host afterwards (not only by the command's own report)."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from .conftest import SYSTEM_PYTHON, jailed
from .netprobe import Listeners, client, reached


def snapshot(root: Path) -> dict[str, tuple]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_mode, st.st_size, st.st_mtime_ns,
                                            os.readlink(p) if os.path.islink(p) else None)
    return out


@pytest.fixture
def repo(ws: Path) -> Path:
    (ws / "a.txt").write_text("alpha\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "b.txt").write_text("beta\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "add", "."], check=True)
    subprocess.run(["git", "-C", str(ws), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"], check=True)
    return ws


# Commands that try to change the workspace: every one must leave it exactly as it was.
WRITES = {
    "redirect": "echo x > a.txt",
    "append": "echo x >> a.txt",
    "new-file": "touch new.txt",
    "remove": "rm -f a.txt",
    "rename": "mv a.txt z.txt",
    "mkdir": "mkdir d",
    "symlink": "ln -s /etc/passwd link",
    "hardlink": "ln a.txt hard",
    "truncate": "truncate -s 0 a.txt",
    "chmod": "chmod 777 a.txt",
    "touch-mtime": "touch -d 2001-01-01 a.txt",
    "git-config": "git config core.pager 'id>&2'",
    "git-hook": "printf '#!/bin/sh\\nid\\n' > .git/hooks/pre-commit",
    "git-commit": "git -c user.email=x@x -c user.name=x commit -qm x --allow-empty",
    "git-status-index": "git status --short",
    "dd": "dd if=/dev/zero of=sub/b.txt bs=1 count=1",
    "python-open": f"{SYSTEM_PYTHON} -c \"open('a.txt', 'w').write('x')\"",
    "tee": "echo x | tee a.txt",
    "sed-i": "sed -i s/alpha/x/ a.txt",
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_workspace_is_read_only(name, jail, repo):
    before = snapshot(repo)
    jailed(jail, WRITES[name], repo)
    assert snapshot(repo) == before


def test_fsmonitor_runs_but_changes_nothing(jail, repo, tmp_path):
    """A repository whose config runs a program on `git status` (core.fsmonitor) may run it in
    the jail: it can write nowhere on the host and reach nothing."""
    marker = tmp_path / f"pwned-{uuid.uuid4().hex[:8]}"
    subprocess.run(["git", "-C", str(repo), "config", "core.fsmonitor", f"touch {marker}; echo x > {repo}/a.txt; false"], check=True)
    before = snapshot(repo)
    jailed(jail, "git status --short", repo)
    assert not marker.exists()
    assert snapshot(repo) == before


def test_scratch_tmp_works_and_is_thrown_away(jail, repo, tmpd):
    proc = jailed(jail, 'echo hello > "$TMPDIR/x" && cat "$TMPDIR/x" && echo "$HOME" && ls -A "$HOME" | wc -l', repo)
    assert proc.stdout.splitlines()[0] == "hello", proc.stdout
    leftovers = [p for p in tmpd.rglob("*") if p.is_file()]
    assert leftovers == []


def test_outside_the_roots_is_invisible(jail, repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    token = uuid.uuid4().hex
    (outside / "secret.txt").write_text(f"content-{token}\n")
    (outside / f"listed-{token}").write_text("")
    proc = jailed(jail, f"cat {outside}/secret.txt; ls {outside}; cat /etc/shadow; ls -a ~root", repo)
    assert token not in proc.stdout, proc.stdout  # neither the content nor the listing
    assert "root:" not in proc.stdout  # /etc/shadow lines start with the user name


def test_outside_writes_do_not_land(jail, repo, tmp_path):
    target = tmp_path / f"out-{uuid.uuid4().hex[:8]}"
    jailed(jail, f"echo x > {target}; touch /tmp/{target.name}; mkdir -p /var/tmp/{target.name}", repo)
    assert not target.exists() and not Path("/tmp", target.name).exists()
    assert not Path("/var/tmp", target.name).exists()


def test_ordinary_read_only_work_runs(jail, repo):
    proc = jailed(jail, "ls && cat a.txt && grep -rn beta . && git status --short && git log --oneline "
                  "&& git diff && find . -name '*.txt' | sort && cd sub && cat b.txt | wc -l", repo)
    assert proc.returncode == 0, proc.stdout
    for expected in ("a.txt", "alpha", "./sub/b.txt:1:beta", "init", "./sub/b.txt"):
        assert expected in proc.stdout, proc.stdout


def test_read_deny_paths_are_masked(jail, repo):
    (repo / "secret.env").write_text("TOKEN=abc\n")
    (repo / "keys").mkdir()
    (repo / "keys" / "id").write_text("KEYDATA\n")
    proc = jailed(jail, "cat secret.env; cat keys/id; grep -r . keys; cat a.txt sub/b.txt", repo,
                  masked=[repo / "secret.env", repo / "keys"])
    assert "TOKEN" not in proc.stdout and "KEYDATA" not in proc.stdout
    assert "alpha" in proc.stdout and "beta" in proc.stdout, proc.stdout  # the rest stays readable


@pytest.mark.parametrize("kind", ["tcp", "mptcp", "udp", "unix", "abstract"])
def test_no_network_of_any_family(kind, jail, repo):
    if not os.path.exists(SYSTEM_PYTHON):
        pytest.skip(f"{SYSTEM_PYTHON} is needed inside the jail")
    listeners = Listeners(repo)  # the Unix socket lives in the (readable) workspace
    try:
        proc = jailed(jail, client(SYSTEM_PYTHON, kind, listeners), repo)
        time.sleep(0.3)
        # (under bwrap a datagram to 127.0.0.1 is "sent" to the jail's own empty loopback)
        assert not reached(listeners, kind), proc.stdout
        if kind in ("unix", "abstract", "mptcp") or jail.jail.backend == "landlock":
            assert "sent" not in proc.stdout, proc.stdout
    finally:
        listeners.close()


def test_status_names_the_jail(jail):
    assert jail.status.jail == jail.jail.backend and jail.status.jail_reason
