"""Background tasks: run_in_background, auto-background, BashOutput, KillShell, session end."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from codebelt.tools._services import task_manager as TaskManager


def _wait_done(s, task_id: str, within: float = 10.0) -> None:
    task = s.service(TaskManager).get(task_id)
    assert task.process.wait(within), f"{task_id} still running"


def _wait_output(s, task_id: str, size: int, within: float = 10.0) -> None:
    task = s.service(TaskManager).get(task_id)
    deadline = time.monotonic() + within
    while task.process.output_size() < size:
        assert time.monotonic() < deadline, "output never arrived"
        time.sleep(0.02)


def test_background_incremental_reads_and_filter(shell):
    s = shell.session()
    r = s.call("Bash", {"command": "printf 'a1\\nb1\\na2\\n'; while [ ! -e go ]; do sleep 0.02; done; printf 'a3\\nb2\\n'; exit 4",
                        "run_in_background": True, "description": "gated printer"})
    assert not r.is_error, r.text
    tid = r.data["backgroundTaskId"]
    assert tid == "bash_1" and tid in r.text
    assert Path(r.data["outputPath"]).is_file()
    _wait_output(s, tid, 9)
    r = s.call("BashOutput", {"bash_id": tid, "filter": "^a"})
    assert "<status>running</status>" in r.text
    assert r.data["stdout"] == "a1\na2\n".rstrip("\n") or r.data["stdout"] == "a1\na2"
    (shell.ws / "go").touch()
    _wait_done(s, tid)
    r = s.call("BashOutput", {"bash_id": tid})
    # b1 was filtered away by the previous read: only what came after
    assert r.data["stdout"] == "a3\nb2\n\n[exited with code 4]\n"  # the file ends as Claude Code's do
    assert r.data["status"] == "failed" and r.data["exitCode"] == 4
    assert "<exit_code>4</exit_code>" in r.text
    r = s.call("BashOutput", {"bash_id": tid})
    assert r.data["stdout"] == "" and "no new output" in r.text
    # the whole output stays in the file until the session ends
    assert Path(r.data["outputPath"]).read_text() == "a1\nb1\na2\na3\nb2\n\n[exited with code 4]\n"


def test_filter_keeps_partial_line_until_complete(shell):
    s = shell.session()
    r = s.call("Bash", {"command": "printf 'err: par'; while [ ! -e go ]; do sleep 0.02; done; printf 'tial\\nok\\n'",
                        "run_in_background": True})
    tid = r.data["backgroundTaskId"]
    _wait_output(s, tid, 8)
    assert s.call("BashOutput", {"bash_id": tid, "filter": "err"}).data["stdout"] == ""
    (shell.ws / "go").touch()
    _wait_done(s, tid)
    assert s.call("BashOutput", {"bash_id": tid, "filter": "err"}).data["stdout"] == "err: partial"


def test_bash_output_errors(shell):
    s = shell.session()
    r = s.call("BashOutput", {"bash_id": "bash_9"})
    assert r.is_error and "No background shell" in r.text and "Known shell ids: none" in r.text
    tid = s.call("Bash", {"command": "true", "run_in_background": True}).data["backgroundTaskId"]
    r = s.call("BashOutput", {"bash_id": "nope"})
    assert r.is_error and tid in r.text
    r = s.call("BashOutput", {"bash_id": tid, "filter": "(unclosed"})
    assert r.is_error and "Invalid filter regex" in r.text
    r = s.call("KillShell", {"shell_id": "nope"})
    assert r.is_error and tid in r.text


def test_kill_shell_stops_the_whole_group(shell):
    s = shell.session()
    tok = shell.token("sleep 737")
    r = s.call("Bash", {"command": f"trap '' TERM; ( trap '' TERM; {tok} ) & {tok}", "run_in_background": True})
    tid = r.data["backgroundTaskId"]
    from .conftest import live_processes, wait_gone

    deadline = time.monotonic() + 5
    while len(live_processes([tok], [])) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    r = s.call("KillShell", {"shell_id": tid})
    assert not r.is_error and "Successfully killed shell" in r.text
    assert r.data["status"] == "killed"
    assert not wait_gone([tok], [], within=3)
    r = s.call("BashOutput", {"bash_id": tid})
    assert r.data["status"] == "killed" and "killed" in r.text
    r = s.call("KillShell", {"shell_id": tid})
    assert not r.is_error and "not running" in r.text


def test_auto_background_after_budget(shell):
    s = shell.session(bash={"autoBackgroundMs": 300, "autoBackground": True})
    r = s.call("Bash", {"command": "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second"})
    assert not r.is_error, r.text
    tid = r.data["backgroundTaskId"]
    assert "moved to the background" in r.text and "first" in r.text
    (shell.ws / "go").touch()
    _wait_done(s, tid)
    r = s.call("BashOutput", {"bash_id": tid})
    assert r.data["stdout"] == "second\n\n[exited with code 0]\n"  # "first" was already delivered
    assert r.data["status"] == "completed"


def test_auto_background_off_switch(shell):
    s = shell.session(bash={"autoBackgroundMs": 100, "autoBackground": False})
    r = s.call("Bash", {"command": "sleep 0.5; echo waited"})
    assert r.text == "waited" and "backgroundTaskId" not in r.data


def test_fifty_background_tasks(shell):
    s = shell.session()
    ids = [s.call("Bash", {"command": f"echo task {i}", "run_in_background": True}).data["backgroundTaskId"]
           for i in range(50)]
    assert len(set(ids)) == 50
    for i, tid in enumerate(ids):
        _wait_done(s, tid)
        r = s.call("BashOutput", {"bash_id": tid})
        assert r.data["stdout"] == f"task {i}\n\n[exited with code 0]\n" and r.data["status"] == "completed"


def test_fifty_running_tasks_die_with_the_session(shell):
    s = shell.session()
    tok = shell.token("sleep 736")
    for _ in range(50):
        # half of them ignore SIGTERM: the shared grace period, then SIGKILL
        s.call("Bash", {"command": f"trap '' TERM; {tok}", "run_in_background": True})
    tasks = s.service(TaskManager).tasks()
    assert len(tasks) == 50 and all(t.process.running for t in tasks)
    started = time.monotonic()
    s.close()
    assert all(not t.process.running for t in tasks)
    assert time.monotonic() - started < 10  # one shared grace period, not fifty
    # the fixture's teardown checks the process table


def test_concurrent_calls_from_threads(shell):
    s = shell.session()
    results = {}

    def worker(i):
        results[i] = s.call("Bash", {"command": f"echo t{i}"})

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert {i: r.text for i, r in results.items()} == {i: f"t{i}" for i in range(16)}


def test_background_timeout_when_given(shell):
    s = shell.session()
    tid = s.call("Bash", {"command": "sleep 30", "run_in_background": True, "timeout": 200}).data["backgroundTaskId"]
    _wait_done(s, tid)
    r = s.call("BashOutput", {"bash_id": tid})
    assert r.data["status"] == "timed_out"
