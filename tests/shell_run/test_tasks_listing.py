"""Session.tasks lists background tasks with their status, and they end with the session."""

from __future__ import annotations

import time


def test_session_lists_background_tasks(make_session):
    s = make_session(sandbox="off", mode="bypassPermissions")
    r = s.call("Bash", {"command": "echo done", "run_in_background": True})
    assert not r.is_error, r.text
    task_id = r.data["backgroundTaskId"]
    r2 = s.call("Bash", {"command": "sleep 30", "run_in_background": True})
    for _ in range(100):
        tasks = {t["id"]: t for t in s.tasks()}
        if tasks[task_id]["status"] == "completed":
            break
        time.sleep(0.05)
    assert tasks[task_id]["status"] == "completed" and tasks[task_id]["command"] == "echo done"
    sleeper = tasks[r2.data["backgroundTaskId"]]
    assert sleeper["status"] == "running"
    assert s.call("KillShell", {"shell_id": sleeper["id"]}).is_error is False
    assert {t["id"]: t for t in s.tasks()}[sleeper["id"]]["status"] == "killed"
