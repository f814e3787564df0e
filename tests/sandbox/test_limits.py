"""Resource limits in the sandboxed child: core dumps, file size, and a fork bomb that must end.

The fork bomb runs only inside a pids cgroup whose pids.max this test has read back (a hard
cap verified before launch) and under a short deadline; without such a cgroup it is skipped,
because the machine is shared and RLIMIT_NPROC does not bind root.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codebelt.sandbox import Limits, Sandbox, SandboxConfig, denial, limits

from .conftest import SYSTEM_PYTHON, jailed, run, sandbox_name

BOMB_CAP = 48


@pytest.mark.parametrize(
    "command,expected",
    [("ulimit -c", "0"), ("ulimit -f", str(3 * 1024))],  # bash reports 1024-byte blocks
    ids=["no-core-dumps", "file-size"],
)
def test_rlimits_in_child(command, expected, backend, make_sandbox, ws):
    sb = make_sandbox(backend, limits=Limits(processes=256, file_size_mb=3))
    proc = run(sb, command, ws)
    assert proc.stdout.strip() == expected


def test_file_size_limit_stops_a_big_write(backend, make_sandbox, ws):
    sb = make_sandbox(backend, limits=Limits(processes=256, file_size_mb=1))
    # `; exit $?` makes bash fork (not exec) head, so it reports the signal that killed it
    proc = run(sb, "head -c 3000000 /dev/zero > big; exit $?", ws)
    assert proc.returncode == 128 + signal.SIGXFSZ, proc.stdout
    assert (ws / "big").stat().st_size <= 1024 * 1024
    message = denial.explain(proc.stdout, proc.returncode, backend=backend, network=False,
                             temp_dir=None)
    assert message and "sandbox.limits.fileSizeMB" in message, proc.stdout


def test_fork_bomb_is_capped_and_killed(backend, make_sandbox, ws):
    sb = make_sandbox(backend, limits=Limits(processes=BOMB_CAP))
    group = sb.cap.cgroup if sb.cap else None
    if group is None:
        pytest.skip(f"no pids cgroup to cap a fork bomb safely here: {sb.cap.reason if sb.cap else ''}")
    assert (group / "pids.max").read_text().strip() == str(BOMB_CAP)  # the cap, verified
    # The resident write sandbox joins the group by moving into it, which pids.max does not
    # refuse (only forks are capped): started now, it is in the group before the bomb, not
    # moved in beside a bomb already at the cap.
    sb.resident_sandbox = "now"
    wrap = sb.wrapper()
    # `sleep` keeps the first shell alive: under bwrap's pid namespace everything dies with it,
    # which could end the bomb before it reaches the cap (and the test would prove nothing).
    argv, env, preexec = wrap(["/bin/bash", "-c", ":(){ :|:& };:; sleep 60"], ws, dict(os.environ))
    proc = subprocess.Popen(argv, cwd=ws, env=env, preexec_fn=preexec, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        # Wait until the bomb hits the cap (a loaded machine forks slowly), at most 20 s.
        deadline = time.monotonic() + 20
        while True:
            time.sleep(0.2)
            events = (group / "pids.events").read_text()
            if int(events.split()[-1]) > 0 or time.monotonic() > deadline:
                break
        peak = (group / "pids.peak").read_text().strip() if (group / "pids.peak").exists() else "0"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # what the runner does on timeout
        except ProcessLookupError:
            pass
        proc.wait(10)
        assert sb.kill_all(), "processes survived in the session cgroup"
    assert int(events.split()[-1]) > 0, "the bomb never reached the process cap"
    assert int(peak) <= BOMB_CAP
    assert sb.cap.pids() == []
    # the test runner itself can still start processes
    assert subprocess.run(["/bin/true"], timeout=10).returncode == 0


# -- memory ---------------------------------------------------------------------------------------
GROW = "python3 -c 'b = bytearray(); [b.extend(bytes(1 << 20)) for _ in range(400)]; print(len(b))'"


def test_memory_cap_ends_a_growing_command(backend, make_sandbox, ws):
    sb = make_sandbox(backend, limits=Limits(processes=256, memory_mb=64))
    before = sb.oom_kills()
    proc = run(sb, GROW + "; exit $?", ws)  # wants 400 MB
    assert proc.returncode != 0 and "419430400" not in proc.stdout
    note = sb.memory_note(before, proc.returncode, proc.stdout)
    assert note and "sandbox.limits.memoryMB" in note and "64 MB" in note, (proc.returncode, proc.stdout[-500:])
    if sb.memory.cgroup is not None:  # the kernel's own count says why it died
        assert proc.returncode == 128 + signal.SIGKILL and sb.oom_kills() > before
        assert (sb.memory.cgroup / ("memory.limit_in_bytes" if sb.memory.version == 1 else "memory.max")
                ).read_text().strip() == str(64 << 20)


def test_memory_under_the_cap_is_fine_and_zero_turns_it_off(backend, make_sandbox, ws):
    sb = make_sandbox(backend, limits=Limits(processes=256, memory_mb=256))
    proc = run(sb, "python3 -c 'print(len(bytearray(32 << 20)))'", ws)
    assert proc.returncode == 0 and proc.stdout.strip() == str(32 << 20)
    off = make_sandbox(backend, limits=Limits(processes=256, memory_mb=0))
    assert off.memory.cgroup is None and off.memory.address_space is None and "off" in off.memory.reason


def test_default_memory_cap_is_half_the_ram():
    total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    assert abs(Limits().effective_memory_mb - total_mb // 2) <= 1
    assert Limits(memory_mb=100).effective_memory_mb == 100


def test_bash_tool_says_the_command_ran_out_of_memory(make_session, backend):
    s = make_session(sandbox=backend, mode="bypassPermissions", settings={"sandbox": {"limits": {"memoryMB": 64}}})
    r = s.call("Bash", {"command": "tail -n1 /dev/zero"})  # grows until the cap ends it
    assert "ran out of memory" in r.text and "sandbox.limits.memoryMB" in r.text, r.text[-800:]
    assert "sandbox.limits.memoryMB" in (r.data or {}).get("sandboxNote", "")


# -- the read-only jail's limits do not depend on sandbox.mode -----------------------------------
JAIL_GROW = GROW.replace("python3", SYSTEM_PYTHON)  # the jail shows system directories only
@pytest.mark.parametrize("mode", ["off", "auto"])
def test_jailed_commands_are_capped_whatever_the_mode(mode, ws, tmpd):
    """With the write sandbox off, jailed commands (which run whatever the mode) had no memory
    or process cap at all: a growing read-only command took what it liked."""
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode=mode, name=sandbox_name(),
                               limits=Limits(processes=256, memory_mb=64)))
    try:
        if sb.jail.backend is None:
            pytest.skip(f"no jail here: {sb.jail.reason}")
        proc = jailed(sb, JAIL_GROW + "; exit $?", ws)
        # killed at the cgroup's limit, or refused by RLIMIT_AS
        assert proc.returncode == 128 + signal.SIGKILL or "MemoryError" in proc.stdout, proc.stdout[-500:]
    finally:
        sb.close()


def test_without_a_memory_cgroup_the_cap_binds_from_the_first_instruction(jail, ws, monkeypatch):
    """RLIMIT_AS is set in the child before exec, so the command's very first process has it
    (a limit set on the process after it started would leave its start unbounded)."""
    monkeypatch.setattr(limits, "find_controller_parent", lambda controller: (None, "none here (test)", 0))
    sb = Sandbox(SandboxConfig(jail.config.writable_roots, jail.config.temp_dir, mode=jail.jail.backend,
                               name=sandbox_name(), limits=Limits(processes=256, memory_mb=300)))
    try:
        assert sb.memory.cgroup is None and sb.memory.address_space == 300 << 20
        proc = jailed(sb, "ulimit -v; " + JAIL_GROW, ws)
        assert proc.stdout.splitlines()[0] == str(300 << 10), proc.stdout  # bash reports KiB
        assert "MemoryError" in proc.stdout, proc.stdout
    finally:
        sb.close()


# -- stale session cgroups: removed by whether their owner holds them, not by pid ----------------
OWNER = """
import os, sys, time
from codebelt.sandbox.config import Limits
from codebelt.sandbox.limits import MemoryCap, ProcessCap
cap = {cls} (Limits(processes=64, memory_mb=256), sys.argv[1])
print(cap.cgroup, flush=True)
time.sleep(120)
"""
SWEEPER = """
import sys
from pathlib import Path
from codebelt.sandbox.limits import _remove_stale_groups
_remove_stale_groups(Path(sys.argv[1]))
"""


@pytest.mark.parametrize("cls,controller", [("ProcessCap", "pids"), ("MemoryCap", "memory")])
def test_a_live_sessions_group_survives_a_sweep_from_another_pid_namespace(cls, controller, tmp_path):
    """Two codebelt processes: the owner of a session cgroup, and another starting a session in
    its own pid namespace (another container), where the owner's pid does not exist. The
    sweeper must leave the live owner's (empty) group alone, and remove it once the owner died
    without closing it."""
    parent, why, _ = limits.find_controller_parent(controller)
    if parent is None:
        pytest.skip(f"no writable {controller} cgroup here: {why}")
    if subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True).returncode:
        pytest.skip("cannot make a pid namespace here (unshare)")
    name = f"codebelt-sweeptest-{os.getpid()}"
    owner = subprocess.Popen([sys.executable, "-c", OWNER.format(cls=cls), name], stdout=subprocess.PIPE, text=True)
    try:
        group = Path(owner.stdout.readline().strip())
        assert group.parent == parent and group.is_dir(), group

        def sweep_elsewhere() -> None:
            out = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", SWEEPER,
                                  str(parent)], capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            # the sweeper really could not see the owner: its pid is not in that namespace
            check = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "test", "-e",
                                    f"/proc/{owner.pid}"])
            assert check.returncode != 0

        sweep_elsewhere()
        assert group.is_dir(), "a live session's cgroup was removed by a process that could not see its owner"
        owner.kill()
        owner.wait(10)
        sweep_elsewhere()
        assert not group.exists(), "a dead session's empty cgroup was left"
    finally:
        owner.kill()
        owner.wait(10)
        if "group" in locals() and group.exists():
            group.rmdir()


def test_a_group_owned_by_a_live_process_is_not_taken_over(tmp_path):
    """The same name twice (or a remover holding it): the second owner gets no cgroup rather
    than sharing or stealing the first one's."""
    parent, why, _ = limits.find_controller_parent("pids")
    if parent is None:
        pytest.skip(f"no writable pids cgroup here: {why}")
    first = limits.ProcessCap(Limits(processes=64), f"codebelt-twice-{os.getpid()}")
    second = limits.ProcessCap(Limits(processes=64), f"codebelt-twice-{os.getpid()}")
    try:
        assert first.cgroup is not None
        assert second.cgroup is None and "cannot create a pids cgroup" in second.reason
        assert first.cgroup.is_dir()
    finally:
        second.close()
        first.close()
    assert not (parent / f"codebelt-twice-{os.getpid()}").exists()


