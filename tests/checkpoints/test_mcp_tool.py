"""The Checkpoints tool over MCP (a real `codebelt serve` and the SDK's client), listed only when
the user's settings turn it on."""

from __future__ import annotations

import json

import pytest

from tests.mcp.helpers import SETTINGS, connect, make_project

pytestmark = pytest.mark.timeout(120)


async def test_a_client_lists_and_rewinds_checkpoints_when_the_user_enables_the_tool(tmp_path):
    project = make_project(tmp_path)
    project.settings.write_text(json.dumps({**SETTINGS, "checkpoints": {"modelTool": True}}))
    async with connect("stdio", "legacy", project) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "Checkpoints" in names
        made = await client.call_tool("Write", {"file_path": "made.txt", "content": "x\n"})
        assert not made.is_error
        listed = await client.call_tool("Checkpoints", {"action": "list"})
        assert "made.txt" in listed.content[0].text
        undone = await client.call_tool("Checkpoints", {"action": "undo"})
        assert not undone.is_error, undone.content[0].text
    assert not (project.root / "made.txt").exists()


async def test_not_listed_by_default(tmp_path):
    project = make_project(tmp_path)
    async with connect("stdio", "legacy", project) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert "Checkpoints" not in names and "Write" in names
