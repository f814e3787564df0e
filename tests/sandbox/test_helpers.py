"""The helper jail (`Sandbox.helper`), per backend: what a helper sees of the environment, where
it may write, what a helper without system access sees, and that a helper may start threads but
no process when its profile says so — each checked by running real programs."""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from codebelt.sandbox import Limits, Sandbox, SandboxConfig
from codebelt.sandbox import reaper
from codebelt.sandbox.helpers import HelperProfile, end_tree, install_dirs

from .conftest import SYSTEM_PYTHON, backend_unusable, sandbox_name


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


def _start(sb: Sandbox, ws: Path, program: list[str], stdin=subprocess.DEVNULL) -> tuple:
    """A long-lived helper running `program`: (process, cleanups)."""
    wrap = sb.helper(HelperProfile("t", long_lived=True))
    argv, env, preexec, *cleanup = wrap(program, ws, dict(os.environ))
    proc = subprocess.Popen(argv, cwd=ws, env=env, preexec_fn=preexec, start_new_session=True,
                            stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, cleanup


def _leaver(leaver: str, marker: str) -> list[str]:
    return [SYSTEM_PYTHON, "-c", LEAVER_ROOT, LEAVER_PRELUDE + LEAVERS[leaver], marker]


def _ready(out, proc) -> None:
    ready, _, _ = select.select([out], [], [], 60)
    line = out.readline() if ready else b""
    assert line == b"ready\n", (line, proc.poll(), proc.stderr.read() if proc.poll() is not None else "")


@pytest.mark.parametrize("cgroups", ["cgroups", "no-cgroups"])
@pytest.mark.parametrize("leaver", sorted(LEAVERS))
def test_end_tree_ends_everything_a_helper_started(backend, leaver, cgroups, ws, tmpd):
    """Nothing a long-lived helper started outlives `end_tree`, under Landlock (a reaper above it,
    where signals can be scoped) and bwrap (a pid namespace), with and without the session
    cgroups (whose kill at close would hide a miss)."""
    limits = Limits() if cgroups == "cgroups" else Limits(processes=0, memory_mb=0)
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode=backend, limits=limits, name=sandbox_name()))
    marker = f"codebelt-end-tree-{uuid.uuid4().hex[:12]}"
    try:
        assert sb.jail.backend == backend, sb.jail.reason
        proc, cleanup = _start(sb, ws, _leaver(leaver, marker))
        try:
            _ready(proc.stdout, proc)
            end_tree(proc.pid)
            proc.wait(10)
            assert _gone(marker) == [], f"{leaver}: outlived its helper"
            # exact, where a scan of /proc can miss a process that hops from pid to pid: every
            # process of the tree holds the stdout pipe (none closes it), so its end means none is left
            assert _pipe_ends(proc.stdout, 10), f"{leaver}: something it started still holds its output"
        finally:
            _clean_up(proc, proc.stdout, marker, cleanup)
    finally:
        sb.close()


def _clean_up(proc, out, marker: str, cleanup) -> None:
    proc.kill()
    proc.wait()
    _kill_all_with(marker, out)
    out.close()
    proc.stderr.close()
    for done in cleanup:
        done()


def _reaped_sandbox(ws: Path, tmpd: Path) -> Sandbox:
    if backend_unusable("landlock"):
        pytest.skip(f"landlock cannot work here: {backend_unusable('landlock')}")
    if not reaper.available():
        pytest.skip("no Landlock signal scoping here (ABI < 6): helpers have no reaper")
    limits = Limits(processes=0, memory_mb=0)  # no cgroup kill to hide a miss
    return Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode="landlock", limits=limits, name=sandbox_name()))


