"""Benchmark the patch engine against the floor: just reading and writing the same files.

    .venv/bin/python benchmarks/bench_patch.py [--repeat N]

Cases:
  big    a 500-chunk patch over one 100,000-line file
  many   a patch updating 1,000 small files (one chunk each)
Floors: reading + writing the same bytes in Python (plain, and via write_atomic with fsync like
the engine), and `cp` for the big file. `git apply` of the equivalent unified diff is shown as a
reference point when git is installed. Times are medians of N runs, files restored between runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from codebelt.files.atomic import write_atomic  # noqa: E402
from codebelt.patch import apply_patch  # noqa: E402

BIG_LINES = 100_000
BIG_HUNKS = 500
SMALL_FILES = 1_000
SMALL_LINES = 30


def big_case() -> tuple[dict[str, str], str, str]:
    """(files, codex patch, equivalent unified diff)."""
    lines = [f"    value_{i} = compute({i}, 'row {i % 97}')  # line {i}" for i in range(BIG_LINES)]
    step = BIG_LINES // BIG_HUNKS
    chunks, udiff = [], ["--- a/big.py\n", "+++ b/big.py\n"]
    for h in range(BIG_HUNKS):
        at = h * step + step // 2
        pre, post = lines[at - 3:at], lines[at + 1:at + 4]
        new = lines[at].replace("compute", "recompute")
        chunks.append("@@\n" + "".join(f" {x}\n" for x in pre) + f"-{lines[at]}\n+{new}\n"
                      + "".join(f" {x}\n" for x in post))
        udiff.append(f"@@ -{at - 2},7 +{at - 2},7 @@\n" + "".join(f" {x}\n" for x in pre)
                     + f"-{lines[at]}\n+{new}\n" + "".join(f" {x}\n" for x in post))
    patch = "*** Begin Patch\n*** Update File: big.py\n" + "".join(chunks) + "*** End Patch\n"
    return {"big.py": "".join(x + "\n" for x in lines)}, patch, "".join(udiff)


def many_case() -> tuple[dict[str, str], str, str]:
    files, chunks, udiff = {}, [], []
    for f in range(SMALL_FILES):
        name = f"pkg{f // 100}/mod_{f}.py"
        lines = [f"def func_{f}_{i}(x):" if i % 3 == 0 else f"    return x + {i}" for i in range(SMALL_LINES)]
        files[name] = "".join(x + "\n" for x in lines)
        at = SMALL_LINES // 2
        new = lines[at] + "  # patched"
        chunks.append(f"*** Update File: {name}\n@@\n" + "".join(f" {x}\n" for x in lines[at - 3:at])
                      + f"-{lines[at]}\n+{new}\n" + "".join(f" {x}\n" for x in lines[at + 1:at + 4]))
        udiff.append(f"--- a/{name}\n+++ b/{name}\n@@ -{at - 2},7 +{at - 2},7 @@\n"
                     + "".join(f" {x}\n" for x in lines[at - 3:at]) + f"-{lines[at]}\n+{new}\n"
                     + "".join(f" {x}\n" for x in lines[at + 1:at + 4]))
    return files, "*** Begin Patch\n" + "".join(chunks) + "*** End Patch\n", "".join(udiff)


def materialise(root: Path, files: dict[str, str]) -> None:
    if root.exists():
        shutil.rmtree(root)
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def timed(setup, fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        setup()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def read_write_all(root: Path, names, atomic: bool):
    def run():
        for n in names:
            p = root / n
            data = p.read_bytes()
            if atomic:
                write_atomic(p, data)
            else:
                p.write_bytes(data)
    return run


def bench(label: str, files: dict[str, str], patch: str, udiff: str, repeat: int, work: Path) -> list[tuple]:
    root = work / label
    setup = lambda: materialise(root, files)  # noqa: E731
    names = list(files)
    rows = []
    engine = timed(setup, lambda: apply_patch(patch, root), repeat)
    # Sanity: the engine really changed every file.
    assert all((root / n).read_text() != files[n] for n in names)
    engine_nosync = timed(setup, lambda: apply_patch(patch, root, fsync=False), repeat)
    dry = timed(setup, lambda: apply_patch(patch, root, dry_run=True), repeat)
    floor_read = timed(setup, lambda: [(root / n).read_bytes() for n in names], repeat)
    floor_plain = timed(setup, read_write_all(root, names, atomic=False), repeat)
    floor_atomic = timed(setup, read_write_all(root, names, atomic=True), repeat)
    rows.append((label, "apply_patch (engine, fsync)", engine, floor_atomic, "py read+write_atomic"))
    rows.append((label, "apply_patch (engine, no fsync)", engine_nosync, floor_plain, "py read+write"))
    rows.append((label, "dry run (parse, locate, render)", dry, floor_read, "py read"))
    if len(names) == 1:
        src = root / names[0]
        cp = shutil.which("cp")
        if cp:
            floor_cp = timed(setup, lambda: subprocess.run([cp, str(src), str(src) + ".copy"], check=True), repeat)
            rows.append((label, "apply_patch (engine, no fsync)", engine_nosync, floor_cp, "cp"))
    git = shutil.which("git")
    if git:
        diff_file = work / f"{label}.diff"
        diff_file.write_text(udiff)
        git_t = timed(setup, lambda: subprocess.run([git, "apply", "--unsafe-paths", str(diff_file)], cwd=root,
                                                    check=True), repeat)
        rows.append((label, "apply_patch (engine, no fsync)", engine_nosync, git_t, "git apply (same diff)"))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-patch-") as tmp:
        work = Path(tmp)
        rows = []
        for label, make in (("big: 500 chunks, 100k lines", big_case), ("many: 1,000 files", many_case)):
            files, patch, udiff = make()
            rows += bench(label.split(":")[0], files, patch, udiff, args.repeat, work)
    print(f"\npatch engine vs floor (median of {args.repeat} runs, {os.cpu_count()} CPUs)\n")
    header = ("case", "measured", "time", "floor", "floor time", "ratio")
    table = [header] + [(c, m, f"{t * 1000:.1f} ms", fl, f"{ft * 1000:.1f} ms", f"{t / ft:.1f}x")
                        for c, m, t, ft, fl in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for i, r in enumerate(table):
        print("| " + " | ".join(x.ljust(widths[j]) for j, x in enumerate(r)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return 0


if __name__ == "__main__":
    sys.exit(main())
