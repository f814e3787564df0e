"""`codebelt serve` over stdio ends when its client dies: stdin reaches its end, the session
closes, and every process the server started (commands, hooks, language servers, jails) is gone —
whether the client died while idle or in the middle of a call that would run for a long time.

Real processes: a client process of its own (tests/mcp/stdio_client.py, the SDK's client) killed
with SIGKILL, its `codebelt serve` watched through /proc.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import CODEBELT

CLIENT = str(Path(__file__).with_name("stdio_client.py"))
# Generous: the server's own bounds are the commands' kill grace and the session's close.
GONE_WITHIN_S = 60.0
STARTED_WITHIN_S = 60.0
# scripts/setup.sh installs it next to the interpreter; without it the LSP call starts no server
LANGSERVER = shutil.which("basedpyright-langserver", path=str(Path(sys.executable).parent))


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a live process, None when it is gone (or a zombie)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    if fields[0] == "Z":
        return None
    return int(fields[1]), int(fields[19])


def _descendants(pid: int) -> dict[int, int]:
    """Every live process below `pid`, with its start time (pids are reused)."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None:
            children.setdefault(st[0], []).append(int(entry))
            starts[int(entry)] = st[1]
    found: dict[int, int] = {}
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found[child] = starts[child]
                todo.append(child)
    return found


def _alive(procs: dict[int, int]) -> dict[int, str]:
    left = {}
    for pid, start in procs.items():
        st = _stat(pid)
        if st is not None and st[1] == start:
            try:
                left[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
            except OSError:
                pass
    return left


def _marker() -> str:
    return f"1000.{random.randrange(10**8):08d}"  # `sleep 1000.NNNNNNNN`: findable in /proc


# What the client does before it dies: (calls made first, the call it dies in or None for idle).
# Every scenario has a `sleep MARKER` of the server's running when the client dies.
SCENARIOS = {
    # a background command and a language server (the LSP call starts it) left running
    "idle": lambda m: ([["Bash", {"command": f"sleep {m}", "run_in_background": True}],
                        ["LSP", {"operation": "documentSymbol", "filePath": "app.py", "line": 1, "character": 5}]],
                       None),
    # a foreground command running
    "in-a-command": lambda m: ([], ["Bash", {"command": f"sleep {m}"}]),
    # a PreToolUse hook running: the call is not in the tool yet
    "in-a-hook": lambda m: ([], ["Read", {"file_path": "app.py"}]),
    # a PostToolUse hook running: the tool has finished
    "in-a-post-hook": lambda m: ([], ["Glob", {"pattern": "*.py"}]),
    # the call waits for the user's answer (elicitation), which never comes; a background
    # command runs meanwhile
    "in-a-question": lambda m: ([["Bash", {"command": f"sleep {m}", "run_in_background": True}]],
                                ["Write", {"file_path": "new.txt", "content": "x\n"}]),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_serve_ends_with_its_client_and_leaves_nothing(scenario, tmp_path):
    marker = _marker()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({
        "permissions": {"allow": ["Bash(sleep *)"]},
        "hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": f"sleep {marker}"}]}],
                  "PostToolUse": [{"matcher": "Glob", "hooks": [{"type": "command", "command": f"sleep {marker}"}]}]},
    }))
    calls, last = SCENARIOS[scenario](marker)
    for call in calls + ([last] if last else []):
        if "filePath" in call[1]:
            call[1]["filePath"] = str(root / call[1]["filePath"])
        if "file_path" in call[1]:
            call[1]["file_path"] = str(root / call[1]["file_path"])
    state = tmp_path / "state"
    env = {**{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
           "XDG_CONFIG_HOME": str(state / "config"), "XDG_STATE_HOME": str(state / "state"),
           "CODEBELT_AUDIT_DB": str(state / "audit.db")}
    asks = scenario == "in-a-question"  # a Write asks in the default mode
    spec = {"command": [CODEBELT, "serve", "--root", str(root), "--settings", str(settings),
                        "--mode", "default" if asks else "acceptEdits"],
            "env": env, "calls": calls, "last": last, "answer": not asks}
    out = tmp_path / "client.out"
    with open(out, "wb") as sink:
        client = subprocess.Popen([sys.executable, CLIENT, json.dumps(spec)], stdin=subprocess.DEVNULL,
                                  stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    started: dict[int, int] = {}
    try:
        deadline = time.monotonic() + STARTED_WITHIN_S
        # until the client has said so and the marked command or hook runs (idle: and the
        # language server the LSP call asked for, so that there is one to be stopped)
        wanted = [marker] + (["langserver"] if scenario == "idle" and LANGSERVER else [])
        while True:
            started = _descendants(client.pid)
            lines = out.read_text(errors="replace").splitlines()
            running = _alive(started).values()
            said = "asked" if asks else "calling" if last else "ready"
            if said in lines and all(any(w in c for c in running) for w in wanted):
                break
            assert client.poll() is None, f"the client ended: {out.read_text()}"
            assert time.monotonic() < deadline, f"the client did not get going: {out.read_text()}"
            time.sleep(0.1)
        assert not any(json.loads(line)["error"] for line in lines if line.startswith("{")), lines
        server = [pid for pid in started if _stat(pid) and _stat(pid)[0] == client.pid]
        assert len(server) == 1, started
        client.kill()
        client.wait()
        deadline = time.monotonic() + GONE_WITHIN_S
        while _alive(started) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(started), f"left running after the client died: {_alive(started)}"
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        for pid in _alive(started):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
