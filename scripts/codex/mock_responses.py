"""A scripted OpenAI Responses API on 127.0.0.1, for driving the real Codex (`codex exec`).

Codex sends its conversation here instead of to a model. Each turn is answered with the next
scripted tool call — a `function_call` (JSON arguments) or, for a freeform tool such as
`apply_patch`, a `custom_tool_call` (raw input) — and the output item Codex sends back for it
(`function_call_output` / `custom_tool_call_output`: exactly what a model reads) is recorded,
with the `tools` array of the first request (Codex's current tool definitions). When the
script is used up the answer is a plain "done" message, so Codex ends the turn.

The step is the number of tool calls already in the conversation, so a retried request gets
the same answer again. Standard library only (scripts/scripted_http.py).
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

CUSTOM_TOOLS = ("apply_patch",)
CALL_TYPES = ("function_call", "custom_tool_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")


def call_id(step: int) -> str:
    return f"call_{step:04d}"


@dataclass
class Recording:
    tools: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[int, Any] = field(default_factory=dict)  # step → the output item's `output`
    kinds: dict[int, str] = field(default_factory=dict)  # step → the output item's type
    sent: dict[int, tuple[str, Any]] = field(default_factory=dict)  # step → (tool, input) as sent
    requests: int = 0
    errors: list[str] = field(default_factory=list)


_ids = itertools.count(1)


class MockResponsesAPI(ScriptedAPI[tuple[str, Any]]):
    """`with MockResponsesAPI(steps, resolve) as api:` … `api.base_url` (ends in /v1), then
    `api.recording`. `steps`: (tool name, input) per turn; `resolve(step, call, recording)`
    fills a call's placeholders from what earlier steps returned, just before it is sent."""

    base_path = "/v1"

    def __init__(self, steps: list[tuple[str, Any]],
                 resolve: Callable[[int, tuple[str, Any], Recording], tuple[str, Any]] | None = None):
        super().__init__(steps, resolve, Recording())

    def _http(self, path: str, request: Any, headers: dict[str, str]) -> tuple[int, bytes, str]:
        if not path.endswith("/responses"):
            return 404, NOT_FOUND, "application/json"
        items = self._answer(request)
        rid = f"resp_mock_{next(_ids):06d}"
        events = [("response.created", {"type": "response.created", "response": {"id": rid}})]
        for item in items:
            events.append(("response.output_item.done", {"type": "response.output_item.done", "item": item}))
        events.append(("response.completed", {"type": "response.completed", "response": {
            "id": rid, "usage": {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0},
                                 "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
                                 "total_tokens": 2}}}))
        return 200, sse(events), "text/event-stream"

    def _answer(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        items = [i for i in request.get("input") or [] if isinstance(i, dict)]
        with self._lock:
            self.recording.requests += 1
            if not self.recording.tools:
                self.recording.tools = list(request.get("tools") or [])
            by_call = {i.get("call_id"): i for i in items if i.get("type") in OUTPUT_TYPES}
            for step in range(len(self.steps)):
                item = by_call.get(call_id(step))
                if item is not None and step not in self.recording.outputs:
                    self.recording.outputs[step] = item.get("output")
                    self.recording.kinds[step] = item["type"]
            step = sum(1 for i in items if i.get("type") in CALL_TYPES)
            looping = self._looping(step)
            if step >= len(self.steps) or looping:
                return [{"type": "message", "role": "assistant", "id": f"msg_{step}", "status": "completed",
                         "content": [{"type": "output_text", "text": "done", "annotations": []}]}]
            name, data = self._turn(step)
        if name in CUSTOM_TOOLS:
            return [{"type": "custom_tool_call", "id": f"ctc_{step}", "status": "completed", "call_id": call_id(step),
                     "name": name, "input": data}]
        return [{"type": "function_call", "id": f"fc_{step}", "status": "completed", "call_id": call_id(step),
                 "name": name, "arguments": json.dumps(data)}]
