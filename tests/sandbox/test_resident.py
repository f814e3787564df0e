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

from codebelt.sandbox import Sandbox, SandboxConfig, native

from .conftest import backend_unusable, host_processes_with, jailed, resident_jail, sandbox_name


@pytest.fixture(params=["native", "python"])
def request_path(request, monkeypatch):
    """Each resident test on both request paths: the compiled one (_zygote.c) and the Python one
    (resident.py's init), chosen by codebelt when the resident starts."""
    if request.param == "native" and not native.available():
        pytest.skip("the compiled request path is not built here")
    monkeypatch.setenv("CODEBELT_RESIDENT_NATIVE", "1" if request.param == "native" else "0")
    return request.param


@pytest.fixture
def resident(ws: Path, tmpd: Path, request_path, monkeypatch):
    sb = resident_jail(ws, tmpd, request_path, monkeypatch)
    assert sb._resident.native == (request_path == "native"), sb._resident.native_failed
    yield sb
    sb.close()


def start(sb: Sandbox, command: str, cwd: Path, out):
    """Start a command in the resident jail without waiting for it."""
    wrap = sb.jail_wrapper([])
    launch = wrap(["/bin/bash", "-c", command], cwd, dict(os.environ)).launch
    proc = launch({1: out.fileno(), 2: out.fileno()})
    assert proc is not None
    return proc


def test_every_command_starts_with_an_empty_scratch(resident, ws):
    r = jailed(resident, 'echo left > "$TMPDIR/note"; cat "$TMPDIR/note"; mkdir -p "$HOME/d"', ws)
    assert r.stdout.strip() == "left", r.stdout  # control: the scratch is writable
    r = jailed(resident, 'ls -A "$TMPDIR" "$HOME" | grep -vc ":$"; [ -e "$TMPDIR/note" ] || echo gone', ws)
    assert r.stdout.split() == ["1", "gone"], r.stdout  # a blank line between the two listings


def test_a_root_removed_and_made_again_gets_a_new_resident(resident, ws):
    """The resident's view bound the root it saw: one made again is another directory, and the
    old resident would show the deleted one (empty) to every later command."""
    (ws / "before.txt").write_text("x")
    assert jailed(resident, "ls", ws).stdout.split() == ["before.txt"]
    first = resident._resident
    for p in ws.iterdir():
        p.unlink()
    ws.rmdir()
    ws.mkdir()
    (ws / "after.txt").write_text("y")
    assert jailed(resident, "ls", ws).stdout.split() == ["after.txt"]
    assert resident._resident is not first


def test_nothing_a_command_starts_outlives_it(resident, ws):
    marker = f"4{os.getpid() % 1000}.{time.monotonic_ns() % 100000}"
    r = jailed(resident, f"(setsid sleep {marker} &); (nohup sleep {marker} >/dev/null 2>&1 &); "
                         f"sleep {marker} & disown; for i in $(seq 100); do "
                         f"[ $(pgrep -c -x sleep) = 3 ] && break; sleep 0.05; done; pgrep -c -x sleep", ws)
    assert r.stdout.strip() == "3", r.stdout  # control: they were running inside
    # gone by the time the command's end is known, not some time after: its init killed and
    # reaped them before it sent the status
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
        proc = start(resident, f"(setsid sleep {marker} &); echo ready; sleep {marker}", ws, out)
        # Signalled once running (as a timeout finds it): a SIGTERM in the instant before the
        # command exists reaches only its init, and the runner's SIGKILL after the grace ends it.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not os.pread(out.fileno(), 64, 0).startswith(b"ready"):
            time.sleep(0.02)
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



# The command is an ordinary process of its namespace, not its pid 1: what it does to itself
# ends it as it would anywhere. Exit codes as the Bash tool gives them (128+N for signal N); every
# jail alike (the one-shot bwrap jail reports a signal as 128+N itself).
OWN_ENDINGS = [
    ("exit 0", 0),
    ("exit 1", 1),
    ("kill -INT $$; echo alive", 130),
    ("kill -9 $$; echo alive", 137),
    ("kill -TERM $$; echo alive", 143),
    ("trap 'echo trapped; exit 4' TERM; kill -TERM $$; sleep 1; echo alive", 4),
]


@pytest.mark.parametrize("command,code", OWN_ENDINGS, ids=[c for c, _ in OWN_ENDINGS])
def test_a_command_ends_itself_as_it_would_anywhere(jail, ws, command, code, request_path):
    r = jailed(jail, command, ws)
    assert (r.returncode if r.returncode >= 0 else 128 - r.returncode) == code, r.stdout
    assert "alive" not in r.stdout, r.stdout
    assert ("trapped" in r.stdout) == ("trap" in command), r.stdout


def test_the_command_starts_with_no_signal_ignored_or_blocked(jail, ws, request_path):
    r = jailed(jail, "grep -E '^Sig(Ign|Blk)' /proc/self/status; yes | head -c1 >/dev/null; "
                     "echo \"pipe ${PIPESTATUS[0]}\"", ws)
    if "Permission denied" not in r.stdout:  # the Landlock jail shows no process's /proc entries
        assert "SigIgn:\t0000000000000000" in r.stdout and "SigBlk:\t0000000000000000" in r.stdout, r.stdout
    assert "pipe 141" in r.stdout, r.stdout  # SIGPIPE ends `yes` as anywhere


