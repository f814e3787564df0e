"""Sandbox overhead: a sandboxed command versus an unsandboxed one, per backend — the write
sandbox, the read-only jail (what an auto-allowed `ls` runs in; under bwrap with and without
the Landlock layer inside that refuses FIFO writes) and ripgrep's helper jail (no devices, no
/proc, no new process, no cgroup) — in the same run.

Each round spawns the command once per variant (interleaved, so machine noise hits all alike),
the way the Bash runner does: argv list, own session, stdin /dev/null, preexec_fn from the
wrapper. The wrapper call itself (building bwrap's argv, the process-cap bookkeeping) is inside
the timed region. Reported: median and p90 wall time, and the median added over unsandboxed.
Aims: < 10 ms added with Landlock, < 30 ms with bwrap.

    .venv/bin/python benchmarks/bench_sandbox.py [--rounds 200] [--command true|bash|ls]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codebelt.sandbox import Sandbox, SandboxConfig
from codebelt.sandbox.helpers import HelperProfile

# ripgrep's profile (tools/_services.py), for any program: what a jailed helper pays per start
RG_LIKE = HelperProfile("bench", system=False, prefer_landlock=True, cgroups=False, no_processes=True)

AIMS_MS = {"landlock": 10.0, "bwrap": 30.0, "jail-landlock": 10.0, "jail-bwrap": 30.0}


def spawn(wrap, argv: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    env, preexec, cleanup = dict(os.environ), None, []
    if wrap is not None:
        argv, env, preexec, *cleanup = wrap(argv, cwd, env)
    subprocess.run(argv, cwd=cwd, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                   check=True, timeout=30)
    for done in cleanup:
        done()
    return (time.perf_counter() - t0) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--command", choices=["true", "bash", "ls"], default="true",
                    help="true: /bin/true; bash: bash -c true (what the Bash tool spawns); ls: bash -c ls")
    args = ap.parse_args()
    argv = {"true": ["/bin/true"], "bash": ["/bin/bash", "-c", "true"], "ls": ["/bin/bash", "-c", "ls -la"]}[args.command]

    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as d:
        ws, tmp = Path(d, "ws"), Path(d, "tmp")
        ws.mkdir()
        tmp.mkdir()
        for i in range(20):  # something for `ls` to list
            (ws / f"file{i}.txt").write_text("x\n")
        variants: dict[str, object] = {"unsandboxed": None}
        sandboxes, skipped = [], []
        for backend in ("landlock", "bwrap"):
            t0 = time.perf_counter()
            sb = Sandbox(config=SandboxConfig((ws,), tmp, mode=backend, name="codebelt-bench"))
            probe_ms = (time.perf_counter() - t0) * 1000
            sandboxes.append(sb)
            if sb.status.active:
                variants[backend] = sb.wrapper()
                print(f"{backend}: probe {probe_ms:.1f} ms; {sb.status.reason}; {sb.status.process_limit}")
            else:
                skipped.append(f"{backend}: unavailable ({sb.status.reason})")
            if sb.jail.backend == backend:
                variants[f"jail-{backend}"] = sb.jail_wrapper()
                print(f"jail-{backend}: {sb.jail.reason}")
                variants[f"helper-{backend}"] = sb.helper(RG_LIKE)
                if backend == "bwrap" and sb._stage_abi:
                    # the jail as it was before the Landlock layer, to show what the layer costs
                    bare = Sandbox(config=SandboxConfig((ws,), tmp, mode=backend, name="codebelt-bench"))
                    bare._stage_abi = 0
                    sandboxes.append(bare)
                    variants["jail-bwrap-no-layer"] = bare.jail_wrapper()
            else:
                skipped.append(f"jail-{backend}: unavailable ({sb.jail.reason})")
        times: dict[str, list[float]] = {k: [] for k in variants}
        try:
            for name, wrap in variants.items():  # warm-up
                for _ in range(5):
                    spawn(wrap, argv, ws)
            for _ in range(args.rounds):
                for name, wrap in variants.items():
                    times[name].append(spawn(wrap, argv, ws))
        finally:
            for sb in sandboxes:
                sb.close()

    base = statistics.median(times["unsandboxed"])
    print(f"\n`{' '.join(argv)}`, {args.rounds} rounds, interleaved; {os.cpu_count()} CPUs, "
          f"Python {sys.version.split()[0]}\n")
    print(f"{'variant':<20} {'min ms':>7} {'median ms':>10} {'p90 ms':>8} {'added ms':>9} {'ratio':>6} {'aim':>12}")
    for name, ts in times.items():
        med = statistics.median(ts)
        p90 = statistics.quantiles(ts, n=10)[-1]
        added = med - base
        aim = AIMS_MS.get(name)
        verdict = "" if aim is None else (f"<{aim:g} ms " + ("ok" if added < aim else "MISSED"))
        print(f"{name:<20} {min(ts):>7.2f} {med:>10.2f} {p90:>8.2f} {added:>9.2f} {med / base:>5.1f}x {verdict:>12}")
    for line in skipped:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
