"""A scripted Anthropic Messages API on 127.0.0.1, for driving the real Claude Code.

Claude Code (`claude -p`) sends its conversation here instead of to a model. Each turn of the
main conversation is answered with the next scripted `tool_use` block; the user message that
comes back holds the `tool_result` Claude Code built — exactly what a model reads — and is
recorded, with the `tools` array of the request (the current tool descriptions and schemas).
When the script is used up the answer is a plain "done" (end_turn), so Claude Code finishes.

Only the standard library is used, so the recorder runs without the project installed.
"""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripted_http import NOT_FOUND, ScriptedAPI, sse  # noqa: E402

# The prompt of every recording: requests whose first user turn carries it are the main
# conversation; anything else Claude Code asks a model (titles, summaries) gets a short answer.
PROMPT = "codebelt compatibility recording: run the scripted tool calls."


def tool_use_id(step: int) -> str:
    return f"toolu_{step:04d}"


@dataclass
class Recording:
    """What Claude Code sent: the tools of its first main request, and per scripted step the
    content of the user message that answered it."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    replies: dict[int, list[Any]] = field(default_factory=dict)
    sent: dict[int, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)  # the inputs as sent
    trailing: list[Any] = field(default_factory=list)  # what arrived after the script ended
    side_requests: int = 0
    errors: list[str] = field(default_factory=list)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _strip_cache_control(block: Any) -> Any:
    if isinstance(block, dict):
        return {k: _strip_cache_control(v) for k, v in block.items() if k != "cache_control"}
    if isinstance(block, list):
        return [_strip_cache_control(b) for b in block]
    return block


def _is_main(request: dict[str, Any]) -> bool:
    for message in request.get("messages") or []:
        if message.get("role") == "user":
            return any(
                isinstance(b, dict) and b.get("type") == "text" and PROMPT in b.get("text", "")
                for b in _blocks(message.get("content"))
            )
    return False


_ids = itertools.count(1)


TurnOf = list[tuple[str, dict[str, Any]]]


class MockMessagesAPI(ScriptedAPI[TurnOf]):
    """`with MockMessagesAPI(steps, resolve) as api:` … `api.base_url`, then `api.recording`.

    `steps` is a list of turns, each a list of (tool name, input) pairs sent as one assistant
    message; `resolve` fills in a turn's inputs from what earlier steps returned (a task id)."""

    def __init__(self, steps: list[TurnOf], resolve: Callable[[int, TurnOf, Recording], TurnOf] | None = None):
        super().__init__(steps, resolve, Recording())

    def _http(self, path: str, request: Any, headers: dict[str, str]) -> tuple[int, bytes, str]:
        if path.endswith("/count_tokens"):
            return 200, json.dumps({"input_tokens": len(json.dumps(request)) // 4}).encode(), "application/json"
        if not path.endswith("/v1/messages"):
            return 404, NOT_FOUND, "application/json"
        message = self._answer(request)
        if request.get("stream"):
            return 200, _stream(message), "text/event-stream"
        return 200, json.dumps(message).encode(), "application/json"

    # -- answering -----------------------------------------------------------------------------
    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        model = request.get("model", "mock")
        if not _is_main(request):
            with self._lock:
                self.recording.side_requests += 1
            return _message(model, [{"type": "text", "text": "ok"}], "end_turn")
        messages = request.get("messages") or []
        # the step is how many assistant turns the conversation already has: a retried request
        # gets the same answer again
        step = sum(1 for m in messages if m.get("role") == "assistant")
        with self._lock:
            if not self.recording.tools:
                self.recording.tools = _strip_cache_control(request.get("tools") or [])
            # everything after the last assistant turn answers it: the user message with the
            # tool_result, and any system turns the harness added after it
            last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
            content = []
            for m in messages[last + 1:]:
                blocks = _strip_cache_control(_blocks(m.get("content")))
                content += blocks if m.get("role") == "user" else [{"type": "system", "content": blocks}]
            if step and content:
                if step <= len(self.steps):
                    self.recording.replies[step - 1] = content
                else:
                    self.recording.trailing.append(content)
        with self._lock:
            looping = self._looping(step)
        if step < len(self.steps) and not looping:
            with self._lock:
                turn = self._turn(step)
            blocks = [
                {"type": "tool_use", "id": tool_use_id(step) + (f"_{i}" if i else ""), "name": name, "input": data}
                for i, (name, data) in enumerate(turn)
            ]
            return _message(model, blocks, "tool_use")
        return _message(model, [{"type": "text", "text": "done"}], "end_turn")


def _message(model: str, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    # every answer has its own id: Claude Code merges streamed assistant messages that share one
    return {
        "id": f"msg_mock_{next(_ids):06d}", "type": "message", "role": "assistant", "model": model, "content": content,
        "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _stream(message: dict[str, Any]) -> bytes:
    start = {**message, "content": [], "stop_reason": None}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {**block, "input": {}}}))
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            delta = {"type": "text_delta", "text": block["text"]}
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": 1}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events)
