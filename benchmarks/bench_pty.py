"""Interactive sessions: a write + read round trip to a waiting REPL, and what holding sessions
open costs.

    .venv/bin/python benchmarks/bench_pty.py [--runs N] [--sessions N]

Rows (median over N interleaved runs, same process, same machine):
- round trip to `python3 -i` waiting at its prompt: write "1+1\\n", read until the next prompt.
  * raw: os.openpty + fork/exec, write to the master, read it until ">>> " comes back (the
    program's own time plus a bare pty: the floor);
  * engine: pty_session.Pty under a ShellProcess, write + wait_for_output + render
    (TerminalReader), the way the tools do it;
  * tool: `Session.call("TaskInput", {"task_id", "input": "1+1\\n"})` (schema, permission,
    audit, the wait that ends once the REPL waits for input again, rendering, result text).
- sessions held open at once: N background `cat` tasks on terminals through Bash; codebelt's
  own RSS growth per session (pump thread, descriptors, emulator) and the children's RSS.
- a TaskInput while the answer is computed silently for 2 s in a shell's `$(…)` child: the CPU
  time codebelt spends in the call (the wait looking whether the program is still), and whether
  every answer was whole (`got 42`, then waiting for input: not cut short on the quiet).
"""

from __future__ import annotations

import argparse
import os
import pty
import resource
import select
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from codebelt import Session  # noqa: E402
from codebelt.shell.execution.pty_session import Pty, wait_for_output  # noqa: E402
from codebelt.shell.execution.runner import ShellProcess, build_env  # noqa: E402
from codebelt.shell.execution.terminal import TerminalReader  # noqa: E402

PROMPT = b">>> "


def rss_kb(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class RawRepl:
    def __init__(self) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvp("python3", ["python3", "-i", "-q"])
        self.until(PROMPT)

    def until(self, marker: bytes) -> bytes:
        buf = b""
        while not buf.endswith(marker):
            select.select([self.fd], [], [], 5)
            buf += os.read(self.fd, 65536)
        return buf

    def round_trip(self) -> float:
        t = time.perf_counter()
        os.write(self.fd, b"1+1\n")
        out = self.until(b"2\r\n" + PROMPT)
        assert b"2" in out
        return time.perf_counter() - t

    def close(self) -> None:
        os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)


class EngineRepl:
    def __init__(self, tmp: Path) -> None:
        env = build_env("inherit", [], tmp, "bench.pty")
        self.spool = tmp / "engine.log"
        self.io = Pty()
        self.proc = ShellProcess("python3 -i -q", tmp, env, self.spool, stdio=self.io).start()
        self.reader = TerminalReader(self.spool)
        r = wait_for_output(self.io, since=0, timeout_s=10)
        self.reader.read(r.size, False, 100_000)

    def round_trip(self) -> float:
        t = time.perf_counter()
        since = self.io.output.size
        mark = self.io.progress_mark()
        self.io.write(b"1+1\n")
        r = wait_for_output(self.io, since=since, timeout_s=10, mark=mark)
        text, _, _ = self.reader.read(r.size, False, 100_000)
        elapsed = time.perf_counter() - t
        assert r.reason == "waiting" and "2\n>>> " in text, (r, text)
        return elapsed

    def close(self) -> None:
        self.proc.stop("killed")
        self.proc.wait(5)
        self.io.close()


class ToolRepl:
    def __init__(self, session: Session) -> None:
        self.session = session
        r = session.call("Bash", {"command": "python3 -i -q", "run_in_background": True})
        self.tid = r.data["backgroundTaskId"]
        seen = ""
        while ">>> " not in seen:
            seen += session.call("TaskInput", {"task_id": self.tid, "wait_ms": 5000}).data["stdout"]

    def round_trip(self) -> float:
        t = time.perf_counter()
        r = self.session.call("TaskInput", {"task_id": self.tid, "input": "1+1\n", "wait_ms": 10_000})
        elapsed = time.perf_counter() - t
        assert r.data["waitingForInput"] and "2\n>>> " in r.data["stdout"], r.text
        return elapsed


