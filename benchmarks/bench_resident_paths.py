"""The resident's two request paths side by side: the compiled one (sandbox/_zygote.c) and the
Python one (resident.py's init), for the read-only jail and the write sandbox, beside the command
spawned plainly (waited by pidfd, no new session: its own time), rounds interleaved.

    .venv/bin/python benchmarks/bench_resident_paths.py [--rounds 100] [--gap 0.02] [--command bash|true]

Each start is timed the Bash runner's way (shell/execution/runner.py): the wrap, the resident's
launch, the wait for its status — without reading the wrapper's one-shot argv, which the runner
builds only when no resident takes the command (bench_sandbox.py's spawn unpacks it: ~0.28 ms
more per jailed start). The plain spawn is waited exactly (exact.py: a pidfd), in no new session.
`--gap`: seconds idle before each start (an agent's think time: this machine's idle CPUs halt,
and a wake-up costs).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from exact import run  # noqa: E402

from codebelt.sandbox import Sandbox, SandboxConfig, native  # noqa: E402


DEVNULL = os.open(os.devnull, os.O_WRONLY)


def spawn(wrap, argv: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    if wrap is None:
        run(argv, timeout=30, check=True, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
    else:
        wrapped = wrap(argv, cwd, dict(os.environ))
        proc = wrapped.launch({1: DEVNULL, 2: DEVNULL}) if wrapped.launch is not None else None
        if proc is None:
            raise RuntimeError("no resident took the command")
        if proc.wait(30) != 0:
            raise RuntimeError(f"{argv} failed in the resident")
    return (time.perf_counter() - t0) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--gap", type=float, default=0.0)
    ap.add_argument("--command", choices=["bash", "true"], default="bash")
    args = ap.parse_args()
    if not native.available():
        raise SystemExit("the compiled request path is not built here (pip install -e . with a C compiler)")
    argv = {"true": ["/bin/true"], "bash": ["/bin/bash", "-c", "true"]}[args.command]
    with tempfile.TemporaryDirectory(prefix="bench-resident-paths-") as d:
        ws, tmp = Path(d, "ws"), Path(d, "tmp")
        ws.mkdir()
        tmp.mkdir()
        variants: dict[str, object] = {"plain": None}
        sandboxes = {}
        for path in ("native", "python"):
            # read by codebelt when a resident starts: both of this session's start in the warm-up below
            os.environ["CODEBELT_RESIDENT_NATIVE"] = "1" if path == "native" else "0"
            sb = sandboxes[path] = Sandbox(config=SandboxConfig((ws,), tmp, mode="bwrap"))
            jail, sandbox = sb.jail_wrapper([]), sb.wrapper(lambda: [])
            for _ in range(5):
                spawn(jail, argv, ws)
            sb.wrapper(lambda: [])(argv, ws, dict(os.environ)).launch  # the resident write sandbox starts
            if sb._sandbox_resident is not None:
                sb._sandbox_resident.wait_started(30)
            for _ in range(5):
                spawn(sandbox, argv, ws)
            jr, sr = sb._resident, sb._sandbox_resident.current if sb._sandbox_resident else None
            if jr is None or sr is None:
                raise SystemExit(f"no resident here: {sb._resident_failed or (sb._sandbox_resident and sb._sandbox_resident.failed)}")
            for r in (jr, sr):
                if r.native != (path == "native"):
                    raise SystemExit(f"a resident is not on the {path} path ({r.native_failed})")
            variants[f"jail, {path}"] = jail
            variants[f"write sandbox, {path}"] = sandbox
        times: dict[str, list[float]] = {k: [] for k in variants}
        try:
            for _ in range(args.rounds):
                for name, wrap in variants.items():
                    if args.gap:
                        time.sleep(args.gap)
                    times[name].append(spawn(wrap, argv, ws))
        finally:
            for sb in sandboxes.values():
                sb.close()
    plain = statistics.median(times["plain"])
    print(f"`{' '.join(argv)}`, {args.rounds} rounds interleaved, {args.gap} s idle before each; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}\n")
    print(f"{'variant':<24} {'min ms':>7} {'median ms':>10} {'p90 ms':>8} {'+plain ms':>10} {'xplain':>7}")
    for name, ts in times.items():
        med = statistics.median(ts)
        p90 = statistics.quantiles(ts, n=10)[-1]
        print(f"{name:<24} {min(ts):>7.3f} {med:>10.3f} {p90:>8.3f} {med - plain:>+10.3f} {med / plain:>6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
