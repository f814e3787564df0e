"""Command-line start-up: `codebelt call …` and the `apply_patch` command, each timed as a whole
process next to its yardstick, in pairs run alternately (A B A B …) so that the ratio of each pair
holds while the machine's speed drifts.

    .venv/bin/python benchmarks/bench_cli.py [--runs 30] [--codex PATH] [--against CODEBELT] [--json]

Rows (wall and CPU time of the child, user + system, as the kernel accounts it):
- `python -c pass`: the interpreter alone;
- `python -c` with pydantic and one model built: the floor of any call that validates input;
- `codebelt call Read` (a text file), `Glob`, `Edit`: one call through the full pipeline
  (settings, permissions, audit, the CLI session's state);
- `apply_patch PATCH` next to Codex's own binary (`codex --codex-run-as-apply-patch PATCH`, from
  the `@openai/codex` npm package: give `--codex`, or it is looked for where `npm install
  --prefix ~/.cache/codebelt/codex/VERSION @openai/codex@VERSION` puts it);
- the same without codebelt's bytecode (`PYTHONDONTWRITEBYTECODE=1`, a copy of the package with
  no `__pycache__`: each of its modules compiled from source on every start, as in an editable
  install where bytecode is never written — `scripts/setup.sh` compiles it);
- with `--against` another installation's `codebelt` (e.g. main's `.venv/bin/codebelt`): its
  `codebelt call Read` next to this one's, in a process of its own (its bytecode compiled first);
- `codebelt call Read` through the resident helper (`codebelt.cli.helper`: a process that
  imported codebelt once forks a child per call), next to the same call in a process of its own
  (`CODEBELT_HELPER=0`, as every other row runs).

Everything runs in a temporary HOME (no user settings, a fresh audit log and CLI state), with
the package's bytecode compiled first.
"""

from __future__ import annotations

import argparse
import compileall
import glob
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

SCRIPTS = Path(sysconfig.get_path("scripts"))
PY = sys.executable
PYDANTIC_FLOOR = ("from pydantic import BaseModel, Field, ConfigDict\n"
                  "class M(BaseModel):\n"
                  "    model_config = ConfigDict(extra='forbid')\n"
                  "    file_path: str = Field(description='x')\n"
                  "    limit: int | None = Field(None, ge=1)\n"
                  "M.model_validate({'file_path': 'a'})\n")
PATCH = ("*** Begin Patch\n*** Update File: notes.txt\n@@\n first line\n-second line\n+second line\n"
         "*** End Patch\n")


