"""Small tools used to exercise the pipeline without depending on the real tools."""

from __future__ import annotations

import threading
import time
from typing import Literal

from pydantic import Field

from codebelt.permissions.requests import PathRequest
from codebelt.tool import Tool, ToolError, ToolInput, ToolResult


class EchoInput(ToolInput):
    text: str
    times: int = 1
    loud: bool = False
    tags: list[str] = Field(default_factory=list)
    limit: int | None = None


class Echo(Tool):
    name = "Echo"
    description = "Echo text back."
    Input = EchoInput
    read_only = True
    concurrency_safe = True

    def run(self, params, ctx):
        text = params.text * params.times
        if params.loud:
            text = text.upper()
        return ToolResult(text=text, data={"tags": params.tags, "limit": params.limit})


class TouchInput(ToolInput):
    file_path: str


class Touch(Tool):
    """A writing tool: asks for an Edit permission on its path."""

    name = "Touch"
    description = "Create an empty file."
    Input = TouchInput

    def permission_requests(self, params, ctx):
        return [PathRequest("write", ctx.workspace.resolve(params.file_path))]

    def run(self, params, ctx):
        ctx.workspace.resolve(params.file_path).touch()
        return ToolResult(text="touched")


class Peek(Tool):
    name = "Peek"
    description = "Say whether a path exists (a reading tool)."
    Input = TouchInput
    read_only = True
    concurrency_safe = True

    def permission_requests(self, params, ctx):
        return [PathRequest("read", ctx.workspace.resolve(params.file_path))]

    def run(self, params, ctx):
        return ToolResult(text=str(ctx.workspace.resolve(params.file_path).exists()))


class FailInput(ToolInput):
    how: Literal["tool_error", "crash", "huge"]


class Fail(Tool):
    name = "Fail"
    description = "Fail in a chosen way."
    Input = FailInput
    max_result_chars = 1_000

    def run(self, params, ctx):
        if params.how == "tool_error":
            raise ToolError("the thing failed; try the other thing", hint="other")
        if params.how == "crash":
            raise KeyError("boom")
        return ToolResult(text="\n".join(f"line {i}" for i in range(5_000)))


class SleepInput(ToolInput):
    seconds: float
    safe: bool = True


class Sleep(Tool):
    """Sleeps until done or cancelled; records overlap to prove parallelism."""

    name = "Sleep"
    description = "Sleep."
    Input = SleepInput
    active = 0
    max_active = 0
    lock = threading.Lock()

    def is_concurrency_safe(self, params):
        return params.safe

    def run(self, params, ctx):
        cls = type(self)
        with cls.lock:
            cls.active += 1
            cls.max_active = max(cls.max_active, cls.active)
        try:
            end = time.monotonic() + params.seconds
            while time.monotonic() < end:
                ctx.check_cancelled()
                time.sleep(0.01)
            return ToolResult(text=f"slept {params.seconds}")
        finally:
            with cls.lock:
                cls.active -= 1


ALL = [Echo, Touch, Peek, Fail, Sleep]
