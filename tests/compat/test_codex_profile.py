"""The codex profile is a face, not a fork: the same permission rules, modes, sandbox, hooks and
audit decide and record its calls; MCP clients and both OpenAI API shapes see its tools."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest

from codebelt.adapters import openai_tools, run_tool_calls


def codex(make_session, **kwargs):
    kwargs.setdefault("sandbox", "off")
    return make_session(profile="codex", **kwargs)


def test_bash_rules_decide_exec_command(make_session, ws):
    s = codex(make_session, mode="bypassPermissions",
              settings={"permissions": {"deny": ["Bash(curl *)", "Edit(secret.txt)", "Read(private.png)"]}})
    r = s.call("exec_command", {"cmd": "echo ok && curl -s http://127.0.0.1:9"})
    assert r.is_error and "denied" in r.text and "Bash(curl *)" in r.text
    r = s.call("apply_patch", {"input": "*** Begin Patch\n*** Add File: secret.txt\n+x\n*** End Patch"})
    assert r.is_error and "Edit(secret.txt)" in r.text and not (ws / "secret.txt").exists()
    r = s.call("exec_command", {"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: secret.txt\n+x\n*** End Patch\nEOF"})
    assert r.is_error and not (ws / "secret.txt").exists()
    (ws / "private.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    r = s.call("view_image", {"path": "private.png"})
    assert r.is_error and "Read(private.png)" in r.text


def test_a_bare_bash_deny_covers_the_exec_tools(make_session):
    s = codex(make_session, mode="bypassPermissions", settings={"permissions": {"deny": ["Bash"]}})
    assert s.call("exec_command", {"cmd": "echo hi"}).is_error
    assert s.call("write_stdin", {"session_id": 1234, "chars": ""}).is_error


def test_default_mode_asks_and_an_approver_decides(make_session, ws):
    asked = []
    s = codex(make_session, approver=lambda req: asked.append(req.tool) or False)
    r = s.call("exec_command", {"cmd": "touch made.txt"})
    assert r.is_error and asked == ["exec_command"] and not (ws / "made.txt").exists()
    r = s.call("exec_command", {"cmd": "ls"})  # read-only: runs unasked (in the jail where there is one)
    assert not r.is_error and asked == ["exec_command"], r.text


def test_hooks_and_audit_see_codex_calls(make_session, ws, audit_db):
    s = codex(make_session, mode="bypassPermissions")
    seen = []
    s.add_hook("PreToolUse", lambda payload: seen.append(payload["tool_name"]) or None)
    s.call("exec_command", {"cmd": "echo audited"})
    s.call("update_plan", {"plan": [{"step": "x", "status": "pending"}]})
    s.close()
    assert seen == ["Bash", "update_plan"]  # exec_command shows itself to hooks as Codex does: as Bash
    rows = sqlite3.connect(audit_db).execute("SELECT tool, input FROM calls ORDER BY rowid").fetchall()
    assert [r[0] for r in rows][-2:] == ["exec_command", "update_plan"] and "echo audited" in rows[-2][1]


def test_every_write_stdin_is_audited(make_session, audit_db):
    s = codex(make_session, mode="bypassPermissions")
    sid = s.call("exec_command", {"cmd": "cat", "tty": True, "yield_time_ms": 300}).data["session_id"]
    s.call("write_stdin", {"session_id": sid, "chars": "typed line\n"})
    s.close()
    rows = sqlite3.connect(audit_db).execute("SELECT tool, input FROM calls WHERE tool = 'write_stdin'").fetchall()
    assert rows and "typed line" in rows[0][1]


def test_the_cli_offers_the_profile(ws):
    import subprocess

    out = subprocess.run([sys.executable, "-m", "codebelt.cli", "tools", "--root", str(ws), "--profile", "codex",
                          "--format", "json"], capture_output=True, text=True, timeout=120, check=True).stdout
    names = {t["name"] for t in json.loads(out)}
    assert names == {"exec_command", "write_stdin", "apply_patch", "view_image", "update_plan"}


def test_both_openai_shapes(make_session):
    s = codex(make_session, mode="bypassPermissions")
    chat = {t["function"]["name"]: t for t in openai_tools(s)}
    assert set(chat) == {"exec_command", "write_stdin", "apply_patch", "view_image", "update_plan"}
    assert chat["apply_patch"]["function"]["parameters"]["required"] == ["input"]
    assert "FREEFORM" not in chat["apply_patch"]["function"]["description"]
    responses = {t["name"]: t for t in openai_tools(s, api="responses")}
    assert responses["apply_patch"]["type"] == "custom" and responses["apply_patch"]["format"]["syntax"] == "lark"
    out = run_tool_calls(s, [{"id": "c1", "type": "function", "function": {
        "name": "apply_patch", "arguments": json.dumps({"input": "*** Begin Patch\n*** Add File: c.txt\n+c\n*** End Patch"})}}])
    assert out[0]["role"] == "tool" and "A c.txt" in out[0]["content"]
    out = run_tool_calls(s, [{"type": "custom_tool_call", "call_id": "r1", "name": "apply_patch",
                              "input": "*** Begin Patch\n*** Add File: r.txt\n+r\n*** End Patch"}])
    assert out[0]["type"] == "custom_tool_call_output" and "A r.txt" in out[0]["output"]


def test_nothing_left_after_close(make_session):
    from tests.shell_run.conftest import wait_gone

    s = codex(make_session, mode="bypassPermissions")
    r = s.call("exec_command", {"cmd": "python3 -i -q", "tty": True, "yield_time_ms": 5000})
    assert "session ID" in r.text
    s.call("exec_command", {"cmd": "sleep 300", "yield_time_ms": 250})
    s.close()
    assert not wait_gone([], [f"{s.id}"])


@pytest.mark.timeout(120)
async def test_mcp_clients_see_the_profile(ws):
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "codebelt.cli", "serve", "--root", str(ws), "--profile", "codex", "--sandbox", "off",
        "--mode", "bypassPermissions"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"exec_command", "write_stdin", "apply_patch", "view_image", "update_plan"}
        r = await client.call_tool("exec_command", {"cmd": "python3 -i -q", "tty": True, "yield_time_ms": 5000})
        text = r.content[0].text
        session_id = int(text.split("session ID ")[1].split("\n")[0])
        r = await client.call_tool("write_stdin", {"session_id": session_id, "chars": "6 * 7\n"})
        assert "42" in r.content[0].text
        r = await client.call_tool("apply_patch", {"input": "*** Begin Patch\n*** Add File: m.txt\n+m\n*** End Patch"})
        assert "A m.txt" in r.content[0].text and (ws / "m.txt").read_text() == "m\n"