COMPUTE_2S = "import time; t = time.monotonic()\nwhile time.monotonic() - t < 2.0: pass\nprint(42)"


def computing_cpu(session: Session, calls: int) -> None:
    command = f"while read -r a; do x=$({sys.executable} -c '{COMPUTE_2S}'); echo \"got $x\"; done"
    tid = session.call("Bash", {"command": command, "run_in_background": True}).data["backgroundTaskId"]
    cpu, whole = [], 0
    for _ in range(calls):
        before = time.process_time()
        r = session.call("TaskInput", {"task_id": tid, "input": "go\n", "wait_ms": 30_000})
        cpu.append(time.process_time() - before)
        whole += "got 42" in r.data["stdout"] and r.data["waitingForInput"]
    session.call("TaskStop", {"task_id": tid})
    print(f"TaskInput while a $(…) child computes silently for 2 s ({calls} calls): codebelt's CPU "
          f"{statistics.median(cpu) * 1000:.0f} ms median ({min(cpu) * 1000:.0f}–{max(cpu) * 1000:.0f}); "
          f"whole answers {whole}/{calls}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--computing", type=int, default=5, help="TaskInput calls to a computing child")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        ws = tmp / "ws"
        ws.mkdir()
        session = Session(ws, mode="bypassPermissions", sandbox="off", audit=tmp / "audit.db",
                          load_user_settings=False)
        raw, engine, tool = RawRepl(), EngineRepl(tmp), ToolRepl(session)
        samples: dict[str, list[float]] = {"raw": [], "engine": [], "tool": []}
        for _ in range(10):  # warm up
            raw.round_trip(), engine.round_trip(), tool.round_trip()
        for _ in range(args.runs):
            samples["raw"].append(raw.round_trip())
            samples["engine"].append(engine.round_trip())
            samples["tool"].append(tool.round_trip())
        raw.close()
        engine.close()
        session.call("TaskStop", {"task_id": tool.tid})
        med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
        p90 = {k: statistics.quantiles(v, n=10)[-1] * 1000 for k, v in samples.items()}
        print(f"round trip to a waiting python3 -i ({args.runs} runs, median / p90):")
        for k in ("raw", "engine", "tool"):
            extra = "" if k == "raw" else f"   +{med[k] - med['raw']:.2f} ms over raw"
            print(f"  {k:<7} {med[k]:7.2f} ms / {p90[k]:7.2f} ms{extra}")

        before = rss_kb()
        ids = []
        t = time.perf_counter()
        for _ in range(args.sessions):
            r = session.call("Bash", {"command": "cat", "run_in_background": True})
            assert not r.is_error, r.text
            ids.append(r.data["backgroundTaskId"])
        for tid in ids:  # each one answered once: emulator and reader exist
            assert "ping" in session.call("TaskInput", {"task_id": tid, "input": "ping\n", "wait_ms": 5000}).data["stdout"]
        opened = time.perf_counter() - t
        after = rss_kb()
        from codebelt.tools._services import task_manager

        manager = session.service(task_manager)
        children = [rss_kb(manager.get(tid).process.pid) for tid in ids]
        print(f"{args.sessions} sessions open at once (cat on a terminal, each written to and read once): "
              f"{opened * 1000 / args.sessions:.1f} ms each to open and answer")
        print(f"  codebelt's RSS: +{(after - before) / args.sessions:.0f} kB per session "
              f"({before / 1024:.0f} MB → {after / 1024:.0f} MB); threads: {len(os.listdir('/proc/self/task'))}")
        print(f"  each session's process (bash exec'd into cat): {statistics.median(children):.0f} kB RSS")
        refused = session.call("Bash", {"command": "cat", "run_in_background": True})
        print(f"  session {args.sessions + 1}: {'refused' if refused.is_error else 'accepted'}"
              f"{': ' + refused.text[:80] if refused.is_error else ''}")
        computing_cpu(session, args.computing)
        session.close()
        print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
