"""The helper jail (`Sandbox.helper`), per backend: what a helper sees of the environment, where
it may write, what a helper without system access sees, and that a helper may start threads but
no process when its profile says so — each checked by running real programs."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from codebelt.sandbox.helpers import HelperProfile, end_tree, install_dirs

from .conftest import SYSTEM_PYTHON


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


def test_end_tree_ends_daemons_below_a_subreaper(jail, ws):
    marker = f"codebelt-end-tree-{os.getpid()}"
    wrap = jail.helper(HelperProfile("t", long_lived=True))
    daemon = f"import os, time\nif os.fork(): os._exit(0)\nos.setsid(); time.sleep(300)"
    argv, env, preexec, *cleanup = wrap(
        ["/bin/bash", "-c", f"{SYSTEM_PYTHON} -c '{daemon}' {marker} </dev/null >/dev/null; exec sleep 300"],
        ws, dict(os.environ))
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, cwd=ws, env=env, preexec_fn=preexec, start_new_session=True, stderr=err)
    try:
        deadline = time.monotonic() + 30  # an interpreter's start on a loaded machine
        while not _with(marker) and time.monotonic() < deadline and proc.poll() is None:
            subprocess.run(["sleep", "0.05"])
        err.seek(0)
        assert _with(marker), f"the daemon did not start (helper {proc.poll()}): {err.read()[-2000:]!r}"
        end_tree(proc.pid)
        proc.wait(10)
        for _ in range(100):
            if not _with(marker):
                break
            subprocess.run(["sleep", "0.05"])
        assert not _with(marker), "the daemon outlived its helper"
    finally:
        proc.kill()
        err.close()
        for done in cleanup:
            done()


def _with(marker: str) -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    out.append(int(pid))
            except OSError:
                pass
    return out


def test_install_dirs_never_expose_the_home():
    home = Path(os.path.expanduser("~"))
    for program in (home / ".local" / "bin" / "tool", home / "tool", Path("/usr/bin/env")):
        for d in install_dirs(program):
            assert d.resolve() not in (home.resolve(), (home / ".local").resolve(), Path("/")), (program, d)
