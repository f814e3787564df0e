"""`codebelt serve --http`: every MCP client session has a Session of its own. Two real SDK clients
against a real server process: B cannot see A's background task, read records or working
directory, and when A's MCP session ends its tasks are killed."""

from __future__ import annotations

import random
import time

import anyio
import pytest

from .helpers import connect, http_server, processes_with

pytestmark = pytest.mark.timeout(120)


def _text(result) -> str:
    return result.content[0].text


async def test_clients_do_not_share_a_session(project):
    marker = f"1000.{random.randrange(10**8):08d}"
    with http_server(project) as url:
        async with connect("http", "legacy", project, url) as a, connect("http", "legacy", project, url) as b:
            started = await a.call_tool("Bash", {"command": f"sleep {marker}", "run_in_background": True})
            task_id = started.structured_content["backgroundTaskId"]
            assert processes_with(marker)
            assert not (await a.call_tool("Read", {"file_path": "notes.txt"})).is_error
            assert not (await a.call_tool("Bash", {"command": "cd src"})).is_error

            # B sees none of it: not the task, not the read, not the directory.
            r = await b.call_tool("BashOutput", {"bash_id": task_id})
            assert r.is_error and "Known shell ids: none" in _text(r)
            r = await b.call_tool("KillShell", {"shell_id": task_id})
            assert r.is_error and processes_with(marker)
            r = await b.call_tool("Edit", {"file_path": "notes.txt", "old_string": "first line", "new_string": "1st"})
            assert r.is_error and "Read" in _text(r) and (project.root / "notes.txt").read_text().startswith("first")
            assert (await b.call_tool("Bash", {"command": "pwd"})).structured_content["stdout"].strip() == str(project.root)

            # A still has all of it.
            assert (await a.call_tool("BashOutput", {"bash_id": task_id})).structured_content["status"] == "running"
            assert (await a.call_tool("Bash", {"command": "pwd"})).structured_content["stdout"].strip() == str(project.root / "src")
            ids = [(await b.call_tool("Bash", {"command": "sleep 0.1", "run_in_background": True}))
                   .structured_content["backgroundTaskId"]]
            assert ids == ["bash_1"]  # B's own numbering

        # Both clients have ended their MCP sessions (DELETE): A's task went with A's Session.
        deadline = time.monotonic() + 30
        while processes_with(marker) and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        assert not processes_with(marker)


async def test_a_session_ends_with_its_client_while_others_go_on(project):
    marker = f"1000.{random.randrange(10**8):08d}"
    with http_server(project) as url:
        async with connect("http", "legacy", project, url) as b:
            async with connect("http", "legacy", project, url) as a:
                await a.call_tool("Bash", {"command": f"sleep {marker}", "run_in_background": True})
                assert processes_with(marker)
            deadline = time.monotonic() + 30
            while processes_with(marker) and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            assert not processes_with(marker)  # A left: its task was killed …
            r = await b.call_tool("Read", {"file_path": "notes.txt", "limit": 1})
            assert not r.is_error and "first line" in _text(r)  # … and B carries on


def test_an_idle_session_is_closed_with_its_tasks(project):
    from .test_http_sessions import open_session, post

    marker = f"1000.{random.randrange(10**8):08d}"
    with http_server(project, "--session-idle-timeout", "1") as url:
        # A client that never says goodbye: its MCP session ends by the idle timeout.
        status, sid = open_session(url)
        assert status == 200 and sid
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "Bash", "arguments": {"command": f"sleep {marker}", "run_in_background": True}}}
        assert post(url, call, sid)[0] == 200
        assert processes_with(marker)
        deadline = time.monotonic() + 30
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not processes_with(marker)
