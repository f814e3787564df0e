"""The leak scan of these tests counts this run's processes only: other test runs on the machine
(other clones, other pytest-xdist runs) run the same commands at the same time."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

from .conftest import _OTHER_RUNS, live_processes


def test_a_token_in_another_runs_command_is_not_this_runs_leak(tmp_path):
    assert _OTHER_RUNS, "the session fixture did not say where this run is"
    tok = f"sleep 61.{uuid.uuid4().int % 10**6}"
    other = Path(_OTHER_RUNS[0]) / f"pytest-other-{uuid.uuid4().hex[:8]}"  # beside this run's directory
    other.mkdir()
    procs = []
    try:
        procs.append(subprocess.Popen(tok.split(), cwd=other))  # returns once it is `sleep`
        assert live_processes([tok], []) == []
        procs.append(subprocess.Popen(tok.split(), cwd=tmp_path))
        assert live_processes([tok], []) == [f"{procs[1].pid} {tok} "]
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(other, ignore_errors=True)
