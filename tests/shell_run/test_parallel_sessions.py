"""Many sessions in parallel processes — several test suites or agents on one machine — and no
command is killed by anyone but its own session.

Each worker process runs sessions one after another while the others do the same: background
commands started from a thread that ends at once and from `asyncio.run`'s executor (a sandbox
that dies with its parent died with that thread: `exit code 137 after 0.0 s`), a foreground
command from such a thread, every other session under one session id shared by all workers (the
CLI keeps one id per CLI session: a session's close swept every process marked with its id, in
every process), and each session closed while the other workers' commands run. Every command must
end on its own, with exit code 0 and its output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WORKER = r"""
import asyncio, json, sys, threading
from codebelt import Session

root, rounds = sys.argv[1], int(sys.argv[2])
seen = []


def in_a_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


for n in range(rounds):
    with Session(root=root, audit=False, load_user_settings=False, session_id="shared" if n % 2 else None,
                 settings={"lsp": {"autoDetect": False}}) as s:
        bg = {"command": "sleep 1; echo done", "run_in_background": True}
        in_a_thread(lambda: s.call("Bash", bg))
        asyncio.run(s.call_many([("Bash", bg)]))
        fg = in_a_thread(lambda: s.call("Bash", {"command": "sleep 0.3; echo done"}))
        seen.append({"how": "foreground", "exitCode": fg.data.get("exitCode"), "stdout": fg.data.get("stdout")})
        for task in s.tasks():
            r = s.call("TaskOutput", {"task_id": task["id"], "timeout": 60000})
            seen.append({"how": "background", "exitCode": r.data.get("exitCode"), "stdout": r.data.get("stdout"),
                         "status": r.data.get("status")})
    print(json.dumps(seen), flush=True)
"""

WORKERS = 3
ROUNDS = 2


def test_parallel_sessions_never_kill_each_others_commands(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # other suites' session directories stay out of reach
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(ws), str(ROUNDS)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(WORKERS)]
    outcomes = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        outcomes += json.loads(out.strip().splitlines()[-1])
    assert len(outcomes) == WORKERS * ROUNDS * 3
    wrong = [o for o in outcomes if o["exitCode"] != 0 or "done" not in (o["stdout"] or "")]
    assert not wrong, wrong
