"""The helper jail (`Sandbox.helper`), per backend: what a helper sees of the environment, where
it may write, what a helper without system access sees, and that a helper may start threads but
no process when its profile says so — each checked by running real programs."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from codebelt.sandbox import Limits, Sandbox, SandboxConfig
from codebelt.sandbox.helpers import HelperProfile, end_tree, install_dirs

from .conftest import SYSTEM_PYTHON, sandbox_name


def run(sb, profile: HelperProfile, command: str, cwd: Path, env: dict | None = None, masked=()) -> subprocess.CompletedProcess:
    wrap = sb.helper(profile, list(masked))
    assert wrap is not None
    argv, env2, preexec, *cleanup = wrap(["/bin/bash", "-c", command], cwd, dict(env or os.environ))
    try:
        return subprocess.run(argv, cwd=cwd, env=env2, preexec_fn=preexec, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60, start_new_session=True)
    finally:
        for done in cleanup:
            done()


def test_a_helper_sees_only_the_allowed_environment(jail, ws):
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-xyz", "GITHUB_TOKEN": "ghp_abc", "LANG": "C.UTF-8"}
    p = run(jail, HelperProfile("t", env=(("MY_SETTING", "1"),)), "env", ws, env)
    assert "sk-ant-xyz" not in p.stdout and "ghp_abc" not in p.stdout, p.stdout
    assert "LANG=C.UTF-8" in p.stdout and "MY_SETTING=1" in p.stdout and "PATH=" in p.stdout


def test_a_helper_writes_only_its_scratch_which_goes_with_it(jail, ws, tmpd):
    p = run(jail, HelperProfile("t"), 'echo cache > "$XDG_CACHE_HOME.x" && cat "$XDG_CACHE_HOME.x"; '
                                      'echo "$HOME"; touch kept 2>&1; touch /tmp/kept-$$ 2>&1', ws)
    assert p.stdout.splitlines()[0] == "cache", p.stdout + p.stderr
    assert not (ws / "kept").exists()
    assert [q for q in tmpd.rglob("*") if q.is_file()] == []


def test_a_helper_without_system_access_has_no_devices_or_proc(jail, ws):
    (ws / "a.txt").write_text("alpha\n")
    p = run(jail, HelperProfile("t", system=False), "cat a.txt; cat /dev/zero | head -c 1; ls /proc/self/", ws)
    assert "alpha" in p.stdout
    assert p.stdout.strip() == "alpha", p.stdout  # no device, no /proc of its own


def test_masks_apply_to_helpers(jail, ws):
    (ws / "keep.txt").write_text("kept\n")
    (ws / "secret.txt").write_text("hidden-value\n")
    p = run(jail, HelperProfile("t", system=False), "cat keep.txt secret.txt", ws, masked=[ws / "secret.txt"])
    assert "kept" in p.stdout and "hidden-value" not in p.stdout


def test_threads_but_no_processes(jail, ws):
    code = ("import os, threading; t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()\n"
            "try:\n    pid = os.fork()\nexcept OSError as e:\n    print('fork refused', e.errno)\nelse:\n"
            "    os._exit(0) if pid == 0 else print('forked')")
    wrap = jail.helper(HelperProfile("t", system=False, no_processes=True, readable=(Path(SYSTEM_PYTHON).parent,)))
    argv, env, preexec, *cleanup = wrap([SYSTEM_PYTHON, "-c", code], ws, dict(os.environ))
    p = subprocess.run(argv, cwd=ws, env=env, preexec_fn=preexec, capture_output=True, text=True, timeout=60)
    assert "thread" in p.stdout
    if jail.jail.backend == "landlock":  # under bwrap its pid namespace ends whatever it starts
        assert "fork refused" in p.stdout and "forked" not in p.stdout, p.stdout + p.stderr


# Programs a helper may start that try to outlive it, each printing "ready" once what it
# started is running (a readiness that names the daemon itself: the marker also shows in its
# parents' command lines, which come and go while it starts).
LEAVERS = {
    # the classic daemon: its parent gone at once, its own session, nobody's child but a reaper's
    "double-fork": "if os.fork(): os._exit(0)\nos.setsid(); ready(); time.sleep(300)",
    # a child in a session of its own whose parent stays
    "setsid-child": "if os.fork() == 0:\n    os.setsid(); ready(); time.sleep(300)\ntime.sleep(300)",
    # a new process every few milliseconds, each generation's parent exiting: a pid that hops
    # (for 60 s at most: a scan of /proc rarely sees it, so a miss could not be cleaned up)
    "hops": ("if os.fork(): os._exit(0)\nos.setsid(); ready()\nstart = time.monotonic()\n"
             "while time.monotonic() - start < 60:\n    time.sleep(0.002)\n    if os.fork(): os._exit(0)"),
    # forks in a loop, every child staying
    "spawns": ("if os.fork(): os._exit(0)\nn = 0\n"
               "while True:\n    if os.fork() == 0:\n        time.sleep(300); os._exit(0)\n"
               "    n += 1\n    if n == 5: ready()\n    time.sleep(0.005)"),
    # forks in a loop with a large heap, so that each fork takes a while in the kernel: a stop
    # may arrive mid-fork, the child appearing after the listing that saw its parent
    "spawns-big": ("if os.fork(): os._exit(0)\nheap = b'x' * (256 << 20)\nn = 0\n"
                   "while True:\n    if os.fork() == 0:\n        time.sleep(300); os._exit(0)\n"
                   "    n += 1\n    if n == 3: ready()"),
    # the first thread of the intermediate exits (pthread_exit): the process shows as a zombie
    # while its threads run on, and fork
    "leader-gone": ("import ctypes, threading\nif os.fork(): os._exit(0)\n"
                    "def run(first):\n    time.sleep(0.3)\n"
                    "    if os.fork() == 0:\n        os.setsid(); time.sleep(300); os._exit(0)\n"
                    "    if first:\n        time.sleep(0.2); ready()\n    time.sleep(300)\n"
                    "ts = [threading.Thread(target=run, args=(i == 0,)) for i in range(2)]\n"
                    "[t.start() for t in ts]\nctypes.CDLL(None).pthread_exit(None)"),
    # the intermediate parent is multi-threaded: threads busy, each thread forks a daemon
    "threads": ("import threading\nif os.fork(): os._exit(0)\n"
                "def run():\n    if os.fork() == 0:\n        os.setsid(); time.sleep(300); os._exit(0)\n"
                "    while True: pass\n"
                "ts = [threading.Thread(target=run, daemon=True) for _ in range(4)]\n"
                "[t.start() for t in ts]\ntime.sleep(0.2); ready()\ntime.sleep(300)"),
}
LEAVER_PRELUDE = "import os, sys, time\ndef ready():\n    os.write(1, b'ready\\n')\n"
# The helper itself: starts the program and reaps whatever is orphaned to it, as a server would.
LEAVER_ROOT = ("import os, subprocess, sys, time\n"
               "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]], stdin=subprocess.DEVNULL)\n"
               "while True:\n    try: os.wait()\n    except ChildProcessError: time.sleep(0.1)")


@pytest.mark.parametrize("cgroups", ["cgroups", "no-cgroups"])
@pytest.mark.parametrize("leaver", sorted(LEAVERS))
def test_end_tree_ends_everything_a_helper_started(backend, leaver, cgroups, ws, tmpd, request):
    """Nothing a long-lived helper started outlives `end_tree`, under Landlock (a subreaper) and
    bwrap (a pid namespace), with and without the session cgroups (whose kill at close would
    hide a miss)."""
    if (backend, leaver, cgroups) == ("landlock", "hops", "no-cgroups"):
        # a known limit (docs/security.md): with nothing but the process table to go by, a
        # process that forks and exits every few milliseconds outruns end_tree on a loaded
        # machine (3 of 3 runs at load ~8), and the one it misses goes to init; a cgroup or a pid
        # namespace ends it. Checked exactly below, so a fix shows as a pass.
        request.applymarker(pytest.mark.xfail(reason="end_tree can miss a pid hopper under load without a cgroup",
                                              strict=False))
    limits = Limits() if cgroups == "cgroups" else Limits(processes=0, memory_mb=0)
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode=backend, limits=limits, name=sandbox_name()))
    marker = f"codebelt-end-tree-{uuid.uuid4().hex[:12]}"
    try:
        assert sb.jail.backend == backend, sb.jail.reason
        wrap = sb.helper(HelperProfile("t", long_lived=True))
        argv, env, preexec, *cleanup = wrap([SYSTEM_PYTHON, "-c", LEAVER_ROOT, LEAVER_PRELUDE + LEAVERS[leaver], marker],
                                            ws, dict(os.environ))
        proc = subprocess.Popen(argv, cwd=ws, env=env, preexec_fn=preexec, start_new_session=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            line = proc.stdout.readline() if ready else b""
            assert line == b"ready\n", (line, proc.poll(), proc.stderr.read() if proc.poll() is not None else "")
            end_tree(proc.pid)
            proc.wait(10)
            assert _gone(marker) == [], f"{leaver}: outlived its helper"
            # exact, where a scan of /proc can miss a process that hops from pid to pid: every
            # process of the tree holds the stdout pipe (none closes it), so its end means none is left
            assert _pipe_ends(proc.stdout, 10), f"{leaver}: something it started still holds its output"
        finally:
            proc.kill()
            proc.wait()
            _kill_all_with(marker, proc.stdout)
            proc.stdout.close()
            proc.stderr.close()
            for done in cleanup:
                done()
    finally:
        sb.close()


def _pipe_ends(out, timeout: float) -> bool:
    """Whether the pipe reaches its end (every holder of its write end gone) within `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([out], [], [], max(0.0, deadline - time.monotonic()))[0]:
            if not os.read(out.fileno(), 4096):
                return True
    return False


def _kill_all_with(marker: str, out) -> None:
    """Whatever a failed run left (a process that hops from pid to pid included): its process
    groups and itself stopped and killed until the output pipe, which all of them hold, ends —
    a scan of /proc alone can miss a pid that hops, and leave it running for good."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _pipe_ends(out, 0.05):
        for p in _with(marker):
            try:
                group = os.getpgid(p)
                if group > 1 and group != os.getpgid(0):
                    os.killpg(group, signal.SIGKILL)
            except OSError:
                pass
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                try:
                    os.kill(p, sig)
                except OSError:
                    pass


def _gone(marker: str) -> list[int]:
    """The processes with `marker` still there once the killed ones had time to be reaped
    (their parents reap them: the helper's own parent, init)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not [p for p in _with(marker) if not _zombie(p)]:
            return []
        time.sleep(0.05)
    return [p for p in _with(marker) if not _zombie(p)]


def _zombie(pid: int) -> bool:
    """Every thread of it exited (its parent has yet to reap it)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        states = [Path(f"/proc/{pid}/task/{t}/stat").read_bytes() for t in tasks]
    except OSError:
        return True
    return all(st[st.rfind(b")") + 2:][:1] in (b"Z", b"X") for st in states)


def _with(marker: str) -> list[int]:
    """The processes whose command line holds `marker` — read through each thread, since a
    process whose first thread exited shows an empty one."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                lines = [Path(f"/proc/{pid}/cmdline").read_bytes()]
                if not lines[0]:
                    lines += [Path(f"/proc/{pid}/task/{t}/cmdline").read_bytes() for t in os.listdir(f"/proc/{pid}/task")]
            except OSError:
                continue
            if any(marker.encode() in line for line in lines):
                out.append(int(pid))
    return out


def test_install_dirs_never_expose_the_home():
    home = Path(os.path.expanduser("~"))
    for program in (home / ".local" / "bin" / "tool", home / "tool", Path("/usr/bin/env")):
        for d in install_dirs(program):
            assert d.resolve() not in (home.resolve(), (home / ".local").resolve(), Path("/")), (program, d)
