"""Parse worker processes: a worker that dies takes only the guilty file down with it."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

from codebelt.intel import pool
from codebelt.intel.pool import CRASHED, Job, Parser


class _DyingOnPoison(pool._Worker):
    """A real worker process, SIGKILLed whenever it is handed the poison file (as if the
    grammar had crashed on it)."""

    def send(self, chunk, max_bytes):
        if any(j.rel == "poison.py" for j in chunk):
            # killed before it can answer, as a crash inside the grammar would leave it
            os.kill(self.proc.pid, signal.SIGKILL)
        super().send(chunk, max_bytes)


def test_a_dying_worker_costs_only_the_guilty_file(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(pool, "_Worker", _DyingOnPoison)
    jobs = []
    for i in range(80):
        p = tmp_path / f"m{i}.py"
        p.write_text(f"def f{i}():\n    pass\n")
        jobs.append(Job(p.name, str(p), "python", p.stat().st_size))
    poison = tmp_path / "poison.py"
    poison.write_text("def poison():\n    pass\n")
    jobs.insert(37, Job("poison.py", str(poison), "python", 10))
    results = {}
    Parser(1_000_000, workers=2).run(jobs, lambda j, o: results.__setitem__(j.rel, o),
                                     threading.Event())
    assert len(results) == 81
    assert results["poison.py"].error == CRASHED
    good = [o for rel, o in results.items() if rel != "poison.py"]
    assert all(o.error is None and o.rows and len(o.rows.symbols) == 1 for o in good)


def test_workers_are_gone_after_a_run(tmp_path: Path, monkeypatch):
    started: list[int] = []

    class Tracked(pool._Worker):
        def __init__(self):
            super().__init__()
            started.append(self.proc.pid)

    monkeypatch.setattr(pool, "_Worker", Tracked)
    jobs = []
    for i in range(60):
        p = tmp_path / f"m{i}.py"
        p.write_text("x = 1\n")
        jobs.append(Job(p.name, str(p), "python", 6))
    Parser(1_000_000, workers=2).run(jobs, lambda j, o: None, threading.Event())
    assert started
    for pid in started:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"worker {pid} still running")


# Run in a child of its own: a subreaper that adopts the worker when its parent dies, so the
# worker's exit status can be read. The parent proves the worker is in its loop (a round trip),
# stops it, queues a chunk and dies; the worker is let go only after the parent is gone.
_ORPHAN_SCRIPT = r"""
import ctypes, marshal, os, signal, sys, time
from codebelt.intel import pool
from codebelt.intel.frames import read_frame, write_frame

PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
files = sys.argv[1:]
ready_r, ready_w = os.pipe()
parent = os.fork()
if parent == 0:
    w = pool._Worker()
    os.set_blocking(w.fd, True)
    write_frame(w.proc.stdin, marshal.dumps((1_000_000, [])))
    read_frame(w.proc.stdout, 1 << 20)
    os.kill(w.proc.pid, signal.SIGSTOP)
    while open(f"/proc/{w.proc.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "T":
        time.sleep(0.01)
    write_frame(w.proc.stdin, marshal.dumps((1_000_000, [(f, "python", 0, 0) for f in files])))
    os.write(ready_w, str(w.proc.pid).encode())
    os._exit(0)
os.close(ready_w)
worker = int(os.read(ready_r, 64))
os.waitpid(parent, 0)
os.kill(worker, signal.SIGCONT)
_, status = os.waitpid(worker, 0)
print(os.waitstatus_to_exitcode(status))
"""


def test_an_orphaned_worker_stops_instead_of_parsing_for_nobody(tmp_path: Path):
    import subprocess
    import sys

    files = []
    for i in range(16):
        p = tmp_path / f"m{i}.py"
        p.write_text("def f():\n    pass\n" * 2000)
        files.append(str(p))
    out = subprocess.run([sys.executable, "-c", _ORPHAN_SCRIPT, *files], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # 0: it saw its parent gone before the first file. A worker that parsed the chunk anyway
    # fails writing the answer to a pipe nobody reads (BrokenPipeError, non-zero).
    assert out.stdout.strip() == "0"