@pytest.mark.parametrize("controller", ["pids", "memory"])
def test_a_lockless_group_of_a_live_older_release_survives_a_sweep(controller):
    """A codebelt release from before the lock uses its group without holding one: while its
    pid (the name's last part) is alive here, a sweep must not take the group away from under
    its next command (whose join would fail with ENODEV)."""
    parent, why, _ = limits.find_controller_parent(controller)
    if parent is None:
        pytest.skip(f"no writable {controller} cgroup here: {why}")
    group = parent / f"codebelt-olderrelease-{os.getpid()}"
    group.mkdir()
    try:
        limits._remove_stale_groups(parent)
        assert group.is_dir(), "the live owner's group was removed because it held no lock"
    finally:
        group.rmdir()


def test_two_sandboxes_of_one_process_each_get_their_own_cgroup(ws, tmpd):
    """A sandbox made without a name gets a name of its own: a second one alive at the same time
    in the same process is capped too (a shared default name left it without a cgroup)."""
    parent, why = limits.find_pids_parent()
    if parent is None:
        pytest.skip(f"no writable pids cgroup here: {why}")
    first = SandboxConfig((ws.resolve(),), tmpd.resolve(), mode="landlock")
    second = SandboxConfig((ws.resolve(),), tmpd.resolve(), mode="landlock")
    assert first.name != second.name
    caps = [limits.ProcessCap(Limits(processes=64), c.name) for c in (first, second)]
    try:
        assert all(c.cgroup is not None for c in caps), [c.reason for c in caps]
        assert caps[0].cgroup != caps[1].cgroup
    finally:
        for c in caps:
            c.close()
