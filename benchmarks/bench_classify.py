"""Benchmark: shell command classification (parse + read-only + danger + decision).

Prints a table: median/p95 per command line after warm-up for typical 1–5 command lines, the
permission decision through the engine, and the time to analyse a ~10 KB script; targets are
median < 1 ms per line and < 20 ms for 10 KB. Run: .venv/bin/python benchmarks/bench_classify.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from codebelt.permissions.engine import PermissionEngine
from codebelt.permissions.requests import CommandRequest
from codebelt.settings import Settings
from codebelt.shell.analysis.analyze import analyze
from codebelt.shell.analysis.parse import parse
from codebelt.workspace import Workspace

TYPICAL = [
    "ls -la",
    "git status",
    "cat src/main.py | head -50",
    "rg -n 'def main' src --type py",
    "git log --oneline -20 && git diff --stat",
    "cd src && ls && cat main.py | wc -l",
    "npm run test -- --watch=false",
    "find . -name '*.py' -not -path './.venv/*' | xargs grep -l TODO | head",
    "sed -n '1,40p' src/main.py; awk -F: '{print $1}' data.txt | sort | uniq -c",
    "timeout 60 pytest -q tests/test_x.py 2>&1 | tail -20",
]


def script_10kb() -> str:
    lines = []
    i = 0
    while sum(len(x) + 1 for x in lines) < 10_000:
        lines.append(f"grep -n 'pattern{i}' src/file{i}.py | head -5 && echo done{i}")
        lines.append(f"cat README.md | wc -l; ls -la src/dir{i}")
        i += 1
    return "\n".join(lines)


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def bash_call_handling(root: Path, n: int = 200) -> float:
    """Median over the typical lines of what one Bash call does with its command before it
    spawns: schema check, concurrency check, interception check, permission decision, cwd
    tracking — all from the command's one parse."""
    from codebelt import Session

    with Session(root, audit=False, load_user_settings=False, sandbox="off") as s:
        def steps(c: str) -> None:
            prep = s._prepare("Bash", {"command": c})
            tool, p = prep.tool, prep.params
            tool.is_concurrency_safe(p)
            s.engine.decide("Bash", tool.permission_requests(p, s.context("Bash")))
            p.patch_invocation
            p.script.may_change_cwd

        lines = TYPICAL
        for c in lines:
            steps(c)
        return statistics.median(statistics.median(timed(lambda: steps(c), n)) for c in lines)


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="bench-classify-"))
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("def main(): pass\n")
    (root / ".git").mkdir()
    ws = Workspace(root)
    engine = PermissionEngine(Settings([("bench", {"sandbox": {"mode": "off"}, "permissions": {
        "allow": ["Bash(npm run test *)", "Bash(pytest *)"], "deny": ["Bash(curl *)"]}})]), ws, "default")
    for c in TYPICAL:  # warm-up: parser per thread, regexes, imports
        analyze(c, root, ws)
        engine.decide("Bash", [CommandRequest(c, root)])

    rows = []
    n = 300
    for c in TYPICAL:
        parse_t = timed(lambda: parse(c), n)
        ana_t = timed(lambda: analyze(c, root, ws), n)
        dec_t = timed(lambda: engine.decide("Bash", [CommandRequest(c, root)]), n)
        rows.append((c, len(parse(c).commands), statistics.median(parse_t), statistics.median(ana_t),
                     statistics.median(dec_t), sorted(dec_t)[int(n * 0.95)]))
    big = script_10kb()
    big_parse = timed(lambda: parse(big), 30)
    big_ana = timed(lambda: analyze(big, root, ws), 30)
    big_dec = timed(lambda: engine.decide("Bash", [CommandRequest(big, root)]), 30)

    w = 58
    print(f"{'command line':{w}} {'cmds':>4} {'parse ms':>9} {'analyze ms':>11} {'decide ms':>10} {'p95 ms':>8} {'vs 1 ms':>8}")
    print("-" * (w + 56))
    for c, k, p, a, d, p95 in rows:
        shown = c if len(c) <= w else c[: w - 1] + "…"
        print(f"{shown:{w}} {k:>4} {p:>9.3f} {a:>11.3f} {d:>10.3f} {p95:>8.3f} {d / 1.0:>7.2f}x")
    med = statistics.median(r[4] for r in rows)
    print("-" * (w + 56))
    print(f"{'median over typical lines (decide)':{w}} {'':>4} {'':>9} {'':>11} {med:>10.3f} {'':>8} {med / 1.0:>7.2f}x")
    print()
    print(f"{'10 KB script':{w}} {'cmds':>4} {'parse ms':>9} {'analyze ms':>11} {'decide ms':>10} {'':>8} {'vs 20 ms':>8}")
    k = len(parse(big).commands)
    bp, ba, bd = (statistics.median(x) for x in (big_parse, big_ana, big_dec))
    print(f"{f'{len(big):,} chars (too long: asks; analysed in full)':{w}} {k:>4} {bp:>9.2f} {ba:>11.2f} {bd:>10.2f} {'':>8} {ba / 20:>7.2f}x")
    print()
    call_med = bash_call_handling(root)
    print(f"{'a Bash call: everything it does with its command':{w}} {'':>4} {'':>9} {'':>11} {call_med:>10.3f}")
    print("  (parse once; concurrency check, apply_patch interception, permission analysis, cwd tracking)")
    print(f"\npython {sys.version.split()[0]}, {os.cpu_count()} cpus; medians of {n} runs (30 for the script)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
