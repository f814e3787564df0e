"""The tool contract: what every tool declares and what every call returns.

A tool is one self-describing object: its name, the prompt text the model reads, its input model
(pydantic), its flags, what it asks permission for, and `run`. Nothing about a tool lives outside
its own module except its registration in `codebelt.tools`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from .permissions.requests import Request
    from .session import Session
    from .workspace import Workspace

T = TypeVar("T")


@dataclass(frozen=True)
class Image:
    """An image content block: base64 data and its MIME type."""

    data: str
    mime_type: str


@dataclass
class ToolResult:
    """What a call returns. `text` is exactly what goes into the model's tool_result."""

    text: str
    data: dict[str, Any] | None = None
    is_error: bool = False
    images: list[Image] = field(default_factory=list)

    @classmethod
    def error(cls, message: str, **data: Any) -> "ToolResult":
        return cls(text=message, data={"error": message, **data} if data else None, is_error=True)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "data": self.data,
            "is_error": self.is_error,
            "images": [{"data": i.data, "mime_type": i.mime_type} for i in self.images],
        }


class ToolError(Exception):
    """Raised inside `validate`/`run` to end the call with an `is_error` result.

    The message is what the model reads: say what happened and what to do next.
    """

    def __init__(self, message: str, **data: Any):
        super().__init__(message)
        self.message = message
        self.data = data


class Cancelled(Exception):
    """Raised by `ToolContext.check_cancelled` once the caller has cancelled the call."""


# progress(message, data): called by long-running tools, at most about once a second.
ProgressCallback = Callable[[str, dict[str, Any]], None]


@dataclass
class ToolContext:
    """What a running tool may use: the session's workspace, settings, services and signals."""

    session: "Session"
    tool_name: str
    cancel_event: threading.Event = field(default_factory=threading.Event)
    progress: ProgressCallback | None = None

    @property
    def workspace(self) -> "Workspace":
        return self.session.workspace

    @property
    def results_dir(self) -> Path:
        return self.session.results_dir

    def setting(self, dotted: str, default: T) -> T:
        """A value from the merged settings, e.g. `ctx.setting("grep.timeoutMs", 20000)`."""
        return self.session.setting(dotted, default)

    def service(self, factory: Callable[["Session"], T]) -> T:
        """A per-session singleton (file-state store, task manager …), created on first use."""
        return self.session.service(factory)

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def check_cancelled(self) -> None:
        if self.cancel_event.is_set():
            raise Cancelled()

    def report(self, message: str, **data: Any) -> None:
        if self.progress is not None:
            try:
                self.progress(message, data)
            except Exception:  # a broken progress sink never fails the call
                pass


class ToolInput(BaseModel):
    """Base for tool input models: unknown fields are refused, so typos surface."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Tool:
    """Base class for tools. Subclasses set the class attributes and implement `run`."""

    name: ClassVar[str]
    description: ClassVar[str]
    Input: ClassVar[type[ToolInput]]
    Output: ClassVar[type[BaseModel] | None] = None
    read_only: ClassVar[bool] = False
    concurrency_safe: ClassVar[bool] = False
    destructive: ClassVar[bool] = False
    idempotent: ClassVar[bool] = False
    open_world: ClassVar[bool] = False
    # None: the tool bounds its own output and is never evicted (SPEC §6).
    max_result_chars: ClassVar[int | None] = 30_000
    search_hint: ClassVar[str] = ""

    def is_concurrency_safe(self, params: Any) -> bool:
        """Whether this call may run alongside others (Bash overrides it per command)."""
        return self.concurrency_safe

    def validate(self, params: Any, ctx: ToolContext) -> None:
        """Checks that need the session (path exists, …); raise ToolError to refuse."""

    def permission_requests(self, params: Any, ctx: ToolContext) -> list["Request"]:
        """What this call would touch, for the permission engine. No requests = allowed."""
        return []

    def run(self, params: Any, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    # -- schema helpers -------------------------------------------------------------------
    @classmethod
    def input_schema(cls) -> dict[str, Any]:
        from ._schema import clean_schema

        return clean_schema(cls.Input.model_json_schema(by_alias=True))

    @classmethod
    def output_schema(cls) -> dict[str, Any] | None:
        from ._schema import clean_schema

        return clean_schema(cls.Output.model_json_schema(by_alias=True)) if cls.Output else None

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return {
            "name": cls.name,
            "description": cls.description,
            "input_schema": cls.input_schema(),
            "output_schema": cls.output_schema(),
            "read_only": cls.read_only,
            "concurrency_safe": cls.concurrency_safe,
            "destructive": cls.destructive,
            "idempotent": cls.idempotent,
            "open_world": cls.open_world,
            "max_result_chars": cls.max_result_chars,
            "search_hint": cls.search_hint,
        }
