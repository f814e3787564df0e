"""Sandbox overhead: a sandboxed command versus an unsandboxed one, per backend — the write
sandbox, the read-only jail (what an auto-allowed `ls` runs in; under bwrap with and without
the Landlock layer inside that refuses FIFO writes) and ripgrep's helper jail (no devices, no
/proc, no new process, no cgroup) — in the same run.

Each round spawns the command once per variant (interleaved, so machine noise hits all alike),
the way the Bash runner does: argv list, own session, stdin /dev/null, preexec_fn from the
wrapper. The wrapper call itself (building bwrap's argv, the process-cap bookkeeping) is inside
the timed region. Reported: median and p90 wall time, and the median added over unsandboxed.
Aims: < 10 ms added with Landlock, < 30 ms with bwrap; <= 2 ms for the jail started in the
resident.

    .venv/bin/python benchmarks/bench_sandbox.py [--rounds 200] [--command true|bash|ls] [--masked] [--gap 0.02]
    .venv/bin/python benchmarks/bench_sandbox.py --tool [--rounds 200] [--gap 0.2]

`jail-bwrap` is the jail as the Bash runner starts it now (in the session's resident jail,
resident.py); `jail-bwrap-one-shot` builds the same jail for each command (the fallback, and what
other callers spawn). Likewise `bwrap` is the write sandbox started in the session's resident
write sandbox (resident_sandbox.py) and `bwrap-one-shot` one bwrap per command (the PTY path, the
proxy, the fallback). `--masked`: a `.env` in the workspace is masked (a Read deny rule) for
every variant: a one-shot bwrap then checks that its cover landed where codebelt found it
(stage.py), what a session with such a rule pays per one-shot command.
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

import exact
from codebelt.sandbox import Sandbox, SandboxConfig
from codebelt.sandbox.helpers import HelperProfile

# ripgrep's profile (tools/_services.py), for any program: what a jailed helper pays per start
RG_LIKE = HelperProfile("bench", system=False, prefer_landlock=True, cgroups=False, no_processes=True)

AIMS_MS = {"landlock": 10.0, "bwrap": 2.0, "bwrap-one-shot": 30.0, "jail-landlock": 10.0, "jail-bwrap": 2.0}


def spawn(wrap, one_shot_or_argv, *rest) -> float:
    if isinstance(one_shot_or_argv, bool):
        return _spawn(wrap, *rest, one_shot=one_shot_or_argv)
    return _spawn(wrap, one_shot_or_argv, *rest)


def _spawn(wrap, argv: list[str], cwd: Path, one_shot: bool = False) -> float:
    """One start, the way the Bash runner does it: the resident jail's launch when the wrapper
    offers one (unless `one_shot`), else a spawn of the wrapped argv."""
    t0 = time.perf_counter()
    if wrap == DIRECT:
        _run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return (time.perf_counter() - t0) * 1000
    env, preexec, cleanup, launch, wrapped = dict(os.environ), None, None, None, None
    if wrap is not None:
        wrapped = wrap(argv, cwd, env)
        launch = None if one_shot else getattr(wrapped, "launch", None)
    proc = launch({1: DEVNULL_FD, 2: DEVNULL_FD}) if launch is not None else None
    if proc is not None:
        # as the runner: the wrapper's one-shot argv (built when first read) is never read
        if proc.wait(30) != 0:
            raise RuntimeError(f"{argv} failed in the resident")
    else:
        if wrapped is not None:
            argv, env, preexec, *rest = wrapped
            cleanup = rest[0] if rest else None
        _run(argv, cwd=cwd, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    if cleanup is not None:
        cleanup()
    return (time.perf_counter() - t0) * 1000


def _run(argv: list[str], **kwargs) -> None:
    """Spawn and wait, told of the exit by the kernel (exact.py), at most 30 s. Not
    `subprocess.run(timeout=…)`: its wait polls, sleeping 1, 2, 4 ms between looks, so a command
    of ~1.2 ms was timed at ~3.4 — a baseline 2 ms too slow against a jail whose end wakes it."""
    exact.run(argv, timeout=30, check=True, **kwargs)


DEVNULL_FD = os.open(os.devnull, os.O_WRONLY)
# the command as a caller with no sandbox spawns it: no new session (setsid costs a scheduler
# autogroup, ~2 ms here, which the runner pays and the resident jail's commands do not)
DIRECT = "direct"


def tool_rows(rounds: int, gap: float = 0.0) -> int:
    """What an agent waits for: the Bash tool end to end (permission check, spawn, result) — an
    auto-allowed read-only `true` in the jail, with the jail off (the write sandbox), with no
    sandbox at all, an auto-allowed `touch` in the write sandbox — against a raw `bash -c true`,
    interleaved. `gap`: seconds idle before each call (an agent's think time is seconds: a
    resident's next command starter is ready, and idle CPUs have halted)."""
    from codebelt import Session

    def session(ws: Path, **sandbox) -> Session:
        return Session(ws, audit=False, load_user_settings=False,
                       settings={"sandbox": {"autoAllowBash": True, **sandbox},
                                 "bash": {"autoBackground": False}})

    with tempfile.TemporaryDirectory(prefix="bench-sandbox-tool-") as d:
        ws = Path(d)
        jailed, unjailed = session(ws, mode="bwrap"), session(ws, mode="bwrap", jail=False)
        bare = session(ws, mode="off", jail=False)
        one_shot = session(ws, mode="bwrap")
        one_shot.sandbox().resident_sandbox = False  # one bwrap per command, as before the resident
        rows = {
            "bash -c true (raw)": lambda: subprocess.run(["/bin/bash", "-c", "true"], check=True),
            "Bash true, no sandbox": lambda: _ok(bare.call("Bash", {"command": "true"})),
            "Bash true, jailed": lambda: _ok(jailed.call("Bash", {"command": "true"})),
            "Bash true, jail off (sandbox)": lambda: _ok(unjailed.call("Bash", {"command": "true"})),
            "Bash touch x, write sandbox": lambda: _ok(jailed.call("Bash", {"command": "touch x"})),
            "Bash touch x, one-shot sandbox": lambda: _ok(one_shot.call("Bash", {"command": "touch x"})),
        }
        times: dict[str, list[float]] = {k: [] for k in rows}
        try:
            for fn in rows.values():
                for _ in range(5):
                    fn()
            for sess in (jailed, unjailed):  # the resident write sandbox starts in the background
                if sess.sandbox()._sandbox_resident is not None:
                    sess.sandbox()._sandbox_resident.wait_started(30)
            for _ in range(rounds):
                for name, fn in rows.items():
                    if gap:
                        time.sleep(gap)
                    t0 = time.perf_counter()
                    fn()
                    times[name].append((time.perf_counter() - t0) * 1000)
        finally:
            for sess in (jailed, unjailed, bare, one_shot):
                sess.close()
    base = statistics.median(times["bash -c true (raw)"])
    print(f"\nThe Bash tool end to end, {rounds} rounds, interleaved, {gap} s idle before each call; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    print(f"{'row':<31} {'min ms':>7} {'median ms':>10} {'p90 ms':>8} {'ratio':>6}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<31} {min(ts):>7.2f} {med:>10.2f} {statistics.quantiles(ts, n=10)[-1]:>8.2f} "
              f"{med / base:>5.1f}x")
    return 0


