"""File tools benchmark: deep page of a ~500 MB file, cached second page, one-line Edit of a
50 MB file, and `codebelt call Read` cold start — each next to its shell baseline, in one run,
the two sides in turn. Every baseline process is waited exactly (exact.py: woken by its exit,
not by a poll that sees it up to 50 ms late).

    .venv/bin/python benchmarks/bench_files.py [--quick]
    .venv/bin/python benchmarks/bench_files.py --open-path --before REF [--runs 5]
    .venv/bin/python benchmarks/bench_files.py --scan
    .venv/bin/python benchmarks/bench_files.py --read [--before REF] [--runs 5]
    .venv/bin/python benchmarks/bench_files.py --first-call [--before REF] [--runs 5] [--after S]

The corpus is generated once under benchmarks/.corpus/ (gitignored) and reused. `--quick` uses a
~50 MB file with the page at line 500,000 (for a fast smoke run).

`--open-path` measures what opening through `files/beneath` costs: per-call latency of Read,
Write and Edit of small files through a Session (on /dev/shm, so fsync does not drown it), for
this tree and for the commit REF (checked out into a temporary worktree), run alternately in the
same minute, and the bare open of a file (`open()` vs `Beneath.open_regular`). `--scan` times the one walk of a 100,000-file tree
(`files/scan.py`) and what is derived from it: first walk, refreshes, the Read-deny masks, the
sandbox's protected paths, next to `find` listing the same tree. `--read` times only the deep
Read, three ways: in a session just opened with the defaults (whose background start — index,
servers, checkpoint baseline — may run meanwhile), in one opened with `codebelt call`'s settings,
and as a whole `codebelt call Read` process; with `--before REF`, for REF too, each side once per
round, in turn. `--first-call` times the same Read as the first call of a session just opened
with the defaults on a workspace that also holds a project (part of the standard library; a
fresh index cache and checkpoint store per session, as in the first session there), then with
the index and servers, the baseline, and both turned off at the start; `--before REF` likewise;
`--after S`: the Read S seconds after the session opened, while that work runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import exact
from codebelt.cli.call import ONE_SHOT as CALL_SETTINGS

# What `codebelt call` runs its session with: no code index or language servers warming up and no
# checkpoint baseline begun in the background of the one call (a session opened with the defaults
# starts both at once, in threads that import, index and hash while its first call runs).
ONE_SHOT = {**CALL_SETTINGS, "checkpoints": {"baselineAtStart": False}}

HERE = Path(__file__).resolve().parent
CORPUS = HERE / ".corpus"
SCRIPTS = Path(sysconfig.get_path("scripts"))
PY = sys.executable


def make_lines_file(path: Path, lines: int) -> Path:
    """`lines` numbered lines of ~95 bytes (deterministic), written in big chunks."""
    if path.exists() and path.stat().st_size > 0:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    filler = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt "
              "ut labore et dolore magna aliqua ut enim ad minim veniam quis nostrud")
    tmp = path.with_suffix(".partial")
    with open(tmp, "w") as f:
        step = 100_000
        for start in range(1, lines + 1, step):
            f.write("".join(
                f"{i:09d} {filler[: 60 + i % 50]}\n" for i in range(start, min(start + step, lines + 1))
            ))
    tmp.rename(path)
    return path


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def tail_head(path: Path, start: int, count: int) -> bytes:
    """`tail -n +START | head -n COUNT` as a shell runs it: our ends of the pipe closed once both
    are started (so `tail` is stopped by SIGPIPE as soon as `head` ends), both waited exactly."""
    tail = subprocess.Popen(["tail", "-n", f"+{start}", str(path)], stdout=subprocess.PIPE, start_new_session=True)
    head = subprocess.Popen(["head", "-n", str(count)], stdin=tail.stdout, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    tail.stdout.close()
    out, _ = exact.communicate(head, 120)
    exact.wait(tail, 120)
    return out


CHILD = r"""
import json, resource, sys, time
path, offset, limit, nearby = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
extra = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
from codebelt import Session
# Budget wide enough for the whole 2,000-line page, so both sides return the same lines.
s = Session(root=str(__import__('pathlib').Path(path).parent), audit=False, load_user_settings=False,
            settings={"read": {"maxTokens": 100_000}, **extra})
