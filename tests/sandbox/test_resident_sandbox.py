"""The resident write sandbox (bwrap): one bwrap per session that starts every sandboxed command.
What changed since it was built (a protected path made, a deny rule added or removed, a root
replaced) must hold for the next command, and what one command leaves (files outside the
writable roots, processes, System V queues, ports, ptys, descriptors) must not reach the next —
each case with a control showing the effect would be seen. The shared tables (test_filesystem,
tests/security's masks, credentials and new protected paths) run against both this and the
one-shot sandbox."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.sandbox import Sandbox, SandboxConfig, native, residency

from .conftest import backend_unusable, host_processes_with, sandbox_name, spawn


@pytest.fixture(params=["native", "python", "native-unprepared", "python-unprepared"])
def resident(request, ws: Path, tmpd: Path, monkeypatch):
    """On both request paths: the compiled one (_zygote.c) and resident.py's Python one; and
    with zygotes that prepared nothing (each command's /dev/shm and namespaces then made when its
    request arrives: what a request unlike the prepared one gets)."""
    why = backend_unusable("bwrap")
    if why:
        pytest.skip(f"bwrap cannot work here: {why}")
    path, _, unprepared = request.param.partition("-")
    if path == "native" and not native.available():
        pytest.skip("the compiled request path is not built here")
    monkeypatch.setenv("CODEBELT_RESIDENT_NATIVE", "1" if path == "native" else "0")
    if unprepared:
        original = residency.ResidentJail.__init__

        def start(self, argv, env, preexec, cwd, prepare=None, native=None):
            original(self, argv, env, preexec, cwd, None, native)

        monkeypatch.setattr(residency.ResidentJail, "__init__", start)
    monkeypatch.setattr(Sandbox, "resident_sandbox", "now")  # every command in it, the first included
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode="bwrap", name=sandbox_name()))
    yield sb
    sb.close()


def run(sb: Sandbox, command: str, cwd: Path, masked=None) -> subprocess.CompletedProcess:
    """In the resident sandbox (spawn fails the test when the resident did not take it)."""
    wrap = sb.wrapper(masked)
    return spawn(wrap(["/bin/bash", "-c", command], cwd, dict(os.environ)), cwd, 60)


def start(sb: Sandbox, command: str, cwd: Path, out):
    """Start a command in the resident sandbox without waiting for it."""
    launch = sb.wrapper()(["/bin/bash", "-c", command], cwd, dict(os.environ)).launch
    proc = launch({1: out.fileno(), 2: out.fileno()})
    assert proc is not None
    return proc


def test_protected_paths_made_after_the_resident_started(resident, ws):
    sb = resident
    assert run(sb, "true", ws).returncode == 0  # the resident is built here, before any of them
    first = sb._sandbox_resident.current
    r = run(sb, "echo A=1 > .env.later && cat .env.later", ws)
    assert r.stdout.strip() == "A=1", r.stdout  # control: it did not exist, so nothing protected it
    r = run(sb, "echo A=2 > .env.later; mv .env.later .env.moved; cat .env.later", ws)
    assert "Read-only" in r.stdout and (ws / ".env.later").read_text() == "A=1\n", r.stdout
    assert not (ws / ".env.moved").exists()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)  # a repository made after the resident
    config = (ws / ".git" / "config").read_bytes()
    r = run(sb, "echo '[core]' >> .git/config; echo id > .git/hooks/pre-commit; mv .git .git-moved; ls -d .git", ws)
    assert (ws / ".git").is_dir() and not (ws / ".git-moved").exists(), r.stdout
    assert (ws / ".git" / "config").read_bytes() == config, r.stdout
    assert not (ws / ".git" / "hooks" / "pre-commit").exists(), r.stdout
    assert sb._sandbox_resident.current is first  # all of it in the one resident


def test_masks_of_the_moment_a_rule_added_and_removed(resident, ws):
    sb = resident
    (ws / "notes.txt").write_text("NOTES\n")
    rules: list[Path] = []
    assert run(sb, "cat notes.txt", ws, lambda: list(rules)).stdout.strip() == "NOTES"  # control
    rules.append((ws / "notes.txt").resolve())
    r = run(sb, "cat notes.txt; ln notes.txt hard.txt; cat hard.txt", ws, lambda: list(rules))
    assert "NOTES" not in r.stdout, r.stdout
    rules.clear()
    assert run(sb, "cat notes.txt", ws, lambda: list(rules)).stdout.strip() == "NOTES"  # no mask left behind


def test_nothing_carries_over_between_commands(resident, ws):
    sb = resident
    marker = f"7{os.getpid() % 1000}.{uuid.uuid4().int % 100000}"
    port = 20000 + os.getpid() % 20000
    r = run(sb, f"echo kept > /dev/shm/note && cat /dev/shm/note; touch /dev/made 2>&1 | grep -c Read-only; "
                f"(setsid sleep {marker} &); ipcmk -Q >/dev/null && ipcs -q | grep -c 0x; "
                f"python3 -c \"import os; m, s = os.openpty(); print(os.ttyname(s))\"; "
                f"python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', {port})); "
                f"s.listen(); c = socket.create_connection(('127.0.0.1', {port})); a = s.accept()[0]; "
                f"a.close(); print('bound')\"", ws)
    # controls: each thing exists within the command
    assert r.stdout.split() == ["kept", "1", "1", "/dev/pts/0", "bound"], r.stdout
    deadline = time.monotonic() + 10
    while host_processes_with(f"sleep\0{marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_processes_with(f"sleep\0{marker}") == []
    # the next: no file in /dev/shm or /dev, no queue, a pty numbering of its own, the port free
    # (the first closed first: its side would be in TIME_WAIT in a shared network namespace)
    r = run(sb, f"ls -A /dev/shm | wc -l; ls /dev | grep -c made; ipcs -q | grep -c 0x; ls /dev/pts; "
                f"ls -l /proc/self/fd/ | grep -c socket; python3 -c \"import socket; s = socket.socket(); "
                f"s.bind(('127.0.0.1', {port})); print('free')\"", ws)
    assert r.stdout.split() == ["0", "0", "0", "ptmx", "0", "free"], r.stdout


def test_commands_running_together_each_have_their_own(resident, ws):
    sb = resident
    with tempfile.TemporaryFile() as out:
        long = start(sb, "echo held > /dev/shm/mine; ipcmk -Q >/dev/null; ls /dev/shm; ipcs -q | grep -c 0x; "
                         "echo READY; sleep 30", ws, out)
        try:
            deadline = time.monotonic() + 20
            while b"READY" not in (text := os.pread(out.fileno(), 4096, 0)) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert text.split() == [b"mine", b"1", b"READY"], text  # control: it has them
            r = run(sb, "ls -A /dev/shm | wc -l; ipcs -q | grep -c 0x; "
                        "cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -c 'sleep 3[0]'", ws)
            assert r.stdout.split() == ["0", "0", "0"], r.stdout
        finally:
            long.kill()
            long.wait(10)


def test_a_replaced_root_or_a_dead_resident_gets_a_new_one(resident, ws, tmpd):
    sb = resident
    assert run(sb, "true", ws).returncode == 0
    first = sb._sandbox_resident.current
    first._proc.kill()  # killed from outside
    first._gone.wait(10)
    (ws / ".env").write_text("A=1\n")
    r = run(sb, "echo B=2 >> .env; echo x > made.txt", ws)
    assert (ws / ".env").read_text() == "A=1\n" and (ws / "made.txt").exists(), r.stdout
    second = sb._sandbox_resident.current
    assert second is not first
    # the session's TMPDIR removed and made again: the old resident would write into the deleted one
    subprocess.run(["rm", "-rf", str(tmpd)], check=True)
    tmpd.mkdir()
    r = run(sb, f"echo t > {tmpd}/t", ws)
    assert r.returncode == 0 and (tmpd / "t").read_text() == "t\n", r.stdout
    assert sb._sandbox_resident.current is not second


@pytest.mark.parametrize("resident_on", [True, False])
def test_the_bash_tool_starts_sandboxed_commands_in_the_resident(resident_on, ws, monkeypatch):
    """As a session runs: the first command takes the one-shot argv while the resident starts in
    the background, the next ones start in it (the one-shot's pid 1 is bwrap, the resident's not)."""
    if backend_unusable("bwrap"):
        pytest.skip("bwrap cannot work here")
    monkeypatch.setattr(Sandbox, "resident_sandbox", resident_on)
    (ws / ".env").write_text("A=1\n")
    command = ("touch made.txt; python3 -c \"print('PID1=' + open('/proc/1/cmdline').read().split(chr(0))[0]); "
               "open('.e'+'nv', 'a').write('B=2')\"")
    with Session(ws, settings={"sandbox": {"mode": "bwrap", "autoAllowBash": True}}, load_user_settings=False,
                 audit=False) as s:
        bwrap = f"PID1={s.sandbox().bwrap_path}\n"
        first = s.call("Bash", {"command": command})
        assert bwrap in first.text, first.text  # one-shot, whatever the setting
        slot = s.sandbox()._sandbox_resident
        if slot is not None:
            slot.wait_started(30)
        assert (slot is not None and slot.current is not None) == resident_on
        then = s.call("Bash", {"command": command})
        assert (bwrap in then.text) != resident_on, then.text
    assert (ws / "made.txt").exists() and (ws / ".env").read_text() == "A=1\n", (first.text, then.text)


def test_a_set_up_refused_here_leaves_commands_to_the_one_shot_argv(resident, ws, monkeypatch):
    """A step of the per-command set-up that this machine refuses (here: a mount step the resident
    does not know) is found by the start's probe: commands then take the one-shot argv and run."""
    from codebelt.sandbox import resident_sandbox

    real = resident_sandbox.command_mounts
    monkeypatch.setattr(resident_sandbox, "command_mounts", lambda *a: [["refused", "/dev"], *real(*a)])
    wrapped = resident.wrapper()(["/bin/bash", "-c", "echo ran"], ws, dict(os.environ))
    assert wrapped.launch is None and "refused" in resident._sandbox_resident.failed
    r = spawn(wrapped, ws, one_shot=True)
    assert r.stdout.strip() == "ran", r.stdout
