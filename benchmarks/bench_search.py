"""Search benchmark: Glob/Grep through Session.call vs raw rg, deepagents and rglob+re.

    .venv/bin/python benchmarks/bench_search.py [--copies N] [--repeat R] [--no-python]

Builds a corpus under benchmarks/.corpus/ (N copies of the Python standard library without
site-packages and __pycache__; N=10 is ~1 GB, ~25k files), then times, side by side:

- codebelt: `Session.call("Grep"/"Glob", …)` — the whole pipeline (validation, permission
  decision, audit record, formatting), exactly what an agent gets, with ripgrep in the
  read-only jail (the default) and unjailed (`sandbox.jail: false`) side by side;
- rg same: the same search run directly, with the flags that make rg itself produce the same
  result set (`--sortr=modified` / `--sort=path`, first 250 or 100 lines read, then killed;
  for content, the faster of that and a full parallel `rg -n`, whose lines are the same set);
- rg any: plain parallel rg (`rg -l`, `rg -n … | head -250`, `rg --files`): what a shell user
  gets — same files/lines for full listings, but in no particular order;
- deepagents: `FilesystemBackend.grep/glob` (literal search on rg --json; Python rglob glob);
- rglob+re: a plain pathlib walk with `re` (binary files skipped).

Each time is the median of R round-robin runs after a warm-up (page cache warm).
Result sets are checked against rg's own output. Last: a pattern that matches millions of
lines with the default head_limit, run in a child process to report its peak RSS.

deepagents is a benchmark-only dependency (`pip install -e .[bench]`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
CORPUS = HERE / ".corpus" / "search"
STDLIB = Path(sysconfig.get_path("stdlib"))
VCS = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")

from codebelt import Session  # noqa: E402
from codebelt.search.grep import GrepQuery, grep  # noqa: E402
from codebelt.search.glob import glob_files  # noqa: E402
from codebelt.search.ripgrep import locate  # noqa: E402

RG = locate()


# -- corpus ------------------------------------------------------------------------------------


def build_corpus(copies: int) -> Path:
    marker = CORPUS / ".built"
    if marker.exists() and marker.read_text() == f"{copies} {STDLIB}":
        return CORPUS
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    CORPUS.mkdir(parents=True)
    t0 = time.perf_counter()
    for i in range(copies):
        shutil.copytree(
            STDLIB, CORPUS / f"copy{i:02d}", symlinks=True,
            ignore=shutil.ignore_patterns("site-packages", "__pycache__"),
        )
    marker.write_text(f"{copies} {STDLIB}")
    print(f"built corpus: {copies} copies of {STDLIB} in {time.perf_counter() - t0:.1f} s")
    return CORPUS


def corpus_stats(root: Path) -> tuple[int, int]:
    n = size = 0
    for dirpath, _, files in os.walk(root):
        for f in files:
            try:
                size += os.lstat(os.path.join(dirpath, f)).st_size
                n += 1
            except OSError:
                pass
    return n, size


# -- the contenders ----------------------------------------------------------------------------


def rg_args(*args: str) -> list[str]:
    vcs = [a for d in VCS for a in ("--glob", "!" + d)]
    return [RG, "--no-config", "--hidden", *args, *vcs]


def raw_rg(args: list[str], root: Path, head: int | None = None) -> list[bytes]:
    """Run rg, read its stdout as Python would; with `head`, stop after that many lines."""
    proc = subprocess.Popen(args, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    if head is None:
        out = proc.stdout.read().splitlines()
    else:
        out = []
        for line in proc.stdout:
            out.append(line.rstrip(b"\n"))
            if len(out) >= head:
                break
        proc.kill()
    proc.stdout.close()
    proc.wait()
    return out


def py_text_files(root: Path):
    """(path, bytes) of every text file outside VCS directories: the pathlib + re baseline's walk."""
    for p in root.rglob("*"):
        if any(part in VCS for part in p.parts) or not p.is_file():
            continue
        try:
            data = p.read_bytes()
        except OSError:
            continue
        if b"\0" not in data[:8192]:
            yield p, data


