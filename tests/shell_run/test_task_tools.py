"""Claude Code's current names, TaskOutput {task_id, block, timeout} and TaskStop {task_id}, on
the same implementation as BashOutput and KillShell."""

from __future__ import annotations

import asyncio
import time

import pytest


def start(s, command: str) -> str:
    r = s.call("Bash", {"command": command, "run_in_background": True})
    assert not r.is_error, r.text
    return r.data["backgroundTaskId"]


def test_block_waits_for_the_task_to_end(shell):
    s = shell.session()
    tid = start(s, "sleep 0.5; echo finished; exit 3")
    r = s.call("TaskOutput", {"task_id": tid})  # block defaults to true
    assert not r.is_error, r.text
    assert r.data["status"] == "failed" and r.data["exitCode"] == 3 and "finished" in r.data["stdout"]
    assert "<exit_code>3</exit_code>" in r.text


def test_non_blocking_check_and_a_wait_that_runs_out(shell):
    s = shell.session()
    tid = start(s, "echo early; sleep 30")
    seen, deadline = "", time.monotonic() + 15  # the command prints when it gets to run (late under load)
    while "early" not in seen:
        assert time.monotonic() < deadline, seen
        r = s.call("TaskOutput", {"task_id": tid, "block": False})  # returns at once: what is there
        assert r.data["status"] == "running", r.text
        seen += r.data["stdout"]
        time.sleep(0.05)
    began = time.monotonic()
    r = s.call("TaskOutput", {"task_id": tid, "timeout": 300})
    assert r.data["status"] == "running" and "still running after waiting 0.3s" in r.text
    assert time.monotonic() - began < 10
    stop = s.call("TaskStop", {"task_id": tid})
    assert not stop.is_error and stop.data["wasRunning"] is True and stop.data["status"] == "killed"


def test_a_stopped_task_s_output_file_ends_with_the_killed_line_when_taskstop_returns(shell, monkeypatch):
    """The line is written by the task's end listener, which runs after the process's exit is
    known: TaskStop waits for it (made slow here; a Read right after TaskStop missed it)."""
    from codebelt.tools import _services

    original = _services._end_of_output
    monkeypatch.setattr(_services, "_end_of_output", lambda task, ctx: (time.sleep(0.5), original(task, ctx)))
    s = shell.session()
    r = s.call("Bash", {"command": "echo partial; sleep 30", "run_in_background": True})
    tid, output = r.data["backgroundTaskId"], r.data["outputPath"]
    deadline = time.monotonic() + 15  # the command prints when it gets to run (late under load)
    while "partial" not in open(output).read():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    stop = s.call("TaskStop", {"task_id": tid})
    assert not stop.is_error and stop.data["wasRunning"] is True, stop.text
    text = open(output).read()
    assert "partial" in text and "[killed]" in text, text


def test_old_and_new_names_share_the_task(shell):
    s = shell.session()
    tid = start(s, "printf 'one\\n'; sleep 0.3; printf 'two\\n'")
    s.call("TaskOutput", {"task_id": tid})
    again = s.call("BashOutput", {"bash_id": tid})  # output already read through the new name
    assert "two" not in again.data["stdout"] and again.data["status"] == "completed"
    assert s.call("KillShell", {"shell_id": tid}).data["wasRunning"] is False
    stopped = s.call("TaskStop", {"shell_id": tid})  # the deprecated field; as Claude Code, an ended task is an error
    assert stopped.is_error and stopped.text == f"<tool_use_error>No task found with ID: {tid}</tool_use_error>"


@pytest.mark.parametrize("inp,message", [
    ({}, "<tool_use_error>Missing required parameter: task_id</tool_use_error>"),
    ({"task_id": "bash_99"}, "<tool_use_error>No task found with ID: bash_99</tool_use_error>"),
])
def test_task_stop_bad_input(shell, inp, message):
    r = shell.session().call("TaskStop", inp)
    assert r.is_error and message in r.text


@pytest.mark.parametrize("inp,message", [
    ({"task_id": "bash_1", "timeout": -1}, "timeout"),
    ({"task_id": "bash_1", "timeout": 600_001}, "timeout"),
    ({"block": True}, "task_id"),
])
def test_task_output_bad_input(shell, inp, message):
    r = shell.session().call("TaskOutput", inp)
    assert r.is_error and message in r.text


async def test_a_blocking_wait_is_cancellable(shell):
    s = shell.session()
    tid = start(s, "sleep 30")
    call = asyncio.ensure_future(s.acall("TaskOutput", {"task_id": tid, "timeout": 600_000}))
    await asyncio.sleep(0.3)
    began = time.monotonic()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert time.monotonic() - began < 5
    assert s.tasks()[0]["status"] == "running"  # cancelling the wait does not stop the task
