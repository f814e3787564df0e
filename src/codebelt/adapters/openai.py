"""OpenAI adapter: function-tool definitions and tool-call execution, as plain dicts.

Chat Completions:
    tools = openai_tools(session)                       # [{"type": "function", "function": {...}}]
    msg = completion.choices[0].message
    messages += [msg, *run_tool_calls(session, msg.tool_calls)]

Responses API:
    tools = openai_tools(session, api="responses")      # [{"type": "function", "name": ..., ...}]
    input_items += run_tool_calls(session, response.output)   # function_call_output items

A freeform tool (the codex profile's apply_patch) is a Responses `custom` tool with its grammar;
its `custom_tool_call` items run with their raw `input` and get `custom_tool_call_output` items.
In Chat Completions, which has no custom tools, it is a function with one `input` string.

No OpenAI SDK is imported: calls may be dicts or the SDK's objects (read by attribute).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from ._common import as_list, field, parse_arguments, run_batch, run_sync

if TYPE_CHECKING:
    from ..session import Session
    from ..tool import ToolResult

Api = Literal["chat", "responses"]


def openai_tools(session: "Session", api: Api = "chat") -> list[dict[str, Any]]:
    """Every tool of the session as an OpenAI function tool for `api` ("chat" or "responses")."""
    if api not in ("chat", "responses"):
        raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")
    out = []
    for spec in session.tool_specs():
        if api == "chat":
            out.append({
                "type": "function",
                "function": {
                    "name": spec["name"],
                    "description": spec.get("function_description") or spec["description"],
                    "parameters": spec["input_schema"],
                },
            })
        elif spec.get("freeform"):
            # a freeform tool (Codex's apply_patch): the model writes the raw text, in this format
            out.append({"type": "custom", "name": spec["name"], "description": spec["description"],
                        "format": spec["freeform"]})
        else:
            # strict=False: codebelt's schemas have optional fields, which strict mode forbids.
            out.append({
                "type": "function",
                "name": spec["name"],
                "description": spec["description"],
                "parameters": spec["input_schema"],
                "strict": False,
            })
    return out


def _calls(tool_calls: Any) -> list[tuple[str, Any]]:
    """Normalise the input to (kind, item) pairs: kind "chat" or "responses".

    Accepts a list of chat `tool_calls`, an assistant message holding them, a Responses `output`
    list (items other than `function_call` — reasoning, messages — are skipped) or the response.
    """
    if isinstance(tool_calls, dict) and "tool_calls" in tool_calls:
        tool_calls = tool_calls["tool_calls"]
    elif not isinstance(tool_calls, (list, tuple, dict)) and field(tool_calls, "tool_calls") is not None:
        tool_calls = field(tool_calls, "tool_calls")
    elif not isinstance(tool_calls, (list, tuple, dict)) and field(tool_calls, "output") is not None:
        tool_calls = field(tool_calls, "output")
    out = []
    for item in as_list(tool_calls):
        if field(item, "function") is not None:
            out.append(("chat", item))
        elif field(item, "type") == "function_call":
            out.append(("responses", item))
        elif field(item, "type") == "custom_tool_call":
            out.append(("custom", item))
    return out


def _data_url(image: Any) -> str:
    return f"data:{image.mime_type};base64,{image.data}"


def _with_documents(result: "ToolResult") -> str:
    """The text, and the text of each document (OpenAI's tool outputs take no PDF)."""
    return "\n\n".join([result.text, *(d.text for d in result.documents)]) if result.documents else result.text


def _chat_message(call_id: str, result: "ToolResult") -> dict[str, Any]:
    text = _with_documents(result)
    if result.images:
        # Chat tool messages carry text only; the images follow in one user message.
        text += f"\n[{len(result.images)} image(s) attached in the next message]"
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _responses_item(call_id: str, result: "ToolResult") -> dict[str, Any]:
    output: Any = _with_documents(result)
    if result.images:
        output = ([{"type": "input_text", "text": output}] if output else []) + [
            {"type": "input_image", "image_url": _data_url(i), **({"detail": i.detail} if i.detail else {})}
            for i in result.images
        ]
    return {"type": "function_call_output", "call_id": call_id, "output": output}


async def arun_tool_calls(session: "Session", tool_calls: Any) -> list[dict[str, Any]]:
    """Run a model's tool calls; returns the messages/items to append to the conversation.

    Concurrency-safe calls (reads, searches, read-only commands) run in parallel, the rest one at
    a time in the model's order. Arguments that are not a JSON object become an error result for
    that call only. Chat calls give `{"role": "tool", ...}` messages (plus one user message with
    any images, after all tool messages); Responses `function_call` items give
    `function_call_output` items.
    """
    calls = _calls(tool_calls)
    batch = []
    for kind, item in calls:
        fn = field(item, "function") if kind == "chat" else item
        name = str(field(fn, "name", "") or "")
        if kind == "custom":  # a freeform tool's raw text is its one `input` argument
            args, err = {"input": str(field(item, "input", "") or "")}, None
        else:
            args, err = parse_arguments(field(fn, "arguments"), name or "the tool")
        batch.append((name, args, err))
    results = await run_batch(session, batch)

    out: list[dict[str, Any]] = []
    chat_images: list[dict[str, Any]] = []
    for (kind, item), result in zip(calls, results):
        if kind == "chat":
            call_id = str(field(item, "id", ""))
            out.append(_chat_message(call_id, result))
            if result.images:
                chat_images.append({"type": "text", "text": f"Image(s) from tool call {call_id}:"})
                chat_images += [{"type": "image_url", "image_url": {"url": _data_url(i)}} for i in result.images]
        elif kind == "custom":
            out.append({**_responses_item(str(field(item, "call_id", "")), result), "type": "custom_tool_call_output"})
        else:
            out.append(_responses_item(str(field(item, "call_id", "")), result))
    if chat_images:
        out.append({"role": "user", "content": chat_images})
    return out


def run_tool_calls(session: "Session", tool_calls: Any) -> list[dict[str, Any]]:
    """Synchronous `arun_tool_calls` (not from inside a running event loop)."""
    return run_sync(arun_tool_calls, session, tool_calls)
