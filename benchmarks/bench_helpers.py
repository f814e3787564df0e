"""Helper start and end: what a long-lived helper (a language server) costs to start in the
read-only jail and to end with its tree, per backend, side by side in one run.

    .venv/bin/python benchmarks/bench_helpers.py [--repeat R]

Each round starts `python3 -c "print('ready'); sleep"` as a long-lived helper (`Sandbox.helper`,
`HelperProfile(long_lived=True)`), times the wrap + spawn until its first line arrives (start),
then `end_tree` + wait (end). Sides, round-robin, medians of R rounds after a warm-up:
- landlock + reaper: the server below a reaper (Landlock with signal scoping);
- landlock, no reaper: the server made a subreaper, its tree ended through /proc (as on kernels
  without signal scoping; forced here by turning the reaper off);
- bwrap: the server in a pid namespace;
- unjailed: plain Popen, killpg at the end (the floor).
ripgrep (Glob, Grep) starts no process and has no reaper: benchmarks/bench_search.py measures it.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from codebelt.sandbox import Limits, Sandbox, SandboxConfig, reaper  # noqa: E402
from codebelt.sandbox.helpers import HelperProfile, end_tree  # noqa: E402

PYTHON = "/usr/bin/python3"
PROGRAM = [PYTHON, "-c", "import sys, time; print('ready', flush=True); time.sleep(300)"]


def one(sb: Sandbox | None) -> tuple[float, float]:
    t0 = time.perf_counter()
    cleanup = []
    argv, env, preexec = PROGRAM, dict(os.environ), None
    if sb is not None:
        argv, env, preexec, *cleanup = sb.helper(HelperProfile("bench", long_lived=True))(PROGRAM, Path.cwd(),
                                                                                          dict(os.environ))
    proc = subprocess.Popen(argv, env=env, preexec_fn=preexec, start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE)
    select.select([proc.stdout], [], [], 30)
    assert proc.stdout.readline() == b"ready\n"
    t1 = time.perf_counter()
    if sb is not None:
        end_tree(proc.pid)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    t2 = time.perf_counter()
    proc.stdout.close()
    for done in cleanup:
        done()
    return t1 - t0, t2 - t1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    real_available = reaper.available
    with tempfile.TemporaryDirectory() as ws, tempfile.TemporaryDirectory() as tmp:
        def sandbox(mode: str) -> Sandbox:
            return Sandbox(SandboxConfig((Path(ws).resolve(),), Path(tmp).resolve(), mode=mode,
                                         limits=Limits(processes=0, memory_mb=0)))

        landlock, bwrap = sandbox("landlock"), sandbox("bwrap")
        sides = {"unjailed": (None, True)}
        if landlock.jail.backend == "landlock":
            if real_available():
                sides["landlock + reaper"] = (landlock, True)
            sides["landlock, no reaper"] = (landlock, False)
        if bwrap.jail.backend == "bwrap":
            sides["bwrap"] = (bwrap, True)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for rnd in range(args.repeat + 1):
            for name, (sb, with_reaper) in sides.items():
                reaper.available = real_available if with_reaper else (lambda: False)
                t = one(sb)
                if rnd:
                    times[name].append(t)
        reaper.available = real_available
        landlock.close()
        bwrap.close()
    floor = statistics.median(s for s, _ in times["unjailed"])
    print(f"{'side':22} {'start ms':>9} {'x unjailed':>10} {'end ms':>8}")
    for name, ts in times.items():
        start = statistics.median(s for s, _ in ts)
        end = statistics.median(e for _, e in ts)
        print(f"{name:22} {start * 1000:9.1f} {start / floor:10.2f} {end * 1000:8.1f}")


if __name__ == "__main__":
    main()
