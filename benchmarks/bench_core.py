"""Pipeline overhead: a trivial tool call with and without the audit log, side by side.

    .venv/bin/python benchmarks/bench_core.py [N]

Reports the median and p99 per call, and the audit's added median cost (goal: under 1 ms).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from codebelt import Session  # noqa: E402
from core.tools_for_tests import ALL  # noqa: E402


def measure(session: Session, n: int) -> list[float]:
    for _ in range(200):  # warm-up
        session.call("Echo", {"text": "x"})
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        session.call("Echo", {"text": "x", "times": "2"})
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        off = Session(root, audit=False, load_user_settings=False, tools=ALL)
        on = Session(root, audit=root.parent / f"bench-audit-{time.time_ns()}.db", load_user_settings=False, tools=ALL)
        rows = []
        # Interleave rounds so machine noise hits both sides alike.
        a_all, b_all = [], []
        for _ in range(5):
            a_all += measure(off, n // 5)
            b_all += measure(on, n // 5)
        t0 = time.perf_counter()
        on._audit.flush(60)
        flush_ms = (time.perf_counter() - t0) * 1000
        for name, xs in (("call, audit off", a_all), ("call, audit on", b_all)):
            xs = sorted(xs)
            rows.append((name, statistics.median(xs), xs[int(len(xs) * 0.99)]))
        off.close()
        on.close()
    print(f"{'what':<22}{'median ms':>12}{'p99 ms':>10}")
    for name, med, p99 in rows:
        print(f"{name:<22}{med:>12.4f}{p99:>10.4f}")
    print(f"audit overhead (median): {rows[1][1] - rows[0][1]:.4f} ms per call; "
          f"writer backlog flushed in {flush_ms:.1f} ms after {n} calls")


if __name__ == "__main__":
    main()
