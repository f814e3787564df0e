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
