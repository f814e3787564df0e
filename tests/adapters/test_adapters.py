"""OpenAI and Anthropic adapters: definition shapes, running calls, bad arguments, images."""

from __future__ import annotations

import base64
import io
import json
import sys
from types import SimpleNamespace

import pytest

from codebelt import Image, ToolResult
from codebelt.adapters import (
    anthropic_result,
    anthropic_tools,
    arun_tool_calls,
    arun_tool_uses,
    openai_tools,
    run_tool_calls,
    run_tool_uses,
)


def png_b64() -> bytes:
    from PIL import Image as PILImage

    buf = io.BytesIO()
    PILImage.new("RGB", (4, 3), (0, 128, 255)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def session(make_session, ws):
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("def main():\n    return 'needle'\n")
    (ws / "pic.png").write_bytes(png_b64())
    return make_session(ws, settings={"permissions": {"allow": ["Bash(echo *)"]}})


def test_import_is_lazy():
    import subprocess

    code = "import codebelt.adapters, sys; print(any(m.startswith(('mcp', 'codebelt.adapters.')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_openai_chat_definitions(session):
    tools = openai_tools(session)
    specs = {s["name"]: s for s in session.tool_specs()}
    assert [t["function"]["name"] for t in tools] == list(specs)
    for t in tools:
        assert set(t) == {"type", "function"} and t["type"] == "function"
        fn = t["function"]
        assert set(fn) == {"name", "description", "parameters"}
        assert fn["parameters"] == specs[fn["name"]]["input_schema"]
        assert fn["parameters"]["type"] == "object"
        json.dumps(t)  # plain JSON, nothing else


def test_openai_responses_definitions(session):
    tools = openai_tools(session, api="responses")
    specs = {s["name"]: s for s in session.tool_specs()}
    for t in tools:
        assert set(t) == {"type", "name", "description", "parameters", "strict"}
        assert t["type"] == "function" and t["strict"] is False
        assert t["parameters"] == specs[t["name"]]["input_schema"]
    with pytest.raises(ValueError):
        openai_tools(session, api="completions")


def test_anthropic_definitions(session):
    tools = anthropic_tools(session)
    specs = {s["name"]: s for s in session.tool_specs()}
    assert [t["name"] for t in tools] == list(specs)
    for t in tools:
        assert set(t) == {"name", "description", "input_schema"}
        assert t["input_schema"] == specs[t["name"]]["input_schema"]


def chat_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# (call id, tool, arguments as the model sent them, substring expected in the tool message)
CHAT_CALLS = [
    ("c1", "Grep", json.dumps({"pattern": "needle", "output_mode": "content"}), "src/app.py"),
    ("c2", "Glob", json.dumps({"pattern": "**/*.py"}), "src/app.py"),
    ("c3", "Read", '{"file_path": "notes.txt"', "not valid JSON"),
    ("c4", "Read", "[1, 2]", "must be a JSON object"),
    ("c5", "NoSuchTool", "{}", "No such tool available: NoSuchTool"),
    ("c6", "Bash", json.dumps({"command": "echo from-bash"}), "from-bash"),
    ("c7", "Read", {"file_path": "notes.txt"}, "beta"),  # already-parsed arguments are fine too
    ("c8", "Glob", "", "pattern"),  # empty arguments → {} → the schema error names the field
]


def test_run_chat_tool_calls_in_order(session):
    calls = [chat_call(i, n, a) for i, n, a, _ in CHAT_CALLS]
    messages = run_tool_calls(session, calls)
    assert [m["tool_call_id"] for m in messages] == [i for i, *_ in CHAT_CALLS]
    for m, (call_id, _, _, needle) in zip(messages, CHAT_CALLS):
        assert m["role"] == "tool" and isinstance(m["content"], str)
        assert needle in m["content"], (call_id, m["content"])


def test_chat_accepts_the_assistant_message_and_sdk_objects(session):
    obj = SimpleNamespace(
        id="x1", type="function",
        function=SimpleNamespace(name="Grep", arguments=json.dumps({"pattern": "needle"})),
    )
    message = SimpleNamespace(role="assistant", content=None, tool_calls=[obj])
    out = run_tool_calls(session, message)
    assert out == [{"role": "tool", "tool_call_id": "x1", "content": out[0]["content"]}]
    assert "src/app.py" in out[0]["content"]
    assert run_tool_calls(session, {"role": "assistant", "tool_calls": [chat_call("x2", "Glob", '{"pattern": "*.txt"}')]})[0][
        "tool_call_id"
    ] == "x2"


def test_responses_function_calls(session):
    output = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "Grep",
         "arguments": json.dumps({"pattern": "needle", "output_mode": "files_with_matches"})},
        {"type": "message", "role": "assistant", "content": []},
        {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "Glob", "arguments": "{oops"},
    ]
    items = run_tool_calls(session, output)
    assert [i["call_id"] for i in items] == ["call_a", "call_b"]
    assert all(set(i) == {"type", "call_id", "output"} and i["type"] == "function_call_output" for i in items)
    assert "src/app.py" in items[0]["output"]
    assert "not valid JSON" in items[1]["output"]
    # A Responses `response` object is accepted too.
    assert run_tool_calls(session, SimpleNamespace(output=output[:2]))[0]["call_id"] == "call_a"