t = time.perf_counter()
r1 = s.call("Read", {"file_path": path, "offset": offset, "limit": limit})
first = time.perf_counter() - t
t = time.perf_counter()
r2 = s.call("Read", {"file_path": path, "offset": nearby, "limit": limit})
second = time.perf_counter() - t
assert not r1.is_error and not r2.is_error, (r1.text[:300], r2.text[:300])
rows = r1.text.split("\n\n[")[0].split("\n")
print(json.dumps({"first": first, "second": second, "rows": len(rows), "first_row": rows[0],
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
s.close()
"""


LAUNCH = "import sys; from codebelt.cli import main; sys.exit(main(use_helper=False))"


def _env(src: Path | None) -> dict:
    """The Read's processes run from compiled bytecode, as an installed codebelt does (kept under
    the corpus, not in the tree): with PYTHONDONTWRITEBYTECODE set, as on some development
    machines, every process compiles each module it imports (~70 ms of CPU per `codebelt call`
    here, some of it inside the first call, which imports the tool)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(CORPUS / "pycache")
    if src:
        env["PYTHONPATH"] = str(src)
    return env


def read_child(path: Path, offset: int, limit: int, settings: dict, src: Path | None = None) -> dict:
    """A Read of a deep page and of a nearby one in a fresh process (a Session opened with
    `settings`), timed inside it; `src`: another tree's sources."""
    out = subprocess.run(
        [PY, "-c", CHILD, str(path), str(offset), str(limit), str(offset + 3 * limit), json.dumps(settings)],
        capture_output=True, text=True, timeout=600, start_new_session=True, env=_env(src),
    )
    if out.returncode != 0:
        raise SystemExit(f"child failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def read_process(path: Path, offset: int, limit: int, src: Path | None = None) -> float:
    """The whole `codebelt call Read` process for the deep page: interpreter, imports, scan, output."""
    conf = CORPUS / "read-budget.json"
    conf.write_text(json.dumps({"read": {"maxTokens": 100_000}}))
    argv = [PY, "-c", LAUNCH, "call", "--root", str(path.parent), "--settings", str(conf), "--new-session",
            "Read", json.dumps({"file_path": str(path), "offset": offset, "limit": limit})]
    t = time.perf_counter()
    out = exact.run(argv, capture_output=True, timeout=600, env={**_env(src), "CODEBELT_HELPER": "0"})
    took = time.perf_counter() - t
    if out.returncode != 0 or out.stdout.count(b"\n") < limit - 1:
        raise SystemExit(f"codebelt call failed: {out.stderr[-2000:]!r} {out.stdout[:300]!r}")
    return took


def deep_read(path: Path, offset: int, limit: int, runs: int) -> tuple[dict, float]:
    """The Read of a deep page in a fresh process and `tail | head` of the same lines, in turn
    (so the machine's load falls on both alike): the Read's figures and the best `tail | head`."""
    results, one_shot, t_tail = [], [], []
    for _ in range(runs):
        t = time.perf_counter()
        tail_head(path, offset, limit)
        t_tail.append(time.perf_counter() - t)
        results.append(read_child(path, offset, limit, {}))
        one_shot.append(read_child(path, offset, limit, ONE_SHOT))
    return {
        "first": min(r["first"] for r in results),
        "one_shot": min(r["first"] for r in one_shot),
        "one_shot_second": min(r["second"] for r in one_shot),
        "second": min(r["second"] for r in results),
        "maxrss_mb": max(r["maxrss_mb"] for r in results),
        "rows": results[0]["rows"],
        "first_row": results[0]["first_row"],
    }, min(t_tail)


@contextlib.contextmanager
def sides_with(before: str | None):
    """[("now", None)], plus (before, its src) when a commit is given: checked out into a
    temporary worktree for the duration, removed after."""
    sides: list[tuple[str, Path | None]] = [("now", None)]
    if not before:
        yield sides
        return
    repo = HERE.parent
    tree = Path(tempfile.mkdtemp(prefix="bench-before-"))
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(tree), before], check=True)
    try:
        yield sides + [(before, tree / "src")]
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)], check=False)