def py_files(root: Path, rx: re.Pattern[bytes]) -> set[str]:
    return {str(p.relative_to(root)) for p, data in py_text_files(root) if rx.search(data)}


def py_content(root: Path, rx: re.Pattern[bytes], head: int) -> list[str]:
    out: list[str] = []
    for p, data in py_text_files(root):
        for i, line in enumerate(data.splitlines(), 1):
            if rx.search(line):
                out.append(f"{p.relative_to(root)}:{i}:{line.decode('utf-8', 'replace')}")
                if len(out) >= head:
                    return out
    return out


def py_glob(root: Path, suffix_pattern: str) -> list[str]:
    files = [p for p in root.rglob(suffix_pattern) if p.is_file()]
    files.sort(key=lambda p: (-p.stat().st_mtime_ns, str(p)))
    return [str(p.relative_to(root)) for p in files]


# -- timing ------------------------------------------------------------------------------------


def timed(fn: Callable[[], object], repeat: int, warm: bool = True) -> tuple[float, object]:
    if warm:
        fn()
    times = []
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def race(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median wall time of each contender, run round-robin so machine noise hits all alike."""
    for fn in fns.values():
        fn()  # warm-up (page cache, imports)
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def fmt_s(x: float | None) -> str:
    return "—" if x is None else (f"{x * 1000:.0f} ms" if x < 10 else f"{x:.1f} s")


def fmt_r(x: float | None, base: float) -> str:
    return "—" if x is None else f"{x / base:.2f}×"


# -- peak memory of a huge-result search, in a child process -----------------------------------

CHILD = r"""
import json, re, sys, time
from codebelt import Session
root, mode = sys.argv[1], sys.argv[2]
s = Session(root, audit=False, load_user_settings=False)
t0 = time.perf_counter()
r = s.call("Grep", {"pattern": "e", "output_mode": mode})
dt = time.perf_counter() - t0
hwm = int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1))
print(json.dumps({"seconds": dt, "hwm_kb": hwm, "is_error": r.is_error,
                  "lines": len(r.text.splitlines()), "tail": r.text.splitlines()[-1][:160]}))