def run_once(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, child CPU s, exit code) of one process, from spawn to reaping."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def paired(a: list[str], b: list[str], runs: int, cwd: Path, env: dict[str, str],
           env_a: dict[str, str] | None = None) -> dict:
    """A and B run in turn; medians of each and of the ratio A/B taken pair by pair."""
    for argv, e in ((a, env_a or env), (b, env)):  # warm-up, and a check that each works
        _, _, code = run_once(argv, cwd, e)
        if code != 0:
            out = subprocess.run(argv, cwd=cwd, env=e, capture_output=True, text=True, timeout=60)
            raise SystemExit(f"{' '.join(argv[:4])} … exited {code}: {out.stderr[-1500:]}")
    rows = []
    for _ in range(runs):
        wa, ca, _ = run_once(a, cwd, env_a or env)
        wb, cb, _ = run_once(b, cwd, env)
        rows.append((wa, ca, wb, cb))

    def q(values: list[float]) -> tuple[float, float, float]:
        values = sorted(values)
        return values[len(values) // 4], statistics.median(values), values[(3 * len(values)) // 4]

    return {
        "a_wall": q([r[0] for r in rows]), "a_cpu": q([r[1] for r in rows]),
        "b_wall": q([r[2] for r in rows]), "b_cpu": q([r[3] for r in rows]),
        "wall_ratio": q([r[0] / r[2] for r in rows]), "cpu_ratio": q([r[1] / r[3] for r in rows]),
        "a_wall_min": min(r[0] for r in rows), "b_wall_min": min(r[2] for r in rows),
    }


def find_codex(given: str | None) -> str | None:
    if given:
        return given
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    found = sorted(glob.glob(os.path.join(base, "codebelt", "codex", "*", "node_modules", "@openai",
                                          "codex-*", "vendor", "*", "bin", "codex")))
    return found[-1] if found else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30, help="pairs per row (default 30)")
    ap.add_argument("--codex", help="the native Codex binary (default: looked for in the npm cache directory)")
    ap.add_argument("--against", metavar="CODEBELT", help="another installation's codebelt script: its Read next to this one's")
    ap.add_argument("--only", help="comma-separated row keys to run (floor, read, glob, edit, patch, nopyc, against, helper)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None

    package = Path(__import__("codebelt").__file__).parent
    compileall.compile_dir(str(package), quiet=1)  # what an installed package has; see the no-bytecode row
    tmp = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        home, ws, run = tmp / "home", tmp / "ws", tmp / "run"
        home.mkdir()
        ws.mkdir()
        run.mkdir(mode=0o700)
        (ws / "notes.txt").write_text("first line\nsecond line\n" + "".join(f"line {i}\n" for i in range(200)))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "XDG_", "CODEBELT_"))}
        env.update(HOME=str(home), XDG_STATE_HOME=str(home / "state"), XDG_CONFIG_HOME=str(home / "config"),
                   XDG_CACHE_HOME=str(home / "cache"), XDG_RUNTIME_DIR=str(run), CODEBELT_HELPER="0")
        # codebelt's own modules with no bytecode beside them, found first, never compiled to disk
        shutil.copytree(package, tmp / "nopyc" / "codebelt", ignore=shutil.ignore_patterns("__pycache__"))
        nopyc = {**env, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tmp / "nopyc")}
        codebelt, apply_patch = str(SCRIPTS / "codebelt"), str(SCRIPTS / "apply_patch")
        pass_ = [PY, "-c", "pass"]
        read = [codebelt, "call", "Read", json.dumps({"file_path": "notes.txt", "limit": 5})]
        edit_in = json.dumps({"file_path": "notes.txt", "old_string": "line 7\n", "new_string": "line 7\n\n"})
        edit_back = json.dumps({"file_path": "notes.txt", "old_string": "line 7\n\n", "new_string": "line 7\n"})
        rows: list[tuple[str, str, str, dict]] = []
        notes: list[str] = []

        def want(key: str) -> bool:
            return only is None or key in only

        def add(key: str, name: str, base: str, a: list[str], b: list[str], env_a: dict | None = None) -> None:
            if want(key):
                rows.append((name, base, key, paired(a, b, args.runs, ws, env, env_a)))
                print(f"  {name}: done", file=sys.stderr)

        add("floor", "python -c 'pydantic, one model'", "python -c pass", [PY, "-c", PYDANTIC_FLOOR], pass_)
        add("read", "codebelt call Read (text file)", "python -c pass", read, pass_)
        if args.against:
            add("against", "codebelt call Read", "--against: codebelt call Read", read, [args.against, *read[1:]])
        add("glob", "codebelt call Glob", "python -c pass", [codebelt, "call", "Glob", '{"pattern": "*.txt"}'], pass_)
        if want("edit"):
            # an Edit and its inverse alternate, so each run changes the file; both after a Read
            run_once(read, ws, env)
            rows.append(("codebelt call Edit (text file)", "codebelt call Edit (its inverse)", "edit",
                         paired([codebelt, "call", "--mode", "acceptEdits", "Edit", edit_in],
                                [codebelt, "call", "--mode", "acceptEdits", "Edit", edit_back], args.runs, ws, env)))
        add("patch", "apply_patch (one hunk)", "python -c pass", [apply_patch, PATCH], pass_)
        codex = find_codex(args.codex)
        if codex and want("patch"):
            add("patch", "apply_patch (one hunk)", "Codex apply_patch", [apply_patch, PATCH],
                [codex, "--codex-run-as-apply-patch", PATCH])
        elif want("patch"):
            print("  Codex's binary not found (--codex PATH): its row is left out", file=sys.stderr)
        add("nopyc", "codebelt call Read, no bytecode cache", "codebelt call Read", read, read, env_a=nopyc)
        add("nopyc", "apply_patch, no bytecode cache", "apply_patch", [apply_patch, PATCH], [apply_patch, PATCH],
            env_a=nopyc)
        if want("helper"):
            log = tmp / "helper.log"
            helped = {**env, "CODEBELT_HELPER": "1", "CODEBELT_HELPER_LOG": str(log)}
            run_once(read, ws, helped)  # starts the helper (this call runs in its own process)
            from codebelt.cli import helper

            deadline = time.monotonic() + 30
            while not list(run.glob("codebelt/call-*.sock")) and time.monotonic() < deadline:
                time.sleep(0.1)
            try:
                add("helper", "codebelt call Read, resident helper", "python -c pass", read, pass_, env_a=helped)
                add("helper", "codebelt call Read, resident helper", "codebelt call Read", read, read, env_a=helped)
            finally:
                helper.stop(str(run / "codebelt"))
            # the caller's CPU is in the rows; the forked child's (which runs the call) is logged
            child_cpu = [float(line.split()[3]) for line in log.read_text().splitlines() if line.startswith("done ")]
            if child_cpu:
                notes.append(f"resident helper: the forked child that runs each call used {statistics.median(child_cpu):.0f} ms "
                             f"CPU (median of {len(child_cpu)}), on top of the caller's own in the rows above")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if args.json:
        print(json.dumps({"rows": [{"row": n, "baseline": b, "key": k, **r} for n, b, k, r in rows], "notes": notes},
                         indent=2))
        return
    ms = lambda v: f"{v * 1000:.0f}"  # noqa: E731
    print(f"\n{len(rows)} rows, {args.runs} alternating pairs each; medians, [quartiles]; CPU = user + system of the child")
    print(f"{'measurement':40} {'wall ms':>14} {'cpu ms':>8} | {'baseline':34} {'wall ms':>8} {'cpu ms':>7} | "
          f"{'ratio wall':>18} {'ratio cpu':>18}")
    for name, base, _, r in rows:
        print(f"{name:40} {ms(r['a_wall'][1]):>6} (min {ms(r['a_wall_min']):>3}) {ms(r['a_cpu'][1]):>8} | "
              f"{base:34} {ms(r['b_wall'][1]):>8} {ms(r['b_cpu'][1]):>7} | "
              f"{r['wall_ratio'][1]:5.2f} [{r['wall_ratio'][0]:.2f}-{r['wall_ratio'][2]:.2f}] "
              f"{r['cpu_ratio'][1]:5.2f} [{r['cpu_ratio'][0]:.2f}-{r['cpu_ratio'][2]:.2f}]")
    for note in notes:
        print(note)
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
