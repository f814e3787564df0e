"""Where a command's time goes in the resident jail, step by step: codebelt's wrap (the masks and
readable directories of the moment), the hand-off to the zygote, each step of the zygote's
set-up, the command itself, and the hand-off of its status back — beside the same command
spawned plainly, interleaved.

The steps are timed by CLOCK_MONOTONIC (one clock for every pid namespace) and sent with the
command's status. On the compiled request path (sandbox/_zygote.c) the zygote takes them itself
when the request has a `steps` field (only this bench sets it); on the Python path at markers put
into the resident's source for this run only (a marker whose line is gone from resident.py stops
the run with its name: update ANCHORS). `--path both` runs a resident of each, rounds interleaved
with the plain spawn.

    .venv/bin/python benchmarks/bench_jail_steps.py [--rounds 80] [--gap 0.02] [--command true] [--path native|python|both]

`--gap`: seconds between rounds (an agent's think time; 0 makes each request wait for the next
zygote). On a loaded machine run it under `chrt -f 10` to see the steps without the wait for a
CPU (every process it starts inherits the policy).
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from codebelt.sandbox import Sandbox, SandboxConfig, native, residency

# (the line a marker goes before, the name of the step that ends there)
ANCHORS = [
    ("    control.close()\n    if not fds:", "request read"),
    ("    _UNANNOUNCED[:] = [status, note]", "request parsed"),
    ("    close_all_but({0, *targets, status.fileno()", "descriptors placed"),
    ('        for m in req["masks"]:', "rest closed"),
    ('        os.chdir(req["cwd"])', "masks mounted"),
    ('        if req["abi"]:\n            if layer', "cwd, capabilities dropped"),
    ("            layer.restrict()", "outputs in the write layer"),
    ('    argv = req["argv"]\n', "Landlock restricted"),
    ("    _announce()\n    null = os.open", "command spawned"),
    ('    null = os.open("/dev/null", os.O_RDWR)\n    for n in (0, 1, 2):', "resident and codebelt told"),
]
REAPED = "        if pid == command.pid:\n"
REPORTED = '    _say(status, b"status %d" % raw)\n'


def traced_source(source: str) -> str:
    source = source.replace("import ctypes\n", "import ctypes\nimport time as _time\n_T = []\n", 1)
    for anchor, name in ANCHORS:
        if anchor not in source:
            raise SystemExit(f"resident.py changed: no line for the marker {name!r} ({anchor.strip()!r})")
        indent = anchor[:len(anchor) - len(anchor.lstrip())]
        source = source.replace(anchor, f"{indent}_T.append(_time.monotonic_ns())\n{anchor}", 1)
    if REAPED not in source:
        raise SystemExit("resident.py changed: no line for the marker 'command reaped'")
    if REPORTED not in source:
        raise SystemExit("resident.py changed: no line for the marker 'status sent'")
    # the timestamps ride on the status message itself: a message of their own would wake
    # codebelt before the init's last steps, and time those against codebelt
    source = source.replace(REAPED, REAPED + "            _T.append(_time.monotonic_ns())\n", 1)
    # only for the bench's own commands: the resident's start-up probe parses a plain status
    source = source.replace("    argv = req[\"argv\"]\n", "    argv = req[\"argv\"]\n"
                            "    globals()['_STEPS'] = 'BENCH_STEPS' in req['env']\n", 1)
    return source.replace(REPORTED, "    _T.append(_time.monotonic_ns())\n    _say(status, b\"status %d\" % raw"
                          " + (b' steps ' + b','.join(b'%d' % t for t in _T) if globals().get('_STEPS') else b''))\n", 1)


def wait_with_steps(proc: residency.JailedProcess) -> tuple[int, list[int], int]:
    """The command's status, the zygote's timestamps, and when codebelt heard the status."""
    select.select([proc.exit_fd], [], [])
    heard = time.monotonic_ns()
    proc._sock.setblocking(True)
    msg = proc._sock.recv(4096)
    status, _, steps = msg[7:].partition(b" steps ") if msg.startswith(b"status ") else (b"-9", b"", b"")
    proc.returncode = 0
    os.close(proc._pidfd)
    proc._sock.close()
    return int(status), [int(x) for x in steps.split(b",") if x], heard


def timed_requests() -> None:
    """The bench's own commands ask the compiled path for its timestamps (not the start-up probe,
    which reads a plain status)."""
    original = residency.ResidentJail.launch

    def launch(self, request, fds):
        if request.get("env", {}).get("BENCH_STEPS"):
            request = {**request, "steps": True}
        return original(self, request, fds)

    residency.ResidentJail.launch = launch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=80)
    ap.add_argument("--gap", type=float, default=0.02)
    ap.add_argument("--command", default="true", help="what bash -c runs")
    ap.add_argument("--path", choices=["native", "python", "both"], default="native" if native.available() else "python",
                    help="the resident's request path: compiled (sandbox/_zygote.c), Python, or both interleaved")
    args = ap.parse_args()
    paths = ["native", "python"] if args.path == "both" else [args.path]
    if "native" in paths and not native.available():
        raise SystemExit("the compiled request path is not built here (pip install -e . with a C compiler)")
    original = residency.resident_source
    residency.resident_source = lambda: traced_source(original())
    timed_requests()
    argv = ["/bin/bash", "-c", args.command]
    null = os.open(os.devnull, os.O_WRONLY)
    names = ["wrap (codebelt)", "to the zygote", *(name for _, name in ANCHORS[1:]), "command ran and reaped",
             "the rest killed and reaped", "status to codebelt"]
    rows: dict[str, list[list[float]]] = {p: [] for p in paths}
    direct: list[float] = []
    sandboxes: dict[str, Sandbox] = {}
    with tempfile.TemporaryDirectory(prefix="bench-jail-steps-") as d:
        ws, tmp = Path(d, "ws"), Path(d, "tmp")
        ws.mkdir()
        tmp.mkdir()
        try:
            wraps = {}
            for p in paths:
                # read by codebelt when the resident starts: at the first jailed command, below
                os.environ["CODEBELT_RESIDENT_NATIVE"] = "1" if p == "native" else "0"
                sandboxes[p] = Sandbox(config=SandboxConfig((ws,), tmp, mode="bwrap"))
                wraps[p] = sandboxes[p].jail_wrapper()
                wrapped = wraps[p](argv, ws, dict(os.environ))
                if wrapped.launch is None or (proc := wrapped.launch({1: null, 2: null})) is None:
                    sb = sandboxes[p]
                    raise SystemExit(f"no resident jail here: {sb._resident_failed or sb.jail.reason}")
                proc.wait()
                if sandboxes[p]._resident.native != (p == "native"):
                    raise SystemExit(f"the resident is not on the {p} path ({sandboxes[p]._resident.native_failed})")
            for i in range(args.rounds + 5):
                time.sleep(args.gap)
                t0 = time.perf_counter_ns()
                subprocess.run(argv, cwd=ws, stdin=subprocess.DEVNULL, stdout=null, stderr=null, check=True)
                t1 = time.perf_counter_ns()
                for p in paths:
                    time.sleep(args.gap)
                    start = time.monotonic_ns()
                    wrapped = wraps[p](argv, ws, {**os.environ, "BENCH_STEPS": "1"})
                    wrapped_at = time.monotonic_ns()
                    if wrapped.launch is None or (proc := wrapped.launch({1: null, 2: null})) is None:
                        raise SystemExit("the resident did not take the command")
                    status, steps, heard = wait_with_steps(proc)
                    if status != 0 or len(steps) != len(ANCHORS) + 2:
                        raise SystemExit(f"the command failed in the jail ({p} path, status {status}, {len(steps)} steps)")
                    if i >= 5:  # the resident's start and first zygotes
                        marks = [start, wrapped_at, *steps, heard]
                        rows[p].append([(b - a) / 1e6 for a, b in zip(marks, marks[1:])] + [(heard - start) / 1e6])
                if i >= 5:
                    direct.append((t1 - t0) / 1e6)
        finally:
            for sb in sandboxes.values():
                sb.close()
    print(f"`{' '.join(argv)}` in the resident jail, {args.rounds} rounds, {args.gap} s apart; "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print(f"{'step':<32}" + "".join(f" {p + ' min':>11} {p + ' median':>14}" for p in paths))
    for k, name in enumerate([*names, "in all"]):
        cells = "".join(f" {min(r[k] for r in rows[p]):>11.3f} {statistics.median(r[k] for r in rows[p]):>14.3f}"
                        for p in paths)
        print(f"{name:<32}{cells}")
    print(f"{'the same, spawned plainly':<32} {min(direct):>11.3f} {statistics.median(direct):>14.3f}\n")
    for p in paths:
        spawned = [r[names.index("command spawned")] + r[names.index("command ran and reaped")] for r in rows[p]]
        over = [r[-1] - c for r, c in zip(rows[p], spawned)]
        total = statistics.median(r[-1] for r in rows[p])
        print(f"{p}: the jail's own part (all but spawning and running the command): median "
              f"{statistics.median(over):.3f} ms, min {min(over):.3f} ms; in all {total:.3f} ms, "
              f"{total / statistics.median(direct):.2f}x the plain spawn")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
