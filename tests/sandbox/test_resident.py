"""The resident jail: one jail per session that starts every jailed command. What one command
does must not reach the next, and what changed since the jail was built (a deny rule, a new file)
must hold for the next command — each case has a control showing the leak would be seen."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from codebelt.sandbox import Sandbox, SandboxConfig

from .conftest import backend_unusable, jailed


@pytest.fixture
def resident(ws: Path, tmpd: Path):
    why = backend_unusable("bwrap")
    if why:
        pytest.skip(f"bwrap cannot work here: {why}")
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode="bwrap", name="codebelt-test"))
    if sb.jail.backend != "bwrap" or not sb._stage_abi:
        sb.close()
        pytest.skip(f"no bwrap jail with its Landlock layer here: {sb.jail.reason}")
    r = jailed(sb, "true", ws)
    if sb._resident is None:
        sb.close()
        pytest.skip(f"no resident jail here: {sb._resident_failed}")
    assert r.returncode == 0, r.stdout
    yield sb
    sb.close()


def start(sb: Sandbox, command: str, cwd: Path, out):
    """Start a command in the resident jail without waiting for it."""
    wrap = sb.jail_wrapper([])
    launch = wrap(["/bin/bash", "-c", command], cwd, dict(os.environ)).launch
    proc = launch({1: out.fileno(), 2: out.fileno()})
    assert proc is not None
    return proc


def host_processes_with(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


def test_every_command_starts_with_an_empty_scratch(resident, ws):
    r = jailed(resident, 'echo left > "$TMPDIR/note"; cat "$TMPDIR/note"; mkdir -p "$HOME/d"', ws)
    assert r.stdout.strip() == "left", r.stdout  # control: the scratch is writable
    r = jailed(resident, 'ls -A "$TMPDIR" "$HOME" | grep -vc ":$"; [ -e "$TMPDIR/note" ] || echo gone', ws)
    assert r.stdout.split() == ["1", "gone"], r.stdout  # a blank line between the two listings


def test_nothing_a_command_starts_outlives_it(resident, ws):
    marker = f"4{os.getpid() % 1000}.{time.monotonic_ns() % 100000}"
    r = jailed(resident, f"(setsid sleep {marker} &); (nohup sleep {marker} >/dev/null 2>&1 &); "
                         f"sleep {marker} & disown; for i in $(seq 100); do "
                         f"[ $(pgrep -c -x sleep) = 3 ] && break; sleep 0.05; done; pgrep -c -x sleep", ws)
    assert r.stdout.strip() == "3", r.stdout  # control: they were running inside
    deadline = time.monotonic() + 10
    while host_processes_with(f"sleep\0{marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_processes_with(f"sleep\0{marker}") == []
    r = jailed(resident, "pgrep -x sleep || echo none", ws)
    assert r.stdout.strip() == "none", r.stdout


def test_a_command_sees_no_other_process_and_no_channel(resident, ws):
    r = jailed(resident, "ls /proc | grep -E '^[0-9]+$' | wc -l; ls -l /proc/self/fd/ | grep -c socket", ws)
    procs, sockets = r.stdout.split()
    # its init (pid 1), bash, and the ls and grep of the pipeline (the subshell's wc may be there
    # too): no resident, no other command
    assert int(procs) <= 5, r.stdout
    assert sockets == "0", r.stdout  # not the resident's control socket nor a status socket


def test_commands_running_together_cannot_reach_each_other(resident, ws, tmpd):
    with tempfile.TemporaryFile() as out1:
        first = start(resident, f"echo $$ > /dev/null; sleep 2; echo still-alive", ws, out1)
        r = jailed(resident, "kill -9 -1; pkill -9 sleep; true", ws)
        assert r.returncode == 0, r.stdout
        assert first.wait(60) == 0
        out1.seek(0)
        assert out1.read().decode().strip() == "still-alive"


def test_masks_are_those_of_the_moment_the_command_starts(resident, ws):
    late = ws / "made-after-the-jail.env"
    late.write_text("SECRET=late\n")
    r = jailed(resident, f"cat {late.name}", ws)
    assert "SECRET=late" in r.stdout  # control: unmasked, the file is readable
    r = jailed(resident, f"cat {late.name}; cat {late.name} | wc -c", ws, masked=[late.resolve()])
    assert "SECRET" not in r.stdout, r.stdout
    folder = ws / "later-dir"
    folder.mkdir()
    (folder / "key.pem").write_text("PRIVATE\n")
    r = jailed(resident, "cat later-dir/key.pem; ls -A later-dir | wc -l", ws, masked=[folder.resolve()])
    assert "PRIVATE" not in r.stdout and r.stdout.split()[-1] == "0", r.stdout
    r = jailed(resident, f"cat {late.name}", ws)  # and a mask does not stay once the rule is gone
    assert "SECRET=late" in r.stdout


def test_a_command_cannot_change_the_view_of_the_next(resident, ws):
    attempts = ("mount -t tmpfs none /tmp; unshare -m true; umount /proc; umount -l /etc/shadow; "
                "echo 1 > /proc/sys/kernel/core_pattern; ls /etc/shadow >/dev/null; cat /etc/shadow | wc -c")
    r = jailed(resident, attempts, ws)
    assert r.stdout.strip().endswith("0"), r.stdout
    r = jailed(resident, "cat /proc/self/mountinfo | wc -l; grep -c ' /proc ' /proc/self/mountinfo; "
                         "cat /etc/shadow | wc -c", ws)
    assert r.stdout.split()[-1] == "0", r.stdout


def test_the_command_has_no_capability_and_cannot_write(resident, ws):
    r = jailed(resident, "grep -E '^Cap(Eff|Prm|Bnd|Amb|Inh)' /proc/self/status; "
                         "touch x 2>&1; mkfifo $TMPDIR/f && echo fifo-in-scratch", ws)
    for line in r.stdout.splitlines():
        if line.startswith("Cap"):
            assert line.split()[1] == "0000000000000000", r.stdout
    assert "fifo-in-scratch" in r.stdout and not (ws / "x").exists()


def test_a_stopped_command_ends_with_everything_it_started(resident, ws):
    with tempfile.TemporaryFile() as out:
        marker = f"5{os.getpid() % 1000}.{time.monotonic_ns() % 100000}"
        proc = start(resident, f"(setsid sleep {marker} &); sleep {marker}", ws, out)
        os.killpg(proc.pid, signal.SIGTERM)  # what the runner does on a timeout
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait(30)
        assert code != 0
        deadline = time.monotonic() + 10
        while host_processes_with(f"sleep\0{marker}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert host_processes_with(f"sleep\0{marker}") == []


def test_a_resident_that_died_is_replaced_and_the_jail_holds(resident, ws):
    resident._resident._proc.kill()  # the resident dies (killed from outside)
    resident._resident._gone.wait(10)
    (ws / "denied.txt").write_text("DENIED\n")
    r = jailed(resident, "cat denied.txt; touch y 2>&1 | grep -c 'Read-only'", ws, masked=[(ws / "denied.txt").resolve()])
    assert "DENIED" not in r.stdout and r.stdout.strip().endswith("1"), r.stdout