def read_before(path: Path, offset: int, limit: int, runs: int, before: str | None) -> None:
    """The deep Read three ways (a session opened with the defaults, one with `codebelt call`'s
    settings, the whole `codebelt call Read` process), for this tree and for commit `before`,
    next to `tail | head`: every measurement once per round, the rounds in turn."""
    times: dict[tuple[str, str], list[float]] = {}
    rss: dict[str, float] = {}
    load = [os.getloadavg()[0]]
    with sides_with(before) as sides:
        for _ in range(runs):
            t = time.perf_counter()
            tail_head(path, offset, limit)
            times.setdefault(("tail", ""), []).append(time.perf_counter() - t)
            for label, src in sides:
                r = read_child(path, offset, limit, {}, src)
                times.setdefault(("session", label), []).append(r["first"])
                rss[label] = max(rss.get(label, 0.0), r["maxrss_mb"])
                times.setdefault(("one-shot", label), []).append(read_child(path, offset, limit, ONE_SHOT, src)["first"])
                times.setdefault(("process", label), []).append(read_process(path, offset, limit, src))
            load.append(os.getloadavg()[0])
    tail = min(times[("tail", "")])
    print(f"Read 2,000 lines at line {offset:,}; best of {runs} rounds, each side once per round, in turn; "
          f"load average (1 min) {min(load):.1f}-{max(load):.1f} on {os.cpu_count()} cores")
    print(f"{'measurement':<58} " + " ".join(f"{label:>12}" for label, _ in sides) + f" {'tail | head':>12}  ratio")
    names = {"session": "the call, in a session just opened (defaults)",
             "one-shot": "the call, in a session with `codebelt call`'s settings",
             "process": "the whole `codebelt call Read` process"}
    for key, name in names.items():
        best_of = [min(times[(key, label)]) for label, _ in sides]
        ratios = " / ".join(f"{b / tail:.2f}×" for b in best_of)
        print(f"{name:<58} " + " ".join(f"{b * 1000:>10.1f}ms" for b in best_of) + f" {tail * 1000:>10.1f}ms  {ratios}")
    print("peak RSS of the Read process: " + ", ".join(f"{label} {rss[label]:.1f} MB" for label, _ in sides))


FIRST_CHILD = r"""
import json, sys, time
root, path, offset, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
extra, delay = json.loads(sys.argv[5]), float(sys.argv[6])
from codebelt import Session
s = Session(root=root, load_user_settings=False, settings={"read": {"maxTokens": 100_000}, **extra})
time.sleep(delay)  # > 0: the call comes while what the session began in the background runs
t = time.perf_counter()
r = s.call("Read", {"file_path": path, "offset": offset, "limit": limit})
first = time.perf_counter() - t
assert not r.is_error, r.text[:300]
s.close()
print(json.dumps({"first": first}))
"""

# What a session opened with the defaults starts in the background, turned off one at a time.
FIRST_VARIANTS = {
    "defaults": {},
    "no index or servers at start": {"intel": {"startWithSession": False}},
    "no checkpoint baseline at start": {"checkpoints": {"baselineAtStart": False}},
    "neither": {"intel": {"startWithSession": False}, "checkpoints": {"baselineAtStart": False}},
}
# With --after S: also without language servers (the index still starts).
NO_SERVERS = ("no language servers", {"lsp": {"enabled": False}})
PROJECT_PARTS = ("asyncio", "email", "json", "http", "logging", "importlib", "concurrent", "unittest")


def session_workspace(big: Path) -> tuple[Path, int, int]:
    """A workspace that holds the big file (a hard link) and a copy of a real project: the
    interpreter's standard library, its top-level modules and a few packages, without tests or
    caches, so a session opened on it has an index to build and a baseline to take."""
    ws = CORPUS / "session-ws"
    lib = Path(sysconfig.get_path("stdlib"))
    project = ws / "project"
    if not (ws / ".built").exists():
        shutil.rmtree(ws, ignore_errors=True)
        project.mkdir(parents=True)
        for f in lib.glob("*.py"):
            shutil.copy2(f, project / f.name)
        for part in PROJECT_PARTS:
            shutil.copytree(lib / part, project / part, ignore=shutil.ignore_patterns("__pycache__", "test", "tests"))
        (ws / ".built").touch()
    link = ws / big.name
    if not link.exists():
        os.link(big, link)
    files = [p for p in project.rglob("*") if p.is_file()]
    return ws, len(files), sum(p.stat().st_size for p in files)