def test_image_results(session):
    chat = run_tool_calls(session, [chat_call("img", "Read", json.dumps({"file_path": "pic.png"}))])
    assert chat[0]["role"] == "tool" and "image" in chat[0]["content"]
    follow = chat[1]
    assert follow["role"] == "user"
    urls = [p["image_url"]["url"] for p in follow["content"] if p["type"] == "image_url"]
    assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,")
    assert base64.b64decode(urls[0].split(",", 1)[1]).startswith(b"\x89PNG")

    resp = run_tool_calls(session, [{"type": "function_call", "call_id": "r1", "name": "Read",
                                     "arguments": json.dumps({"file_path": "pic.png"})}])
    parts = resp[0]["output"]
    assert [p["type"] for p in parts if p["type"] == "input_image"] == ["input_image"]

    blocks = run_tool_uses(session, [{"type": "tool_use", "id": "tu1", "name": "Read", "input": {"file_path": "pic.png"}}])
    images = [b for b in blocks[0]["content"] if b["type"] == "image"]
    assert len(images) == 1 and images[0]["source"]["type"] == "base64"
    assert images[0]["source"]["media_type"] == "image/png"
    assert base64.b64decode(images[0]["source"]["data"]).startswith(b"\x89PNG")


# (result, tool_use_id, expected block)
RESULT_BLOCKS = [
    (ToolResult("ok"), "t1",
     {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}], "is_error": False}),
    (ToolResult.error("boom, do X next"), "t2",
     {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "boom, do X next"}],
      "is_error": True}),
    (ToolResult("see image", images=[Image("QUJD", "image/png")]), None,
     {"type": "tool_result", "is_error": False, "content": [
         {"type": "text", "text": "see image"},
         {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}]}),
    (ToolResult("", images=[Image("QUJD", "image/jpeg")]), "t4",
     {"type": "tool_result", "tool_use_id": "t4", "is_error": False, "content": [
         {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "QUJD"}}]}),
]


@pytest.mark.parametrize("result,tool_use_id,expected", RESULT_BLOCKS)
def test_anthropic_result_blocks(result, tool_use_id, expected):
    assert anthropic_result(result, tool_use_id) == expected


def test_run_tool_uses(session):
    content = [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "a", "name": "Grep", "input": {"pattern": "needle"}},
        SimpleNamespace(type="tool_use", id="b", name="Glob", input={"pattern": "*.txt"}),
        {"type": "tool_use", "id": "c", "name": "Grep", "input": "not an object"},
        {"type": "tool_use", "id": "d", "name": "Grep", "input": {"pattern": "x", "bogus": 1}},
    ]
    blocks = run_tool_uses(session, {"role": "assistant", "content": content})
    assert [b["tool_use_id"] for b in blocks] == ["a", "b", "c", "d"]
    assert [b["is_error"] for b in blocks] == [False, False, True, True]
    assert "src/app.py" in blocks[0]["content"][0]["text"]
    assert "notes.txt" in blocks[1]["content"][0]["text"]
    assert "JSON object" in blocks[2]["content"][0]["text"]
    assert "bogus" in blocks[3]["content"][0]["text"]


async def test_async_variants_and_sync_inside_a_loop(session):
    calls = [chat_call("a", "Glob", '{"pattern": "*.txt"}')]
    assert (await arun_tool_calls(session, calls))[0]["tool_call_id"] == "a"
    uses = [{"type": "tool_use", "id": "u", "name": "Glob", "input": {"pattern": "*.txt"}}]
    assert (await arun_tool_uses(session, uses))[0]["tool_use_id"] == "u"
    with pytest.raises(RuntimeError, match="arun_tool_calls"):
        run_tool_calls(session, calls)


async def test_parallel_batch_keeps_order(session, ws):
    for i in range(30):
        (ws / f"f{i:02d}.txt").write_text(f"marker-{i:02d}\n")
    calls = [chat_call(f"id{i}", "Grep", json.dumps({"pattern": f"marker-{i:02d}", "output_mode": "content"}))
             for i in range(30)]
    out = await arun_tool_calls(session, calls)
    assert [m["tool_call_id"] for m in out] == [f"id{i}" for i in range(30)]
    for i, m in enumerate(out):
        assert f"f{i:02d}.txt" in m["content"] and f"marker-{i:02d}" in m["content"]
