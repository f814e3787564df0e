"""Anthropic Messages API adapter: tool definitions and `tool_result` blocks, as plain dicts.

    tools = anthropic_tools(session)
    reply = client.messages.create(model=..., tools=tools, messages=messages)
    messages += [{"role": "assistant", "content": reply.content},
                 {"role": "user", "content": run_tool_uses(session, reply.content)}]

No Anthropic SDK is imported: content blocks may be dicts or the SDK's objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._common import as_list, field, run_batch, run_sync

if TYPE_CHECKING:
    from ..session import Session
    from ..tool import ToolResult


def anthropic_tools(session: "Session") -> list[dict[str, Any]]:
    """Every tool of the session as a Messages API tool: {name, description, input_schema}."""
    return [
        {"name": s["name"], "description": s["description"], "input_schema": s["input_schema"]}
        for s in session.tool_specs()
    ]


def anthropic_result(result: "ToolResult", tool_use_id: str | None = None) -> dict[str, Any]:
    """A `tool_result` block: the text, then each image and document as a base64 block; `is_error`."""
    content: list[dict[str, Any]] = []
    if result.text:  # the API refuses empty text blocks
        content.append({"type": "text", "text": result.text})
    for image in result.images:
        content.append({
            "type": "image",
            "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
        })
    for doc in result.documents:  # the Messages API takes a PDF as a document block
        content.append({
            "type": "document",
            "source": {"type": "base64", "media_type": doc.mime_type, "data": doc.data},
        })
    block: dict[str, Any] = {"type": "tool_result"}
    if tool_use_id is not None:
        block["tool_use_id"] = tool_use_id
    block["content"] = content
    block["is_error"] = bool(result.is_error)
    return block


async def arun_tool_uses(session: "Session", content_blocks: Any) -> list[dict[str, Any]]:
    """Run the `tool_use` blocks of an assistant message; returns their `tool_result` blocks.

    Accepts the message's content list (other block types are skipped), the message itself, or
    a response object with `.content`. Concurrency-safe calls run in parallel, the rest in order.
    """
    if isinstance(content_blocks, dict) and "content" in content_blocks:
        content_blocks = content_blocks["content"]
    elif not isinstance(content_blocks, (list, tuple, dict)) and field(content_blocks, "content") is not None:
        content_blocks = field(content_blocks, "content")
    uses = [b for b in as_list(content_blocks) if field(b, "type") == "tool_use"]
    batch = []
    for block in uses:
        name = str(field(block, "name", "") or "")
        raw = field(block, "input")
        if raw is None:
            raw = {}
        err = None
        if not isinstance(raw, dict):
            err = (
                f"The input for {name or 'the tool'} must be a JSON object, got {type(raw).__name__}. "
                "Call the tool again with the input as one JSON object."
            )
        batch.append((name, raw if err is None else None, err))
    results = await run_batch(session, batch)
    return [anthropic_result(r, str(field(b, "id", ""))) for b, r in zip(uses, results)]


def run_tool_uses(session: "Session", content_blocks: Any) -> list[dict[str, Any]]:
    """Synchronous `arun_tool_uses` (not from inside a running event loop)."""
    return run_sync(arun_tool_uses, session, content_blocks)