# Signals to the command's process group, as the runner sends them (a timeout's SIGTERM, an
# interrupt): they reach bash itself, which ends unless it handles them.
FROM_OUTSIDE = [
    ("sleep 30; echo after", signal.SIGTERM, 143, ""),
    ("sleep 30; echo after", signal.SIGINT, 130, ""),
    ("trap 'echo caught; exit 3' TERM; sleep 30 & wait", signal.SIGTERM, 3, "caught"),
    ("trap 'echo caught; exit 0' INT; sleep 30; echo after", signal.SIGINT, 0, "caught"),
]


@pytest.mark.parametrize("command,sig,code,said", FROM_OUTSIDE,
                         ids=[f"{c}-{s.name}" for c, s, _, _ in FROM_OUTSIDE])
def test_a_signal_to_the_group_reaches_the_command(resident, ws, command, sig, code, said):
    with tempfile.TemporaryFile() as out:
        proc = start(resident, f"echo ready; {command}", ws, out)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not os.pread(out.fileno(), 64, 0).startswith(b"ready"):
            time.sleep(0.02)
        time.sleep(0.2)  # bash is in `sleep` or `wait` by now
        os.killpg(proc.pid, sig)
        try:
            got = proc.wait(20)  # without the signal reaching bash, it would sleep on for 30 s
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        out.seek(0)
        text = out.read().decode()
        assert (got if got >= 0 else 128 - got) == code, text
        assert "after" not in text and said in text, text


def test_the_init_cannot_be_reached_from_its_command(resident, ws):
    """The command's init holds its status socket and shares its uid and Landlock domain: it
    ignores the command's signals (pid 1) and is not dumpable (no ptrace, no /proc/1/fd)."""
    r = jailed(resident, "echo $$; kill -9 1; kill -STOP 1; cat /proc/1/environ 2>/dev/null | wc -c; "
                         "ls -l /proc/1/fd/ 2>/dev/null | grep -c socket; "
                         "ls -l /proc/self/fd/ 2>/dev/null | grep -c /dev/null; echo end", ws)
    pid, environ, sockets, control, end = r.stdout.split()
    assert pid != "1" and end == "end" and r.returncode == 0, r.stdout  # bash is not pid 1 and went on
    assert control != "0", r.stdout  # control: the listing shows what a descriptor leads to
    assert (environ, sockets) == ("0", "0"), r.stdout


def test_a_resident_whose_set_up_is_refused_hands_commands_to_the_one_shot_jail(ws, tmpd, monkeypatch, request_path):
    """A step of a command's set-up refused on this kernel (here: its /proc mounted where it
    cannot be) would fail every command: the start-up probe finds it and the one-shot jail runs
    them instead."""
    why = backend_unusable("bwrap")
    if why:
        pytest.skip(f"bwrap cannot work here: {why}")
    from codebelt.sandbox import residency

    source = residency.resident_source()
    broken = source.replace('mount("proc", "/proc", "proc"', 'mount("proc", "/no/such/proc", "proc"')
    assert broken != source  # control: the step exists to break
    monkeypatch.setattr(residency, "resident_source", lambda: broken)
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode="bwrap", name=sandbox_name()))
    try:
        if sb.jail.backend != "bwrap" or not sb._stage_abi:
            pytest.skip(f"no bwrap jail with its Landlock layer here: {sb.jail.reason}")
        r = jailed(sb, "echo ran; cat /etc/shadow 2>/dev/null | wc -c; touch x 2>/dev/null || echo read-only", ws)
        assert r.returncode == 0 and r.stdout.split() == ["ran", "0", "read-only"], r.stdout
        assert sb._resident is None and "/no/such/proc" in sb._resident_failed, sb._resident_failed
    finally:
        sb.close()


def _unprepared(prepare):
    return None


def _other_layer(prepare):
    return {**prepare, "writable": prepare["writable"][:1]}  # its scratch only, not /dev/null


@pytest.mark.parametrize("change", [_unprepared, _other_layer], ids=["nothing-prepared", "other-layer-prepared"])
def test_a_request_unlike_what_was_prepared_is_set_up_whole(ws, tmpd, monkeypatch, change, request_path):
    """A resident started without `prepare` (or for another write layer) sets each command up
    entirely when its request comes: the same guarantees."""
    why = backend_unusable("bwrap")
    if why:
        pytest.skip(f"bwrap cannot work here: {why}")
    from codebelt.sandbox import residency

    original = residency.ResidentJail.__init__

    def start(self, argv, env, preexec, cwd, prepare=None, native=None):
        original(self, argv, env, preexec, cwd, change(prepare), native)

    monkeypatch.setattr(residency.ResidentJail, "__init__", start)
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode="bwrap", name=sandbox_name()))
    try:
        if sb.jail.backend != "bwrap" or not sb._stage_abi:
            pytest.skip(f"no bwrap jail with its Landlock layer here: {sb.jail.reason}")
        os.mkfifo(ws / "fifo")
        for _ in range(2):
            r = jailed(sb, 'ls -A "$TMPDIR" | wc -l; echo x > "$TMPDIR/f" && echo x > /dev/null && echo wrote; '
                           "touch made 2>/dev/null || echo read-only; "
                           "timeout 2 sh -c 'echo x > fifo' 2>/dev/null || echo fifo-refused; "
                           "[ $(ls /proc | grep -cE '^[0-9]+$') -le 5 ] && echo own-proc; echo $$", ws)
            assert r.stdout.split()[:5] == ["0", "wrote", "read-only", "fifo-refused", "own-proc"], r.stdout
            assert r.stdout.split()[5] != "1", r.stdout
        assert sb._resident is not None, sb._resident_failed  # control: the resident ran them
    finally:
        sb.close()