def _ok(result) -> None:
    data = result.data or {}
    if data.get("exitCode") != 0:
        raise RuntimeError(f"the command failed: {result.text[:300]} {data}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", action="store_true",
                    help="the Bash tool end to end (jailed true, jail off, sandboxed touch) instead")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--command", choices=["true", "bash", "ls"], default="true",
                    help="true: /bin/true; bash: bash -c true (what the Bash tool spawns); ls: bash -c ls")
    ap.add_argument("--masked", action="store_true", help="a workspace .env masked for every variant")
    ap.add_argument("--gap", type=float, default=0.0,
                    help="seconds idle before each timed start (an agent's think time: idle CPUs halt)")
    args = ap.parse_args()
    if args.tool:
        return tool_rows(args.rounds, args.gap)
    argv = {"true": ["/bin/true"], "bash": ["/bin/bash", "-c", "true"], "ls": ["/bin/bash", "-c", "ls -la"]}[args.command]

    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as d:
        ws, tmp = Path(d, "ws"), Path(d, "tmp")
        ws.mkdir()
        tmp.mkdir()
        for i in range(20):  # something for `ls` to list
            (ws / f"file{i}.txt").write_text("x\n")
        masked: list[Path] = []
        if args.masked:
            (ws / ".env").write_text("KEY=secret\n")
            masked.append(ws / ".env")
        variants: dict[str, object] = {"unsandboxed": None, "direct (no setsid)": DIRECT}
        sandboxes, skipped = [], []
        for backend in ("landlock", "bwrap"):
            t0 = time.perf_counter()
            sb = Sandbox(config=SandboxConfig((ws,), tmp, mode=backend))
            probe_ms = (time.perf_counter() - t0) * 1000
            sandboxes.append(sb)
            if sb.status.active:
                variants[backend] = sb.wrapper(lambda: masked)
                if backend == "bwrap":
                    variants["bwrap-one-shot"] = (sb.wrapper(lambda: masked), True)  # one bwrap per command
                print(f"{backend}: probe {probe_ms:.1f} ms; {sb.status.reason}; {sb.status.process_limit}")
            else:
                skipped.append(f"{backend}: unavailable ({sb.status.reason})")
            if sb.jail.backend == backend:
                variants[f"jail-{backend}"] = sb.jail_wrapper(masked)
                if backend == "bwrap" and sb._stage_abi:
                    # the same jail built for each command (what runs when no resident can)
                    variants["jail-bwrap-one-shot"] = (sb.jail_wrapper(masked), True)
                print(f"jail-{backend}: {sb.jail.reason}")
                variants[f"helper-{backend}"] = sb.helper(RG_LIKE, masked)
                if backend == "bwrap" and sb._stage_abi:
                    # the jail as it was before the Landlock layer, to show what the layer costs
                    bare = Sandbox(config=SandboxConfig((ws,), tmp, mode=backend))
                    bare._stage_abi = 0
                    sandboxes.append(bare)
                    variants["jail-bwrap-no-layer"] = bare.jail_wrapper(masked)
            else:
                skipped.append(f"jail-{backend}: unavailable ({sb.jail.reason})")
        times: dict[str, list[float]] = {k: [] for k in variants}
        try:
            def one(wrap) -> float:
                return spawn(*wrap, argv, ws) if isinstance(wrap, tuple) else spawn(wrap, argv, ws)

            for name, wrap in variants.items():  # warm-up (and the resident jail's start)
                for _ in range(5):
                    one(wrap)
            for sb in sandboxes:  # the resident write sandbox starts in the background
                if sb._sandbox_resident is not None:
                    sb._sandbox_resident.wait_started(30)
            for _ in range(args.rounds):
                for name, wrap in variants.items():
                    if args.gap:
                        time.sleep(args.gap)
                    times[name].append(one(wrap))
        finally:
            for sb in sandboxes:
                sb.close()

    base = statistics.median(times["unsandboxed"])
    direct = statistics.median(times["direct (no setsid)"])
    print(f"\n`{' '.join(argv)}`, {args.rounds} rounds, interleaved, {args.gap} s idle before each; {os.cpu_count()} CPUs, "
          f"Python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f}\n")
    print("added/ratio: over `unsandboxed` (spawned as the runner does, in a session of its own); "
          "+direct/xdirect: over the command spawned plainly (its own time: the resident jail's aim)\n")
    print(f"{'variant':<20} {'min ms':>7} {'median ms':>10} {'p90 ms':>8} {'added ms':>9} {'ratio':>6} "
          f"{'+direct':>8} {'xdirect':>8} {'aim':>12}")
    for name, ts in times.items():
        med = statistics.median(ts)
        p90 = statistics.quantiles(ts, n=10)[-1]
        added = med - (direct if name == "jail-bwrap" else base)
        aim = AIMS_MS.get(name)
        verdict = "" if aim is None else (f"<{aim:g} ms " + ("ok" if added < aim else "MISSED"))
        print(f"{name:<20} {min(ts):>7.2f} {med:>10.2f} {p90:>8.2f} {med - base:>9.2f} {med / base:>5.1f}x "
              f"{med - direct:>8.2f} {med / direct:>7.1f}x {verdict:>12}")
    if "jail-bwrap" in times:
        med = statistics.median(times["jail-bwrap"])
        ratio = med / direct
        print(f"\nresident jail: {med - direct:+.2f} ms over the command's own time (aim <= 2 ms: "
              f"{'ok' if med - direct <= 2 else 'MISSED'}), {ratio:.2f}x it (aim <= 1.5x: "
              f"{'ok' if ratio <= 1.5 else 'MISSED'})")
    for line in skipped:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