# A helper that turns on its reaper (its parent) and the reaper's watcher (whose pid it is told
# on its input): every signal and ptrace refused; then a child of its own stops everything it may
# signal (kill(-1)), which must spare them.
ATTACKER = """
import ctypes, json, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
said = {}
for who, pid in (('reaper', os.getppid()), ('watcher', int(sys.stdin.readline()))):
    for sig in (signal.SIGSTOP, signal.SIGKILL, signal.SIGTERM, signal.SIGCONT):
        try:
            os.kill(pid, sig)
            said[f'{who} {sig.name}'] = 'sent'
        except OSError as e:
            said[f'{who} {sig.name}'] = e.errno
    for name, request in (('attach', 16), ('seize', 0x4206)):
        said[f'{who} ptrace {name}'] = 'traced' if libc.ptrace(request, pid, 0, 0) == 0 else ctypes.get_errno()
os.write(1, (json.dumps(said) + '\\n').encode())
if os.fork() == 0:
    os.setsid()
    os.kill(-1, signal.SIGSTOP)
    os._exit(0)
time.sleep(300)
"""


def test_a_helper_cannot_signal_or_trace_its_reaper(ws, tmpd):
    sb = _reaped_sandbox(ws, tmpd)
    marker = f"codebelt-end-tree-{uuid.uuid4().hex[:12]}"
    try:
        proc, cleanup = _start(sb, ws, [SYSTEM_PYTHON, "-c", ATTACKER, marker], stdin=subprocess.PIPE)
        try:
            helper, watcher = _children(proc.pid)
            proc.stdin.write(f"{watcher}\n".encode())
            proc.stdin.close()
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            line = proc.stdout.readline() if ready else b""
            said = json.loads(line) if line else proc.stderr.read()
            assert isinstance(said, dict) and len(said) == 12 and set(said.values()) == {errno.EPERM}, said
            deadline = time.monotonic() + 10  # its child's kill(-1, SIGSTOP) stops the helper itself
            while _state(helper) != "T" and time.monotonic() < deadline:
                time.sleep(0.02)
            assert _state(helper) == "T"
            # alive and not stopped: sleeping, or running on a busy machine (state R)
            states = [_state(proc.pid), _state(watcher)]
            assert all(s in ("S", "R", "D") for s in states), f"the reaper or its watcher was stopped or killed: {states}"
            end_tree(proc.pid)
            assert proc.wait(10) == -signal.SIGKILL, proc.stderr.read()  # the helper's status: killed by its reaper
            assert _pipe_ends(proc.stdout, 10)
        finally:
            _clean_up(proc, proc.stdout, marker, cleanup)
    finally:
        sb.close()


