"""Children started with a `preexec_fn` run Python between fork and exec, holding copies of
every lock the parent's other threads held at that instant — a background thread importing a
module (the LSP warm start, the checkpoints' baseline, the code index) holds that module's
import lock, which no thread of the child will ever release. So the Python a child runs before
exec must import nothing and take no Python lock.

`fork_harness.py` runs every kind of spawn a session makes — jailed and sandboxed commands, in
the foreground and the background (on a pseudo-terminal), ripgrep for Grep and Glob, the PDF
reader, a language server's long-lived helper — with each child put, just before its preexec
runs, in the worst state a fork can leave it in: every module half-imported by a thread that no
longer exists. A preexec that imports anything hangs there; the run is bounded, and the last
step it started names the culprit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..sandbox.conftest import backend_unusable

HARNESS = Path(__file__).with_name("fork_harness.py")
PDF = Path(__file__).parents[1] / "fixtures" / "claude_code" / "files" / "two-pages.pdf"
BOUND_S = 240  # generous under load; a hang never ends


@pytest.mark.parametrize("mode", ["bwrap", "landlock", "off"])
def test_no_child_imports_or_locks_between_fork_and_exec(tmp_path, mode):
    if mode != "off":
        why = backend_unusable(mode)
        if why:
            pytest.skip(f"{mode} cannot work here: {why}")
    ws = tmp_path / "ws"
    ws.mkdir()
    try:
        out = subprocess.run([sys.executable, str(HARNESS), str(ws), mode, str(PDF)], capture_output=True,
                             text=True, timeout=BOUND_S, env={**os.environ, "CODEBELT_HELPER": "0"}).stdout
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        started = [line for line in text.splitlines() if line.startswith("start ")]
        pytest.fail(f"a child hung before exec; last step started: {started[-1] if started else '(none)'}")
    lines = out.splitlines()
    assert lines and lines[-1] == "done", out
    starts = [line[6:] for line in lines if line.startswith("start ")]
    oks = [line for line in lines if line.startswith("ok ")]
    assert len(starts) == len(oks) == 7, out
    assert all(" False " in line or line.startswith("ok helper") for line in oks), out
