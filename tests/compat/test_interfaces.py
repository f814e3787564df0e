"""The library, both adapters, the MCP server and the CLI show a model the same texts: the ones
rendered from the session's compat profile (Claude Code's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.adapters import run_tool_calls, run_tool_uses

CODEBELT = str(Path(sys.executable).with_name("codebelt"))

CALLS = [
    ("Read", {"file_path": "a.txt"}),
    ("Edit", {"file_path": "b.txt", "old_string": "one", "new_string": "two"}),
    ("Read", {"file_path": "b.txt"}),
    ("Edit", {"file_path": "b.txt", "old_string": "one", "new_string": "two"}),
    ("Edit", {"file_path": "b.txt", "old_string": "missing", "new_string": "x"}),
    ("Write", {"file_path": "c.txt", "content": "new\n"}),
    ("Bash", {"command": "echo out; exit 3"}),
    ("Bash", {"command": "true"}),
    ("Grep", {"pattern": "hello", "output_mode": "content"}),
    ("Glob", {"pattern": "*.txt", "path": "nowhere"}),
    ("Read", {"file_path": "a.txt", "offset": "abc"}),
    ("Read", {"file_path": "empty.txt"}),
    ("NoSuchTool", {}),
]
EXPECTED = {  # a few, spelled out: these are Claude Code's texts
    0: ("1\thello\n2\tworld\n3\t", False),
    1: ("<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>", True),
    3: ("The file b.txt has been updated successfully. (file state is current in your context — no need to Read "
        "it back)", False),
    5: ("File created successfully at: c.txt (file state is current in your context — no need to Read it back)",
        False),
    6: ("Exit code 3\nout", True),
    7: ("(Bash completed with no output)", False),
    10: ("<tool_use_error>InputValidationError: Read failed due to the following issue:\nThe parameter `offset` "
         "type is expected as `number` but provided as `string`</tool_use_error>", True),
    11: ("<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>", False),
    12: ("<tool_use_error>Error: No such tool available: NoSuchTool</tool_use_error>", True),
}


def workspace(base: Path) -> Path:
    ws = base / "ws"
    ws.mkdir(parents=True)
    (ws / "a.txt").write_text("hello\nworld\n")
    (ws / "b.txt").write_text("one\n")
    (ws / "empty.txt").write_text("")
    return ws


def session(ws: Path) -> Session:
    return Session(root=ws, mode="bypassPermissions", sandbox="off", audit=False, load_user_settings=False,
                   settings={"lsp": {"autoDetect": False}})


def same(results: list[tuple[str, bool]], ws: Path) -> list[tuple[str, bool]]:
    """Each interface ran in its own workspace: its path is the one thing that differs."""
    return [(text.replace(str(ws), "$WS"), err) for text, err in results]


def by_library(ws: Path) -> list[tuple[str, bool]]:
    with session(ws) as s:
        return same([(r.text, r.is_error) for r in (s.call(t, i) for t, i in CALLS)], ws)


def by_anthropic(ws: Path) -> list[tuple[str, bool]]:
    out = []
    with session(ws) as s:
        for n, (tool, data) in enumerate(CALLS):
            [block] = run_tool_uses(s, [{"type": "tool_use", "id": f"t{n}", "name": tool, "input": data}])
            out.append(("".join(b["text"] for b in block["content"] if b["type"] == "text"), block["is_error"]))
    return same(out, ws)


def by_openai(ws: Path) -> list[tuple[str, bool]]:
    out = []
    with session(ws) as s:
        for n, (tool, data) in enumerate(CALLS):
            call = {"id": f"c{n}", "type": "function", "function": {"name": tool, "arguments": json.dumps(data)}}
            [message] = run_tool_calls(s, [call])
            out.append((message["content"], None))  # Chat tool messages have no error flag
    return same(out, ws)


def by_cli(ws: Path, tmp: Path) -> list[tuple[str, bool]]:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config"),
           "CODEBELT_AUDIT_DB": str(tmp / "audit.db")}
    out = []
    for tool, data in CALLS:
        p = subprocess.run([CODEBELT, "call", tool, json.dumps(data), "--root", str(ws), "--mode", "bypassPermissions",
                            "--sandbox", "off", "--json"], capture_output=True, text=True, timeout=60, env=env)
        if p.returncode == 2:  # a usage error: the CLI says it on stderr
            out.append((p.stderr.strip(), True))
            continue
        result = json.loads(p.stdout)
        out.append((result["text"], result["is_error"]))
    return same(out, ws)


async def by_mcp(ws: Path, tmp: Path) -> list[tuple[str, bool]]:
    from mcp import Client, types
    from mcp.client.stdio import StdioServerParameters

    env = {"XDG_CONFIG_HOME": str(tmp / "config"), "XDG_STATE_HOME": str(tmp / "state"),
           "CODEBELT_AUDIT_DB": str(tmp / "audit.db")}
    server = StdioServerParameters(command=CODEBELT, args=["serve", "--root", str(ws), "--mode", "bypassPermissions",
                                                           "--sandbox", "off"], env=env)
    out = []
    async with Client(server) as client:
        for tool, data in CALLS:
            try:
                r = await client.call_tool(tool, data)
            except Exception as e:  # noqa: BLE001 - an unknown tool is a protocol error in MCP
                out.append((str(e), True))
                continue
            out.append(("".join(c.text for c in r.content if isinstance(c, types.TextContent)), bool(r.is_error)))
    return same(out, ws)


def test_the_library_speaks_claude_codes_texts(tmp_path):
    got = by_library(workspace(tmp_path))
    for i, expected in EXPECTED.items():
        assert got[i] == expected, CALLS[i]


def test_adapters_and_cli_show_the_library_texts(tmp_path):
    want = by_library(workspace(tmp_path / "lib"))
    assert by_anthropic(workspace(tmp_path / "anthropic")) == want
    assert [t for t, _ in by_openai(workspace(tmp_path / "openai"))] == [t for t, _ in want]
    cli = by_cli(workspace(tmp_path / "cli"), tmp_path)
    assert cli[:-1] == want[:-1]
    assert "NoSuchTool" in cli[-1][0]  # the CLI refuses an unknown tool before any session


@pytest.mark.anyio
async def test_the_mcp_server_shows_the_library_texts(tmp_path):
    want = by_library(workspace(tmp_path / "lib"))
    got = await by_mcp(workspace(tmp_path / "mcp"), tmp_path)
    assert got[:-1] == want[:-1]
    assert got[-1][1] is True and "NoSuchTool" in got[-1][0]
