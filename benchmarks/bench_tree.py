"""What the size of the workspace costs a Bash call: the shared walk of the tree (files/scan.py)
that finds nested `.git`, `.claude`, `.env*` (protected and guarded for the write sandbox) and
the files Read deny rules cover (masked), refreshed as each command starts and after a writing
one ends. Side by side in one run, interleaved, at each size: a raw `bash -c true`; the Bash tool
running an auto-allowed `true` (read-only: the jail) and `touch x` (the write sandbox) in a
workspace whose walk is refreshed from inotify, and `touch x` in a copy whose walk is refreshed
by directory keys (an `lstat` of every directory: where inotify cannot be used, and how every
refresh was made before).

    .venv/bin/python benchmarks/bench_tree.py [--dirs 0 2000 10000] [--rounds 15] [--deny]

Each directory holds 5 files; a round waits 0.15 s first (an agent's think time: longer than
the 0.1 s a walk counts as current). `--deny`: with Read deny rules (`**/.env`, `secrets/**`).
The trees are written, synced and left to settle before the rounds (their writeback otherwise
slows everything for seconds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from codebelt import Session
from codebelt.files.scan import shared


def make_tree(ws: Path, dirs: int) -> None:
    ws.mkdir()
    for i in range(dirs):
        d = ws / f"pkg{i // 100}" / f"mod{i}"
        d.mkdir(parents=True)
        for j in range(5):
            (d / f"f{j}.py").write_text("x = 1\n")


def session(ws: Path, deny: bool) -> Session:
    settings: dict = {"sandbox": {"autoAllowBash": True, "mode": "bwrap"}, "bash": {"autoBackground": False}}
    if deny:
        settings["permissions"] = {"deny": ["Read(./**/.env)", "Read(./secrets/**)"]}
    return Session(ws, audit=False, load_user_settings=False, settings=settings)


def ok(result) -> None:
    if (result.data or {}).get("exitCode") != 0:
        raise RuntimeError(f"the command failed: {result.text[:300]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dirs", type=int, nargs="+", default=[0, 2000, 10000])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--deny", action="store_true")
    args = ap.parse_args()
    print(f"Bash calls by workspace size, {args.rounds} rounds, 0.15 s apart{', with Read deny rules' if args.deny else ''}\n")
    print(f"{'directories':>11}  {'row':<38} {'min ms':>7} {'median ms':>10}")
    for dirs in args.dirs:
        with tempfile.TemporaryDirectory(prefix="bench-tree-") as d:
            watched_ws, keyed_ws = Path(d, "watched"), Path(d, "keyed")
            make_tree(watched_ws, dirs)
            make_tree(keyed_ws, dirs)
            keyed = shared(keyed_ws.resolve())
            keyed._by_keys = True  # as where inotify cannot be used
            os.sync()
            time.sleep(3)
            watched, by_keys = session(watched_ws, args.deny), session(keyed_ws, args.deny)
            rows = {
                "bash -c true (raw)": lambda: subprocess.run(["/bin/bash", "-c", "true"], check=True),
                "Bash true, jailed (inotify)": lambda: ok(watched.call("Bash", {"command": "true"})),
                "Bash touch x, write sandbox (inotify)": lambda: ok(watched.call("Bash", {"command": "touch x"})),
                "Bash touch x, write sandbox (by keys)": lambda: ok(by_keys.call("Bash", {"command": "touch x"})),
            }
            times: dict[str, list[float]] = {k: [] for k in rows}
            try:
                for fn in rows.values():
                    for _ in range(3):
                        fn()
                for _ in range(args.rounds):
                    for name, fn in rows.items():
                        time.sleep(0.15)
                        t0 = time.perf_counter()
                        fn()
                        times[name].append((time.perf_counter() - t0) * 1000)
            finally:
                watched.close()
                by_keys.close()
            for name, ts in times.items():
                print(f"{dirs:>11,}  {name:<38} {min(ts):>7.2f} {statistics.median(ts):>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