"""

BASELINE = r"""
import re
from codebelt import Session
print(int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)))
"""


def child_peak(root: Path, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(root), mode], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


# -- main --------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-python", action="store_true", help="skip the slow rglob+re baseline")
    args = ap.parse_args()

    root = build_corpus(args.copies)
    n_files, n_bytes = corpus_stats(root)
    print(f"corpus: {root} — {n_files:,} files, {n_bytes / 1e9:.2f} GB, rg {RG}")
    # deepagents finds rg on PATH: give it the same binary.
    os.environ["PATH"] = f"{Path(RG).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    try:
        from deepagents.backends.filesystem import FilesystemBackend

        da = FilesystemBackend(root_dir=root, virtual_mode=True)
    except ImportError:
        da = None
        print("deepagents not installed (pip install -e .[bench]): its column is skipped")

    tmp = Path(tempfile.mkdtemp(prefix="bench-search-"))
    s = Session(root, audit=tmp / "audit.db", load_user_settings=False)
    u = Session(root, audit=tmp / "audit-unjailed.db", load_user_settings=False, settings={"sandbox": {"jail": False}})
    from codebelt.tools._services import ripgrep_runs

    jail_backend = s.sandbox()._helper_backend(s.service(ripgrep_runs).profile)
    print(f"ripgrep's jail: {jail_backend or 'none'} (the session's jail for commands: {s.sandbox().jail.backend})")
    unjailed: dict[str, float] = {}
    R = args.repeat
    rows: list[tuple] = []
    checks: list[tuple[str, bool, str]] = []

    rare, common = "def __init_subclass__", "NotImplementedError"

    # 1. files_with_matches, rare and common patterns
    for label, pat in (("Grep files_with_matches (rare)", rare),
                       ("Grep files_with_matches (common)", "import")):
        r = s.call("Grep", {"pattern": pat})
        assert not r.is_error, r.text
        raw = raw_rg(rg_args("-l", "-e", pat, "."), root)
        want = {x.decode().removeprefix("./") for x in raw}
        t = race({
            "cb": lambda: s.call("Grep", {"pattern": pat}),
            "cbu": lambda: u.call("Grep", {"pattern": pat}),
            # same result set: rg sorts newest first itself (single-threaded), first 250
            "same": lambda: raw_rg(rg_args("-l", "--sortr=modified", "-e", pat, "."), root,
                                   head=250),
            "any": lambda: raw_rg(rg_args("-l", "-e", pat, "."), root),
        }, R)
        t_cb, t_same, t_any = t["cb"], t["same"], t["any"]
        t_da = t_py = None
        if da is not None:
            t_da, _ = timed(lambda: {m["path"] for m in da.grep(pat).matches}, max(1, R // 2))
        if not args.no_python:
            rx = re.compile(re.escape(pat).encode())
            t_py, _ = timed(lambda: py_files(root, rx), 1, warm=False)
        rows.append((label, t_cb, t_same, t_any, t_da, t_py))
        unjailed[label] = t["cbu"]
        full = grep(GrepQuery(pat, limit=None), str(root), rg=RG)
        first_page = r.data["filenames"]
        ok = set(full.files) == want and r.data["total"] == len(want) and set(first_page) <= want
        mt = [os.stat(root / f).st_mtime_ns for f in first_page]
        ok = ok and mt == sorted(mt, reverse=True)
        checks.append((label, ok, f"{len(want)} files; first page = the {len(first_page)} newest"))

    # 2. content, default head_limit 250: a sparse pattern and dense ones
    for label, pat in (("Grep content (sparse: full scan)", rare),
                       ("Grep content head 250 (medium)", common),
                       ("Grep content head 250 (dense)", "import")):
        inp = {"pattern": pat, "output_mode": "content"}
        r = s.call("Grep", inp)
        assert not r.is_error, r.text
        n_page = r.data["numLines"]
        # same result set: rg's path-sorted output, first 250 lines
        sorted_args = rg_args("-n", "--sort=path", "--max-columns=500", "--max-columns-preview",
                              "-e", pat, ".")
        raw = raw_rg(sorted_args, root, head=250)
        t = race({
            "cb": lambda: s.call("Grep", inp),
            "cbu": lambda: u.call("Grep", inp),
            "same": lambda: raw_rg(sorted_args, root, head=250),
            # the other way rg gets the same lines: a full parallel scan (sorted by the reader)
            "full": lambda: raw_rg(rg_args("-n", "-e", pat, "."), root),
            "any": lambda: raw_rg(rg_args("-n", "-e", pat, "."), root, head=250),
        }, R)
        t_cb, t_same, t_any = t["cb"], min(t["same"], t["full"]), t["any"]
        want = [x.decode("utf-8", "replace").removeprefix("./") for x in raw][:250]
        t_da = t_py = None
        if da is not None:
            t_da, _ = timed(lambda: da.grep(pat, max_count=250).matches, max(1, R // 2))
        if not args.no_python:
            rx = re.compile(re.escape(pat).encode())
            t_py, _ = timed(lambda: py_content(root, rx, 250), 1, warm=False)
        rows.append((label, t_cb, t_same, t_any, t_da, t_py))
        unjailed[label] = t["cbu"]
        got = r.data["content"].splitlines()
        # the page may end earlier than 250 lines at the 20,000-character cap
        checks.append((label, got == want[: len(got)] and len(got) > 0,
                       f"{n_page} lines (20,000-char cap), total "
                       f"{'more than ' if r.data['totalIsLowerBound'] else ''}{r.data['total']}"))

    # 3. Glob
    for label, pat, suffix in (("Glob **/*.py", "**/*.py", "*.py"),
                               ("Glob **/*.json", "**/*.json", "*.json")):
        r = s.call("Glob", {"pattern": pat})
        assert not r.is_error, r.text
        raw = raw_rg(rg_args("--files", "--glob", pat, "."), root)
        want = {x.decode().removeprefix("./") for x in raw}
        t = race({
            "cb": lambda: s.call("Glob", {"pattern": pat}),
            "cbu": lambda: u.call("Glob", {"pattern": pat}),
            "same": lambda: raw_rg(rg_args("--files", "--sortr=modified", "--glob", pat, "."),
                                   root, head=100),
            "any": lambda: raw_rg(rg_args("--files", "--glob", pat, "."), root),
        }, R)
        t_cb, t_same, t_any = t["cb"], t["same"], t["any"]
        t_da = t_py = None
        da_note = ""
        if da is not None:
            t_da, res = timed(lambda: da.glob(pat), 1)
            if res.truncated:
                da_note = "; deepagents hit its 5 s budget (partial result)"
        if not args.no_python:
            t_py, _ = timed(lambda: py_glob(root, suffix), 1, warm=False)
        rows.append((label, t_cb, t_same, t_any, t_da, t_py))
        unjailed[label] = t["cbu"]
        full = glob_files(pat, str(root), limit=None, rg=RG)
        ok = set(full.files) == want and set(r.data["filenames"]) <= want
        checks.append((label, ok, f"{len(want)} files, the 100 newest shown{da_note}"))

    s.close()
    u.close()
    shutil.rmtree(tmp, ignore_errors=True)

    # -- report
    print()
    head = (f"{'search':<34}{'codebelt':>10}{'rg same':>10}{'ratio':>7}{'rg any':>9}"
            f"{'ratio':>7}{'deepagents':>12}{'ratio':>8}{'rglob+re':>10}{'ratio':>8}")
    print(head)
    print("-" * len(head))
    for label, t_cb, t_same, t_any, t_da, t_py in rows:
        print(f"{label:<34}{fmt_s(t_cb):>10}{fmt_s(t_same):>10}{fmt_r(t_cb, t_same):>7}"
              f"{fmt_s(t_any):>9}{fmt_r(t_cb, t_any):>7}"
              f"{fmt_s(t_da):>12}{fmt_r(t_da, t_cb):>8}{fmt_s(t_py):>10}{fmt_r(t_py, t_cb):>8}")
    print("ratios: codebelt / rg (same result set; any order); deepagents and rglob+re / codebelt")
    print()
    print(f"{'the jail (' + (jail_backend or 'none') + ')':<34}{'jailed':>10}{'unjailed':>10}{'added':>9}{'ratio':>7}")
    for label, t_cb, *_ in rows:
        t_u = unjailed[label]
        print(f"{label:<34}{fmt_s(t_cb):>10}{fmt_s(t_u):>10}{(t_cb - t_u) * 1000:>7.1f}ms{fmt_r(t_cb, t_u):>7}")
    print()
    print("result sets equal to rg's:")
    for label, ok, note in checks:
        print(f"  {'OK  ' if ok else 'DIFF'} {label}: {note}")

    base_kb = int(subprocess.run([sys.executable, "-c", BASELINE], capture_output=True,
                                 text=True, check=True).stdout)
    total_e = sum(int(x.rsplit(b":", 1)[1]) for x in raw_rg(rg_args("-c", "-e", "e", "."), root))
    print()
    print(f"pattern 'e' matches {total_e:,} lines; default head_limit, in a child process "
          f"(interpreter + codebelt import alone: {base_kb / 1024:.0f} MB peak RSS):")
    for mode in ("content", "files_with_matches", "count"):
        res = child_peak(root, mode)
        print(f"  {mode:<20} {fmt_s(res['seconds']):>8}  peak RSS {res['hwm_kb'] / 1024:5.0f} MB"
              f"  → {res['tail']}")


if __name__ == "__main__":
    main()
