"""Compat profiles: each one loads, says which release it follows, and a session of an older
release's profile speaks that release through every interface (library, MCP server, CLI) — its
tool set, Read's rows, its texts. What each text is, case by case, is test_claude_code's job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.files.lines import row_format
from codebelt.texts import load, profiles
from codebelt.tools import INDEX

CODEBELT = str(Path(sys.executable).with_name("codebelt"))
OLD = "claude-code-1.0"


@pytest.mark.parametrize("name", profiles())
def test_every_profile_loads_and_leaves_out_only_real_tools(name):
    texts = load(name)
    assert texts.value("profile.release")
    assert set(texts.value("profile.without", [])) <= set(INDEX)


def test_rows_of_the_older_profile_pad_the_number_and_use_an_arrow():
    row = row_format(load(OLD).template("Read.row"))
    assert row("7", "x") == "     7→x"
    assert row("123456", "x") == "123456→x"  # six digits and more: no padding
    assert row("1234567", "") == "1234567→"
    assert row("12.1", "rest") == "  12.1→rest"  # a continuation row of a long line
    assert row_format(load("claude-code").template("Read.row"))("7", "x") == "7\tx"


def _session(ws: Path, profile: str) -> Session:
    return Session(root=ws, mode="bypassPermissions", sandbox="off", audit=False, load_user_settings=False,
                   settings={"lsp": {"autoDetect": False}, "compat": {"profile": profile}})


def test_an_older_release_has_no_tools_of_later_ones(tmp_path):
    with _session(tmp_path, OLD) as s:
        assert "TaskStop" not in s.tools and "TaskOutput" not in s.tools
        assert {"BashOutput", "KillShell", "MultiEdit", "Read"} <= set(s.tools)
        assert "TaskStop" not in {spec["name"] for spec in s.tool_specs()}
        r = s.call("TaskStop", {"task_id": "x"})
        assert r.is_error and r.text == "<tool_use_error>Error: No such tool available: TaskStop</tool_use_error>"
    with _session(tmp_path, "claude-code") as s:
        assert "TaskStop" in s.tools


def test_the_older_profile_through_the_library_cli_and_mcp(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\nworld\n")
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"compat": {"profile": OLD}}))
    with _session(ws, OLD) as s:
        lib = s.call("Read", {"file_path": "a.txt"}).text
        assert lib.startswith("     1→hello\n     2→world\n     3→\n\n<system-reminder>\nWhenever you read a file")
        edited = s.call("Edit", {"file_path": "a.txt", "old_string": "world", "new_string": "there"}).text
        assert edited == ("The file a.txt has been updated. Here's the result of running `cat -n` on a snippet of "
                          "the edited file:\n     1→hello\n     2→there\n     3→")  # Claude Code's split shows the empty last line
    (ws / "a.txt").write_text("hello\nworld\n")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "CODEBELT_AUDIT_DB": str(tmp_path / "audit.db")}
    p = subprocess.run([CODEBELT, "call", "Read", json.dumps({"file_path": "a.txt"}), "--root", str(ws),
                        "--mode", "bypassPermissions", "--sandbox", "off", "--settings", str(settings), "--json"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert json.loads(p.stdout)["text"] == lib, p.stderr


@pytest.mark.anyio
async def test_the_mcp_server_of_the_older_profile(tmp_path):
    from mcp import Client, types
    from mcp.client.stdio import StdioServerParameters

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"compat": {"profile": OLD}}))
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "CODEBELT_AUDIT_DB": str(tmp_path / "audit.db")}
    server = StdioServerParameters(command=CODEBELT, args=["serve", "--root", str(ws), "--mode", "bypassPermissions",
                                                           "--sandbox", "off", "--settings", str(settings)], env=env)
    async with Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "BashOutput" in names and "TaskStop" not in names
        r = await client.call_tool("Read", {"file_path": "a.txt"})
        text = "".join(c.text for c in r.content if isinstance(c, types.TextContent))
        assert text.startswith("     1→hello\n     2→\n\n<system-reminder>")