def _children(pid: int) -> tuple[int, int]:
    """The helper and the watcher below the reaper `pid`, once both are there."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        watchers = [c for c in children if Path(f"/proc/{c}/cmdline").read_bytes().endswith(b"\0watch\0")]
        if len(children) == 2 and len(watchers) == 1:
            return next(c for c in children if c not in watchers), watchers[0]
        time.sleep(0.01)
    raise AssertionError(f"{pid} has no helper and watcher below it")


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return stat[stat.rfind(b")") + 2:][:1].decode()


@pytest.mark.parametrize("leaver", ["double-fork", "hops"])
def test_nothing_is_left_when_the_reaper_is_killed(leaver, ws, tmpd):
    """The reaper killed outright (SIGKILL to it and its process group): its watcher ends the tree."""
    sb = _reaped_sandbox(ws, tmpd)
    marker = f"codebelt-end-tree-{uuid.uuid4().hex[:12]}"
    try:
        proc, cleanup = _start(sb, ws, _leaver(leaver, marker))
        try:
            _ready(proc.stdout, proc)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            assert _pipe_ends(proc.stdout, 10), f"{leaver}: outlived its killed reaper"
        finally:
            _clean_up(proc, proc.stdout, marker, cleanup)
    finally:
        sb.close()


# A helper that starts the program, waits for its first process (which leaves at once) and exits
# by itself, as a crashing server would.
EXITING_ROOT = ("import subprocess, sys, time\n"
                "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]], stdin=subprocess.DEVNULL).wait()\n"
                "time.sleep(0.5)\nsys.exit(3)")


@pytest.mark.parametrize("leaver", ["double-fork", "hops"])
def test_nothing_is_left_when_the_helper_exits_by_itself(leaver, ws, tmpd):
    """The helper exits on its own, no end_tree: its reaper ends what it left and exits with its status."""
    sb = _reaped_sandbox(ws, tmpd)
    marker = f"codebelt-end-tree-{uuid.uuid4().hex[:12]}"
    try:
        proc, cleanup = _start(sb, ws, [SYSTEM_PYTHON, "-c", EXITING_ROOT, LEAVER_PRELUDE + LEAVERS[leaver], marker])
        try:
            _ready(proc.stdout, proc)
            assert proc.wait(10) == 3
            assert _pipe_ends(proc.stdout, 10), f"{leaver}: outlived its helper's exit"
        finally:
            _clean_up(proc, proc.stdout, marker, cleanup)
    finally:
        sb.close()


# codebelt's side, in a process of its own: starts a leaver below a long-lived helper, its output
# the pipe it was given, and waits to be killed.
CODEBELT_SIDE = """
import os, subprocess, sys, time
from pathlib import Path
from codebelt.sandbox import Limits, Sandbox, SandboxConfig
from codebelt.sandbox.helpers import HelperProfile
backend, ws, tmpd, name, *program = sys.argv[1:]
sb = Sandbox(SandboxConfig((Path(ws),), Path(tmpd), mode=backend, limits=Limits(processes=0, memory_mb=0), name=name))
assert sb.jail.backend == backend, sb.jail.reason
argv, env, preexec, *cleanup = sb.helper(HelperProfile("t", long_lived=True))(program, ws, dict(os.environ))
stuck = os.environ.get("STUCK_BEFORE_EXEC") == "1"
def stuck_preexec():  # the helper's side never reaches its exec (holding every codebelt descriptor)
    preexec()
    os.write(1, b"ready\\n")
    time.sleep(300)
subprocess.Popen(argv, cwd=ws, env=env, preexec_fn=stuck_preexec if stuck else preexec, start_new_session=True,
                 stdin=subprocess.DEVNULL)
time.sleep(300)
"""


@pytest.mark.parametrize("leaver", ["double-fork", "hops", "stuck-before-exec"])
def test_nothing_is_left_when_codebelt_is_killed(backend, leaver, ws, tmpd):
    """codebelt killed while a helper runs (no end_tree, no cleanup, no session close): under
    Landlock the reaper sees its control pipe end, under bwrap the sandbox dies with its parent.
    Also while the helper's side is still between fork and exec, holding copies of codebelt's
    descriptors (Landlock: a bwrap not yet executed is no sandbox yet)."""
    if backend == "landlock" and not reaper.available():
        pytest.skip("no Landlock signal scoping here (ABI < 6): helpers have no reaper")
    stuck = leaver == "stuck-before-exec"
    if stuck and backend != "landlock":
        pytest.skip("before its exec a bwrap helper is codebelt's own child, not yet a sandbox")
    marker = f"codebelt-end-tree-{uuid.uuid4().hex[:12]}"
    read, write = os.pipe()
    out = os.fdopen(read, "rb", buffering=0)
    side = subprocess.Popen([sys.executable, "-c", CODEBELT_SIDE, backend, str(ws.resolve()), str(tmpd.resolve()),
                             sandbox_name(), *_leaver("double-fork" if stuck else leaver, marker)],
                            stdin=subprocess.DEVNULL, stdout=write, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "STUCK_BEFORE_EXEC": "1" if stuck else "0"})
    os.close(write)
    try:
        _ready(out, side)
        side.kill()
        side.wait(10)
        assert _pipe_ends(out, 10), f"{leaver}: outlived codebelt"
    finally:
        _clean_up(side, out, marker, [])


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