def first_read(ws: Path, big: Path, offset: int, limit: int, settings: dict, src: Path | None,
               after: float = 0.0) -> float:
    """The first call of a session just opened on `ws` (fresh process; no index cache, no
    checkpoint store yet: the first session in this workspace), timed inside it."""
    home = Path(tempfile.mkdtemp(prefix="bench-first-"))
    try:
        env = {**_env(src), "XDG_CACHE_HOME": str(home / "cache"), "XDG_STATE_HOME": str(home / "state")}
        out = subprocess.run([PY, "-c", FIRST_CHILD, str(ws), str(ws / big.name), str(offset), str(limit),
                              json.dumps(settings), str(after)], capture_output=True, text=True, timeout=600,
                             start_new_session=True, env=env)
        if out.returncode != 0:
            raise SystemExit(f"child failed: {out.stderr[-2000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])["first"]
    finally:
        shutil.rmtree(home, ignore_errors=True)


def read_first_call(big: Path, offset: int, limit: int, runs: int, before: str | None, after: float = 0.0) -> None:
    """The first Read of a session opened with the defaults on a workspace with a project in it
    (the index warm-up, the language server and the checkpoint baseline all begin as it opens),
    with each of those turned off in turn, for this tree and commit `before`, next to
    `tail | head`: every measurement once per round, in turn. `after` > 0: the Read comes that
    many seconds after the session opened, while what it began runs (then without language
    servers too)."""
    ws, n_files, n_bytes = session_workspace(big)
    variants = dict(FIRST_VARIANTS)
    if after > 0:
        variants[NO_SERVERS[0]] = NO_SERVERS[1]
    times: dict[tuple[str, str], list[float]] = {}
    load = [os.getloadavg()[0]]
    with sides_with(before) as sides:
        for _ in range(runs):
            t = time.perf_counter()
            tail_head(big, offset, limit)
            times.setdefault(("tail", ""), []).append(time.perf_counter() - t)
            for variant, settings in variants.items():
                for label, src in sides:
                    times.setdefault((variant, label), []).append(
                        first_read(ws, big, offset, limit, settings, src, after))
            load.append(os.getloadavg()[0])
    tail = min(times[("tail", "")])
    when = f"{after:g} s after it opened" if after > 0 else "just opened"
    print(f"The first call of a session: Read 2,000 lines at line {offset:,}, in a session {when} on a "
          f"workspace with a project ({n_files} files, {n_bytes / 1e6:.1f} MB: part of the standard library; no "
          f"index cache or checkpoint store yet); best of {runs} rounds, median in brackets, each once per round, "
          f"in turn; load average (1 min) {min(load):.1f}-{max(load):.1f} on {os.cpu_count()} cores")
    print(f"{'session opened with':<34} " + " ".join(f"{label:>22}" for label, _ in sides) + f" {'tail | head':>12}  ratio")
    for variant in variants:
        cells = []
        for label, _ in sides:
            v = times[(variant, label)]
            cells.append(f"{min(v) * 1000:.0f}ms ({statistics.median(v) * 1000:.0f})")
        ratios = " / ".join(f"{min(times[(variant, label)]) / tail:.2f}×" for label, _ in sides)
        print(f"{variant:<34} " + " ".join(f"{c:>22}" for c in cells) + f" {tail * 1000:>10.1f}ms  {ratios}")


def edit_vs_cp(src: Path, runs: int) -> dict:
    """One-line Edit in the middle of `src` (a fresh copy each run), with the checkpoint the Edit
    keeps by default (the file's content before and after, stored) and without it, next to `cp`
    and `cp` + fsync of the same file; each from a clean page cache, in turn."""
    from codebelt import Session

    work = Path(tempfile.mkdtemp(prefix="bench-files-", dir=CORPUS))
    try:
        target = work / "edit.txt"
        copy = work / "copy.txt"
        times: dict[str, list[float]] = {"edit": [], "edit_then_write": [], "edit_no_checkpoint": [], "cp": [],
                                         "cp_fsync": []}

        def edit(key: str, i: int, settings: dict) -> None:
            shutil.copyfile(src, target)
            with open(target, "rb") as f:
                f.seek(target.stat().st_size // 2)
                f.readline()
                mid_line = f.readline().decode().rstrip("\n")
            with Session(root=work, audit=False, load_user_settings=False, mode="acceptEdits",
                         settings=settings) as s:
                (work / "warm.txt").write_text("a\n")
                s.call("Read", {"file_path": "warm.txt"})
                s.call("Edit", {"file_path": "warm.txt", "old_string": "a", "new_string": "b"})  # the tool's import
                s.call("Read", {"file_path": "edit.txt", "limit": 10})
                os.sync()  # start from clean page cache: no writeback of the setup copy in the timing
                t = time.perf_counter()
                r = s.call("Edit", {"file_path": "edit.txt", "old_string": mid_line,
                                    "new_string": mid_line.upper() + f" edited {i}"})
                times[key].append(time.perf_counter() - t)
                assert not r.is_error, r.text
                if key == "edit":  # the next writing call waits for the copy kept after the Edit
                    w = s.call("Write", {"file_path": "warm.txt", "content": "c\n"})
                    times["edit_then_write"].append(time.perf_counter() - t)
                    assert not w.is_error, w.text

        def cp(key: str, sync: bool) -> None:
            os.sync()
            t = time.perf_counter()
            exact.run(["cp", str(src), str(copy)], check=True, timeout=120)
            if sync:
                fd = os.open(copy, os.O_RDONLY)
                os.fsync(fd)
                os.close(fd)
            times[key].append(time.perf_counter() - t)
            copy.unlink()

        for i in range(runs):
            edit("edit", i, {})
            cp("cp", False)
            edit("edit_no_checkpoint", i, {"checkpoints": {"enabled": False}})
            cp("cp_fsync", True)
        return {k: min(v) for k, v in times.items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def edit_rows(src: Path, runs: int) -> None:
    ev = edit_vs_cp(src, runs)
    print(f"load average {os.getloadavg()[0]:.2f}; best of {runs}")
    for name, key in (("Edit one line, 50 MB file", "edit"), ("  same, no checkpoint kept", "edit_no_checkpoint"),
                      ("  the Edit, then a Write (waits for its copy)", "edit_then_write"), ("cp", "cp")):
        print(f"{name:<48} {ev[key] * 1000:>8.1f}ms  {ev[key] / ev['cp_fsync']:>5.2f}× cp + fsync "
              f"({ev['cp_fsync'] * 1000:.1f}ms)")


def cold_start(runs: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-cold-", dir=CORPUS))
    try:
        (work / "README.md").write_text("# hello\n" * 20)
        codebelt = SCRIPTS / "codebelt"
        argv = [str(codebelt), "call", "--root", str(work), "Read", '{"file_path": "README.md", "limit": 5}']
        env = {**os.environ, "CODEBELT_HELPER": "0"}  # a process of its own (bench_cli.py measures the helper)
        t_cb = best(lambda: exact.run(argv, capture_output=True, timeout=60, check=True, env=env), runs)
        t_py = best(lambda: exact.run([PY, "-c", "pass"], capture_output=True, timeout=60), runs)
        t_cat = best(lambda: exact.run(["head", "-n", "5", str(work / "README.md")], capture_output=True, timeout=60), runs)
        imp = subprocess.run([PY, "-X", "importtime", str(codebelt), *argv[1:]], capture_output=True, text=True, timeout=60)
        modules = {line.split("|")[-1].strip().split(".")[0] for line in imp.stderr.splitlines() if "|" in line}
        heavy = sorted(m for m in ("mcp", "PIL", "pypdf", "charset_normalizer") if m in modules)
        return {"codebelt": t_cb, "python": t_py, "head": t_cat, "heavy": heavy}
    finally:
        shutil.rmtree(work, ignore_errors=True)


OPEN_CHILD = r"""
import json, os, statistics, sys, tempfile, time
from pathlib import Path
from codebelt import Session
calls = int(sys.argv[1])
# on tmpfs where there is one: fsync costs nothing there, so the open path is what is measured
root = Path(tempfile.mkdtemp(prefix="bench-open-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
text = "".join(f"line {i} of a small source file, long enough to look like code\n" for i in range(200))
(root / "src" / "pkg").mkdir(parents=True)
(root / "src" / "pkg" / "mod.txt").write_text(text)
(root / "src" / "pkg" / "w.txt").write_text(text)
def med(fn):
    times = []
    for i in range(calls):
        t = time.perf_counter(); fn(i); times.append(time.perf_counter() - t)
    return statistics.median(times)
with Session(root=root, audit=False, load_user_settings=False, mode="acceptEdits",
             settings={"lsp": {"autoDetect": False}}) as s:
    def ok(r):
        assert not r.is_error, r.text
    ok(s.call("Read", {"file_path": "src/pkg/w.txt"}))
    out = {
        "read": med(lambda i: ok(s.call("Read", {"file_path": "src/pkg/mod.txt"}))),
        "write": med(lambda i: ok(s.call("Write", {"file_path": "src/pkg/w.txt", "content": text + str(i)}))),
        "create": med(lambda i: ok(s.call("Write", {"file_path": f"src/new{i}/f.txt", "content": text}))),
        "edit": med(lambda i: ok(s.call("Edit", {"file_path": "src/pkg/mod.txt", "old_string": f"line {i % 200} of",
                                                  "new_string": f"line {i % 200} in"} if i < 200 else
                                                 {"file_path": "src/pkg/mod.txt", "old_string": f"line {i % 200} in",
                                                  "new_string": f"line {i % 200} of"}))),
    }
print(json.dumps(out))
"""

BARE_OPEN = r"""
import json, os, sys, time
from pathlib import Path
from codebelt.files.beneath import Beneath
root = Path(sys.argv[1]); path = root / "src" / "pkg" / "mod.txt"
n = 20000
def per(fn):
    best = 1.0
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return best
def plain():
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC); os.fstat(fd); os.close(fd)
b = Beneath((root,))
def beneath():
    b.open_regular(path).close()
print(json.dumps({"open": per(plain), "beneath": per(beneath)}))
"""


def open_path(before: str, runs: int, calls: int = 400) -> None:
    """Read/Write/Edit latency with the new open path vs commit `before`, alternating."""
    repo = HERE.parent
    with sides_with(before) as sides:
        tree_src = sides[1][1]
        results: dict[str, list[dict]] = {"now": [], "before": []}
        for _ in range(runs):
            for label, src in (("before", tree_src), ("now", repo / "src")):
                env = {**os.environ, "PYTHONPATH": str(src)}
                out = subprocess.run([PY, "-c", OPEN_CHILD, str(calls)], capture_output=True, text=True,
                                     timeout=600, env=env)
                if out.returncode != 0:
                    raise SystemExit(f"{label} child failed: {out.stderr[-2000:]}")
                results[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
        work = Path(tempfile.mkdtemp(prefix="bench-bare-"))
        (work / "src" / "pkg").mkdir(parents=True)
        (work / "src" / "pkg" / "mod.txt").write_text("x\n" * 200)
        bare = json.loads(subprocess.run([PY, "-c", BARE_OPEN, str(work)], capture_output=True, text=True,
                                         check=True, timeout=600, env={**os.environ, "PYTHONPATH": str(repo / "src")}
                                         ).stdout)
        shutil.rmtree(work, ignore_errors=True)
    names = {"read": "Read, 200-line file", "write": "Write over a read file", "create": "Write a new file in a new directory",
             "edit": "Edit one line"}
    print(f"median per call over {calls} calls, best of {runs} runs, alternating with {before}")
    print(f"{'call':<40} {'now':>10} {'before':>10} {'ratio':>8}")
    for key, name in names.items():
        now = min(r[key] for r in results["now"])
        old = min(r[key] for r in results["before"])
        print(f"{name:<40} {now * 1e6:>8.0f}µs {old * 1e6:>8.0f}µs {now / old:>7.2f}×")
    print(f"{'bare open + fstat + close':<40} {bare['beneath'] * 1e6:>8.1f}µs {bare['open'] * 1e6:>8.1f}µs "
          f"{bare['beneath'] / bare['open']:>7.2f}×  (Beneath.open_regular vs os.open)")


SCAN_CHILD = r"""
import json, sys, time
from pathlib import Path
from codebelt.files.scan import TreeScan
from codebelt.permissions.denied import DeniedFiles
from codebelt.permissions.rules import Rule
from codebelt.sandbox import protected
root = Path(sys.argv[1])
def timed(fn):
    t = time.perf_counter(); out = fn(); return time.perf_counter() - t, out
scan = TreeScan(root)
first, snap = timed(scan.snapshot)
again, _ = timed(scan.snapshot)
(root / "a5" / "b5" / "c5" / "touched").write_text("x")
changed, _ = timed(scan.snapshot)
(root / "a5" / "b5" / "c5" / "touched").unlink()
rules = [Rule.parse(t, root=root) for t in ("Read(.env)", "Read(./secrets/**)")]
denied = DeniedFiles(rules)
protected.shared = lambda r: scan  # the consumers below read this walk
import codebelt.permissions.denied as dmod
dmod.shared = lambda r: scan
masks_first, view = timed(lambda: denied.view([root], 0.0))
(root / "a1" / "x").write_text("x")
masks_again, _ = timed(lambda: denied.view([root], 0.0))
(root / "a1" / "x").unlink()
prot, paths = timed(lambda: protected.protected_paths(root, (root,)))
guard, g = timed(lambda: protected.guarded([root]))
print(json.dumps({"entries": snap.entries, "dirs": len(snap.dirs), "first": first, "refresh": again,
                  "refresh_changed": changed, "masks_first": masks_first, "masks_refresh": masks_again,
                  "masks": len(view.masks), "protected": prot, "protected_n": len(paths), "guarded": guard}))
"""


def make_tree(root: Path) -> Path:
    """100,000 files in 1,111 directories (a10 × b10 × c10 × 100 files), a few .env and nested
    repositories among them; made once."""
    if (root / ".done").exists():
        return root
    for a in range(10):
        for b in range(10):
            for c in range(10):
                d = root / f"a{a}" / f"b{b}" / f"c{c}"
                d.mkdir(parents=True, exist_ok=True)
                for i in range(100):
                    (d / f"f{i}.py").touch()
    for a in range(10):
        (root / f"a{a}" / ".env").write_text("X=1\n")
        (root / f"a{a}" / "b0" / ".git" / "hooks").mkdir(parents=True, exist_ok=True)
        (root / f"a{a}" / "b0" / ".git" / "config").write_text("[core]\n")
    (root / ".done").touch()
    return root


def scan_tree(runs: int) -> None:
    root = make_tree(CORPUS / "tree100k")
    results = []
    for _ in range(runs):
        out = subprocess.run([PY, "-c", SCAN_CHILD, str(root)], capture_output=True, text=True, timeout=600,
                             env={**os.environ, "PYTHONPATH": str(HERE.parent / "src")})
        if out.returncode != 0:
            raise SystemExit(out.stderr[-2000:])
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    t_find = best(lambda: exact.run(["find", str(root)], capture_output=True, timeout=120, check=True), runs)
    r0 = results[0]
    print(f"tree: {r0['entries']:,} entries in {r0['dirs']:,} directories; best of {runs} fresh processes")
    rows = [("first walk (every directory listed)", "first"), ("refresh, nothing changed", "refresh"),
            ("refresh, one directory changed", "refresh_changed"),
            ("Read-deny masks, first (2 rules, every name matched)", "masks_first"),
            ("Read-deny masks after one change", "masks_refresh"),
            ("protected paths for bwrap (from the walk)", "protected"),
            ("guarded paths before/after a command", "guarded")]
    for name, key in rows:
        print(f"{name:<56} {min(r[key] for r in results) * 1000:>8.1f} ms")
    print(f"{'baseline: find (lists every entry)':<56} {t_find * 1000:>8.1f} ms")
    print(f"masks found: {r0['masks']}, protected paths: {r0['protected_n']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="~50 MB corpus, page at line 500,000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--open-path", action="store_true", help="the cost of opening through files/beneath")
    ap.add_argument("--before", default=None, help="with --open-path (default HEAD~1) or --read: the commit to compare with")
    ap.add_argument("--read", action="store_true", help="only the deep Read, three ways (with --before: against that commit)")
    ap.add_argument("--scan", action="store_true", help="the shared tree walk on a 100,000-file tree")
    ap.add_argument("--edit", action="store_true", help="only the Edit rows (one line of a 50 MB file)")
    ap.add_argument("--first-call", action="store_true", help="the deep Read as the first call of a session just "
                    "opened on a workspace with a project (with --before: against that commit)")
    ap.add_argument("--after", type=float, default=0.0, help="with --first-call: the Read this many seconds after "
                    "the session opened, while its background start runs")
    args = ap.parse_args()
    if args.open_path:
        open_path(args.before or "HEAD~1", args.runs)
        return
    if args.scan:
        scan_tree(args.runs)
        return
    if args.edit:
        edit_rows(make_lines_file(CORPUS / "lines_50mb.txt", 530_000), max(args.runs, 3))
        return
    if args.quick:
        big, lines, offset = CORPUS / "lines_50mb.txt", 530_000, 500_000
    else:
        big, lines, offset = CORPUS / "lines_500mb.txt", 5_300_000, 5_000_000  # ~500 MB
    limit = 2000
    t = time.perf_counter()
    make_lines_file(big, lines)
    mid = make_lines_file(CORPUS / "lines_50mb.txt", 530_000)
    print(f"corpus ready in {time.perf_counter() - t:.1f}s: {big.name} {big.stat().st_size / 1e6:.0f} MB, "
          f"{mid.name} {mid.stat().st_size / 1e6:.0f} MB", flush=True)

    tail_head(big, offset, limit)  # warm the page cache so both sides read from memory
    expected_first = tail_head(big, offset, 1).decode().rstrip("\n")
    if args.read:
        read_before(big, offset, limit, args.runs, args.before)
        return
    if args.first_call:
        read_first_call(big, offset, limit, args.runs, args.before, args.after)
        return
    deep, t_tail = deep_read(big, offset, limit, args.runs)
    assert deep["first_row"] == f"{offset:>6}\t{expected_first}", (deep["first_row"], expected_first)
    ev = edit_vs_cp(mid, max(args.runs, 3))
    cold = cold_start(5)

    rows = [
        ("Read 2,000 lines at line {:,} (fresh process)".format(offset), deep["first"], "tail | head", t_tail,
         "goal ≤ 2×"),
        ("  same, `codebelt call`'s settings (no warm-up)", deep["one_shot"], "tail | head", t_tail, ""),
        ("Read of a nearby page (cached line index)", deep["one_shot_second"], "first Read", deep["one_shot"],
         "goal ≥ 10× faster"),
        ("  same, in the session just opened", deep["second"], "first Read", deep["first"], "(warm-up meanwhile)"),
        ("Edit one line, 50 MB file (with fsync)", ev["edit"], "cp", ev["cp"], ""),
        ("  same Edit", ev["edit"], "cp + fsync", ev["cp_fsync"], "goal ≤ 2×"),
        ("  same Edit, no checkpoint kept", ev["edit_no_checkpoint"], "cp + fsync", ev["cp_fsync"], ""),
        ("  the Edit, then a Write (waits for its copy)", ev["edit_then_write"], "cp + fsync", ev["cp_fsync"], ""),
        ("codebelt call Read cold start", cold["codebelt"], "python -c pass", cold["python"], "report"),
    ]
    print()
    print(f"{'measurement':<48} {'codebelt':>10} {'baseline':>16} {'':>10} {'ratio':>8}  note")
    for name, ours, base_name, base, note in rows:
        ratio = ours / base if base else float("nan")
        print(f"{name:<48} {ours * 1000:>8.1f}ms {base_name:>16} {base * 1000:>8.1f}ms {ratio:>7.2f}×  {note}")
    print()
    print(f"peak RSS of the Read process: {deep['maxrss_mb']:.1f} MB (goal < 100 MB); rows returned: {deep['rows']}")
    print(f"second page speed-up: {deep['first'] / deep['second']:.0f}×")
    print(f"heavy modules imported by `codebelt call Read`: {cold['heavy'] or 'none'}; "
          f"`head -n 5` takes {cold['head'] * 1000:.1f}ms")


if __name__ == "__main__":
    main()
