"""A background task that ends is announced: in the next result the session returns, to a
library callback, and (test_mcp_task_notice) to an MCP client as a log notification."""

from __future__ import annotations

import time


def start(s, command: str) -> str:
    r = s.call("Bash", {"command": command, "run_in_background": True})
    assert not r.is_error, r.text
    return r.data["backgroundTaskId"]


def wait_ended(s, tid: str, within: float = 10) -> None:
    """Until the task's end is announced: its notice queued, the listeners called. That comes
    after its status reads ended, from the thread that watched it (late under load)."""
    from codebelt.tools._services import task_manager

    assert s.service(task_manager).get(tid).settled.wait(within), f"{tid} never ended"


def test_next_result_carries_the_notice_once(shell, ws):
    s = shell.session()
    seen = []
    s.on_task_end(seen.append)
    tid = start(s, "sleep 0.3; echo built; exit 2")
    wait_ended(s, tid)
    (ws / "a.txt").write_text("x\n")
    r = s.call("Read", {"file_path": "a.txt"})
    assert not r.is_error
    assert (f"<task-notification>\n<task-id>{tid}</task-id>\n" in r.text
            and '<status>failed</status>\n<summary>Background command "sleep 0.3; echo built; exit 2" failed with '
                'exit code 2</summary>' in r.text)
    info = r.data["taskNotifications"][0]
    assert info["id"] == tid and info["status"] == "failed" and info["exit_code"] == 2
    assert info["output_path"] in r.text and "built" in open(info["output_path"]).read()
    assert [i["id"] for i in seen] == [tid] and seen[0]["status_text"] == "exited with code 2"
    again = s.call("Read", {"file_path": "a.txt"})
    assert "task-notification" not in again.text and "taskNotifications" not in (again.data or {})


def test_no_notice_for_an_end_the_model_already_saw(shell):
    s = shell.session()
    tid = start(s, "sleep 0.2")
    r = s.call("TaskOutput", {"task_id": tid})  # waits for the end and reports it
    assert r.data["status"] == "completed" and "task-notification" not in r.text
    assert "task-notification" not in s.call("Bash", {"command": "true"}).text
    tid2 = start(s, "sleep 30")
    stopped = s.call("TaskStop", {"task_id": tid2})
    assert "task-notification" not in stopped.text
    time.sleep(0.2)
    assert "task-notification" not in s.call("Bash", {"command": "true"}).text


def test_a_notice_for_an_auto_backgrounded_command(shell):
    s = shell.session(bash={"autoBackgroundMs": 200, "autoBackground": True})
    r = s.call("Bash", {"command": "sleep 0.6; echo late"})
    tid = r.data["backgroundTaskId"]
    wait_ended(s, tid)
    r = s.call("Bash", {"command": "true"})
    assert f"<task-id>{tid}</task-id>" in r.text and '"sleep 0.6; echo late" completed (exit code 0)' in r.text
