"""Bash tool overhead and output throughput, side by side with raw subprocess runs.

    .venv/bin/python benchmarks/bench_bash.py [--runs N] [--mb MB]

Rows (median wall time over N runs, same process, same machine, interleaved):
- `true`: raw `subprocess.run(["bash", "-c", "true"])` vs the runner alone (ShellProcess) vs
  the whole pipeline `Session.call("Bash", {"command": "true"})` (schema, permission check with
  the tree-sitter classifier, spawn, cwd tracking, result shaping, audit to SQLite).
  Audit on, sandbox off.
- bulk output: MB of output printed by the command; raw with stdout to /dev/null, raw captured
  into memory (subprocess.run(capture_output=True)), and through the tool (spooled to disk,
  then summarised: head, tail, line count).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from codebelt import Session  # noqa: E402
from codebelt.shell.execution.runner import ShellProcess, build_env, find_bash  # noqa: E402


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--bulk-runs", type=int, default=5)
    args = ap.parse_args()

    bash = find_bash()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        audit_db = Path(tmp) / "audit.db"
        session = Session(ws, sandbox="off", audit=audit_db, load_user_settings=False,
                          settings={"bash": {"autoBackground": False}})
        bulk_session = Session(ws, mode="bypassPermissions", sandbox="off", audit=audit_db,
                               load_user_settings=False, settings={"bash": {"autoBackground": False}})
        spool_dir = Path(tmp) / "spool"
        spool_dir.mkdir()
        env = build_env("inherit", [], Path(tmp), "bench.1")

        def raw_true():
            subprocess.run([bash, "-c", "true"], stdin=subprocess.DEVNULL, check=True)

        def runner_true():
            p = ShellProcess("true", cwd=ws, env=env, spool_path=spool_dir / "o.log",
                             record_cwd=True, marker="bench.1").start(watch=False)
            p.watch()

        def tool_true():
            r = session.call("Bash", {"command": "true"})
            assert not r.is_error, r.text

        for fn in (raw_true, runner_true, tool_true):  # warm-up (imports, tree-sitter, SQLite)
            for _ in range(10):
                fn()
        raw, runner, tool = [], [], []
        for _ in range(args.runs):  # interleaved, so machine noise hits all three alike
            raw.append(timed(raw_true))
            runner.append(timed(runner_true))
            tool.append(timed(tool_true))

        n = args.mb * 1_000_000
        produce = f"yes | head -c {n}"

        def raw_devnull():
            subprocess.run([bash, "-c", produce], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, check=True)

        def raw_capture():
            out = subprocess.run([bash, "-c", produce], stdin=subprocess.DEVNULL,
                                 capture_output=True, check=True).stdout
            assert len(out) == n

        def tool_bulk():
            r = bulk_session.call("Bash", {"command": produce})
            assert r.data["outputBytes"] == n and r.data["truncated"], r.text[:300]
            os.unlink(r.data["outputPath"])

        bulk = {"raw > /dev/null": [], "raw captured in memory": [], "Bash tool (spooled)": []}
        fns = [raw_devnull, raw_capture, tool_bulk]
        rss_before = _rss_mb()
        for _ in range(args.bulk_runs):
            for (name, samples), fn in zip(bulk.items(), fns):
                if fn is raw_capture:
                    continue  # measured last: it inflates this process's peak memory
                samples.append(timed(fn))
        rss_tool = _rss_mb()
        for _ in range(args.bulk_runs):
            bulk["raw captured in memory"].append(timed(raw_capture))
        session.close()
        bulk_session.close()

    base = median_ms(raw)
    print(f"Bash tool overhead — median of {args.runs} interleaved runs, audit on, sandbox off")
    print(f"{'what':<44}{'median ms':>11}{'vs raw':>9}")
    for name, samples in (("raw subprocess.run(bash -c true)", raw),
                          ("runner only (ShellProcess, spool, cwd trap)", runner),
                          ('Session.call("Bash", true) — full pipeline', tool)):
        m = median_ms(samples)
        print(f"{name:<44}{m:>11.2f}{m / base:>8.2f}×")
    print()
    print(f"Bulk output: {args.mb} MB (`{produce}`), median of {args.bulk_runs} runs")
    print(f"{'what':<44}{'median ms':>11}{'MB/s':>9}{'vs /dev/null':>14}")
    dn = median_ms(bulk["raw > /dev/null"])
    for name, samples in bulk.items():
        m = median_ms(samples)
        print(f"{name:<44}{m:>11.1f}{args.mb / (m / 1000):>9.0f}{m / dn:>13.2f}×")
    print(f"\npeak RSS of this process: {rss_before:.0f} MB before bulk runs, {rss_tool:.0f} MB after "
          "the tool's runs (before the in-memory capture runs)")
    return 0


def _rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    raise SystemExit(main())
