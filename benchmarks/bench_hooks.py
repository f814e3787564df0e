"""Benchmark: what hooks cost a tool call.

Side by side in one run: a Read through the Session with no hook configured, with one trivial
command hook (`true`, PreToolUse), and with a Python hook; and raw `subprocess.run(["bash", "-c",
"true"])` — the floor a command hook cannot beat (one process). Medians of interleaved runs.
Run: .venv/bin/python benchmarks/bench_hooks.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codebelt import Session

N = 200


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="bench-hooks-"))
    (root / "a.txt").write_text("hello\n" * 40)
    hook = {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "true"}]}]}}
    plain = Session(root, audit=False, load_user_settings=False)
    hooked = Session(root, audit=False, load_user_settings=False, settings=hook)
    python = Session(root, audit=False, load_user_settings=False)
    python.add_hook("PreToolUse", lambda payload: None, matcher="Read")
    cases = {
        "Read, no hook configured": lambda: plain.call("Read", {"file_path": "a.txt"}),
        "Read, one Python hook": lambda: python.call("Read", {"file_path": "a.txt"}),
        "Read, one command hook (`true`)": lambda: hooked.call("Read", {"file_path": "a.txt"}),
        'raw subprocess.run(["bash","-c","true"])': lambda: subprocess.run(["bash", "-c", "true"]),
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    for fn in cases.values():
        fn()
    for _ in range(N):
        for name, fn in cases.items():
            t = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t) * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["Read, no hook configured"]
    raw = med['raw subprocess.run(["bash","-c","true"])']
    print(f"{'what':45} {'median ms':>10} {'p95 ms':>8}")
    for k, v in times.items():
        print(f"{k:45} {med[k]:>10.3f} {sorted(v)[int(N * 0.95)]:>8.3f}")
    print(f"\none command hook adds {med['Read, one command hook (`true`)'] - base:.2f} ms to a call "
          f"= {(med['Read, one command hook (`true`)'] - base) / raw:.2f}× a raw process ({raw:.2f} ms)")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; medians of {N} interleaved runs")
    for s in (plain, hooked, python):
        s.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
