"""What the stage (sandbox/stage.py: the first program of a one-shot bwrap with a mask under a
writable directory) costs over the interpreter start it rides on, interleaved, outside bwrap
(bwrap's own cost is the same with or without it: bench_sandbox.py `--masked` against without).

    .venv/bin/python benchmarks/bench_stage.py [--rounds 300]

Rows: the interpreter starting and exec'ing `true` (what any stage costs at least), the stage as
the write sandbox runs it (no Landlock layer), and as the jail runs it (the layer added: ctypes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

from codebelt.sandbox.manager import STAGE_PYTHON, _stage_source

TRUE = "/bin/true"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=300)
    rounds = ap.parse_args().rounds
    rows = {
        "interpreter + exec true": ["-c", f"import os; os.execv({TRUE!r}, [{TRUE!r}])"],
        "stage, write sandbox (checks only)": ["-c", _stage_source(layer=False), "0", "--", "--", TRUE],
        "stage, jail (checks + Landlock layer)": ["-c", _stage_source(), "0", "--", "--", TRUE],
    }
    times: dict[str, list[float]] = {k: [] for k in rows}
    for _ in range(rounds):
        for name, args in rows.items():
            t0 = time.perf_counter()
            subprocess.run([STAGE_PYTHON, "-I", "-S", *args], check=True)
            times[name].append((time.perf_counter() - t0) * 1000)
    base = min(times["interpreter + exec true"])
    print(f"\n{STAGE_PYTHON} -I -S, {rounds} rounds interleaved; load average {os.getloadavg()[0]:.1f}\n")
    print(f"{'row':<40} {'min ms':>7} {'median ms':>10} {'+min ms':>8}")
    for name, ts in times.items():
        print(f"{name:<40} {min(ts):>7.2f} {statistics.median(ts):>10.2f} {min(ts) - base:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
