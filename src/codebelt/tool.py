"""The tool contract: what every tool declares and what every call returns.

A tool is one self-describing object: its name, the prompt text the model reads, its input model
(pydantic, or a `DeclaredInput` whose pydantic model is built on first need), its flags, which permission-rule family covers it, what it asks permission for, and
`run`. Nothing about a tool lives outside its own module except its registration in
`codebelt.tools`.
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Literal, TypeVar

from .errors import Cancelled, SessionClosed, ToolError
from .texts import Texts
from .texts import load as load_texts
from .workspace import Workspace

if TYPE_CHECKING:
    from .permissions.approvers import Approver
    from .permissions.decision import Decision
    from .permissions.engine import PermissionEngine
    from .permissions.question import Preview
    from .permissions.requests import Request
    from pydantic import BaseModel

    from .settings import Settings

T = TypeVar("T")

__all__ = [
    "Image", "Document", "ToolResult", "ToolError", "Cancelled", "ToolContext", "ToolInput", "Tool",
    "ProgressCallback", "Services", "DeclaredModel", "DeclaredInput", "Param",
]


@dataclass(frozen=True)
class Image:
    """An image content block: base64 data and its MIME type."""

    data: str
    mime_type: str
    detail: str | None = None  # a resolution hint for the model's API ("original": as it is)


@dataclass(frozen=True)
class Document:
    """A document content block (a PDF) for APIs that take one; `text` stands in for it where
    an API or client does not."""

    data: str  # base64
    mime_type: str
    text: str


@dataclass
class ToolResult:
    """What a call returns. `text` is exactly what goes into the model's tool_result."""

    text: str
    data: dict[str, Any] | None = None
    is_error: bool = False
    images: list[Image] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)

    @classmethod
    def error(cls, message: str, **data: Any) -> "ToolResult":
        return cls(text=message, data={"error": message, **data} if data else None, is_error=True)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "data": self.data,
            "is_error": self.is_error,
            "images": [{"data": i.data, "mime_type": i.mime_type} for i in self.images],
            "documents": [{"data": d.data, "mime_type": d.mime_type, "text": d.text} for d in self.documents],
        }


# progress(message, data): called by long-running tools, at most about once a second.
ProgressCallback = Callable[[str, dict[str, Any]], None]


class CallsRunning:
    """The calls a session runs now. What a session begins in the background for later calls
    (the code index's build, its language servers, the checkpoint baseline) waits here while a
    call runs, and until none has run for `quiet` seconds, so that a call never shares the GIL
    and the cores with work done for the calls after it. The held work names itself; `holding`
    says who waits now and `held` who ever waited (tests watch both through `wait_for`)."""

    POLL = 0.02  # how often a waiter asks its `go()` (a caller now waiting for that work)
    # A session's first call usually comes at once (a script) or seconds later (a model's
    # turn); between two calls a script makes, the work does not begin only to be held again.
    QUIET = 0.1

    def __init__(self, quiet: float | None = None) -> None:
        self.quiet = self.QUIET if quiet is None else quiet
        self._cond = threading.Condition()
        self._running = 0
        self._last = time.monotonic()  # the session's start counts as a call's end
        self._closed = False
        self.holding: dict[str, int] = {}
        self.held: set[str] = set()

    def begin(self) -> None:
        with self._cond:
            self._running += 1

    def end(self) -> None:
        with self._cond:
            self._running -= 1
            self._last = time.monotonic()
            self._cond.notify_all()

    def close(self) -> None:
        """Every waiter returns (the session is closing: what it waited to do is not done)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def busy(self) -> bool:
        """Whether background work should begin nothing new now."""
        with self._cond:
            return self._busy()

    def _busy(self) -> bool:
        return not self._closed and (self._running > 0 or time.monotonic() - self._last < self.quiet)

    def wait(self, who: str, go: Callable[[], bool] | None = None) -> None:
        """Return once no call runs and none has for `quiet` seconds, the session is closing,
        or `go()` is true (a call now waits for this very work)."""
        with self._cond:
            if not self._busy() or (go is not None and go()):
                return
            self.holding[who] = self.holding.get(who, 0) + 1
            self.held.add(who)
            self._cond.notify_all()
            try:
                while self._busy() and not (go is not None and go()):
                    # woken by a call's end; after it, by the quiet time running out
                    timeout = None if self._running else max(self.quiet - (time.monotonic() - self._last), 0.001)
                    if go is not None:
                        timeout = self.POLL if timeout is None else min(timeout, self.POLL)
                    self._cond.wait(timeout)
            finally:
                self.holding[who] -= 1
                if not self.holding[who]:
                    del self.holding[who]
                self._cond.notify_all()

    def wait_for(self, predicate: Callable[["CallsRunning"], bool], timeout: float) -> bool:
        """Wait until `predicate(self)` holds (checked at each change); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)


class Services:
    """Per-session singletons (the file-state store, the task manager, the sandbox …), created
    on first use by a factory that receives the asking call's `ToolContext` and reads only its
    session-wide fields. `close()` closes them in the order they were created, those marked
    `closes_last` after the rest (the task manager stops its commands, the language servers
    end, before the sandbox removes what is left)."""

    def __init__(self) -> None:
        self._items: dict[Any, Any] = {}
        self._lock = threading.RLock()
        self._closed = False
        self.calls = CallsRunning()  # what background work for later calls yields to

    def get(self, factory: Callable[["ToolContext"], T], ctx: "ToolContext") -> T:
        with self._lock:
            if factory not in self._items:
                if self._closed:  # a service made now would outlive the session (nobody closes it)
                    raise SessionClosed()
                self._items[factory] = factory(ctx)
            return self._items[factory]

    def peek(self, factory: Callable[..., T]) -> T | None:
        """The service if it was created, else None (nothing is started)."""
        with self._lock:
            return self._items.get(factory)

    def workspace_changed(self) -> None:
        """A call that may have written files ended: services that cache what the files hold
        (`mark_stale()`) look again before they next answer."""
        with self._lock:
            items = list(self._items.values())
        for s in items:
            mark = getattr(s, "mark_stale", None)
            if callable(mark):
                mark()

    def close(self) -> None:
        with self._lock:
            # kept, closed: a call still finishing when the session closed gets the same
            # (now closed) objects rather than new ones nobody would close
            self._closed = True
            items = list(self._items.values())
        self.calls.close()
        # what others run inside (the sandbox: `closes_last`) goes after them, whenever it was made
        items.sort(key=lambda s: bool(getattr(s, "closes_last", False)))
        for s in items:
            close = getattr(s, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - one failing service must not keep others open
                    pass


@dataclass
class ToolContext:
    """What a running tool may use, as explicit fields: the session's workspace, settings,
    permission engine (for questions such as "is this path read-denied?"), directories and
    services, plus this call's decision, cancel signal and progress sink."""

    tool_name: str
    session_id: str
    workspace: Workspace
    settings: "Settings"
    permissions: "PermissionEngine"
    results_dir: Path  # evicted results and spooled command output (readable by Read)
    temp_dir: Path  # the per-session TMPDIR of shell commands
    services: Services
    cancel_event: threading.Event = field(default_factory=threading.Event)
    progress: ProgressCallback | None = None
    # The permission decision this call runs under (set by the session before `run`): a Bash
    # command allowed because it is read-only runs differently from one a person approved.
    decision: "Decision | None" = None
    # The session's event sink: `emit("task_end", {...})` — things that happen between calls
    # (a background task ending) reach the model, the client and the library user through it.
    events: Callable[[str, dict[str, Any]], None] | None = None
    # The texts of the session's compat profile: every result text is rendered from them.
    texts: Texts = field(default_factory=load_texts)
    # The session's approver, for questions that come up while a call runs (a command's first
    # connection to a new domain); None: nobody can be asked.
    approver: "Approver | None" = None
    # The host's own summariser for WebFetch, `(page, prompt, info) -> answer`; None: the page
    # goes back with the prompt for the host's model.
    web_summarizer: Callable[[str, str, dict[str, Any]], str] | None = None
    # This call's resolved paths: the permission decision and `run` use the same resolution, so
    # a symlink swapped in between cannot make `run` act on another path than the one decided.
    _resolved: dict[tuple[str, Path | None], Path] = field(default_factory=dict, repr=False)
    _dirs: dict[Path, Path] = field(default_factory=dict, repr=False)  # many paths, few directories

    def resolve(self, path: str, base: Path | None = None) -> Path:
        """`workspace.resolve(path, base)`, computed once per call."""
        key = (path, base)
        hit = self._resolved.get(key)
        if hit is None:
            hit = self._resolved[key] = self.workspace.resolve(path, base, dir_cache=self._dirs)
        return hit

    def forget_resolutions(self) -> None:
        """Resolve afresh (after an approval wait, to see whether the tree changed meanwhile)."""
        self._resolved.clear()
        self._dirs.clear()

    def emit(self, event: str, data: dict[str, Any]) -> None:
        if self.events is not None:
            try:
                self.events(event, data)
            except Exception:  # noqa: BLE001 - a broken listener never fails the call
                pass

    def service(self, factory: Callable[["ToolContext"], T]) -> T:
        """A per-session singleton, created on first use by `factory(ctx)`."""
        return self.services.get(factory, self)

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


def _tool_input() -> type:
    """ToolInput, defined on first need: a pydantic model, so that a tool declared with
    `DeclaredInput` (Read) runs a call without importing pydantic at all."""
    with _defining:  # one class, whichever thread asks first
        found = globals().get("ToolInput")
        return found if found is not None else _define_tool_input()


_defining = threading.RLock()


def _define_tool_input() -> type:
    from pydantic import BaseModel, ConfigDict

    class ToolInput(BaseModel):
        """Base for tool input models: unknown fields are refused, so typos surface; types are strict
        (`coerce.coerce_input` first turns "3" into 3 and "true" into true, as Claude Code does)."""

        model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    ToolInput.__module__, ToolInput.__qualname__ = __name__, "ToolInput"
    globals()["ToolInput"] = ToolInput
    return ToolInput


def __getattr__(name: str) -> Any:
    if name == "ToolInput":
        return _tool_input()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


REQUIRED: Any = ...  # a Param without a default (pydantic's own marker, Ellipsis)


class Param:
    """One field of a `DeclaredModel`: `pydantic.Field`'s arguments, kept until the model is built."""

    __slots__ = ("default", "kwargs")

    def __init__(self, default: Any = REQUIRED, **kwargs: Any) -> None:
        self.default = default
        self.kwargs = kwargs

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


class _Declared(type):
    def __getattr__(cls, name: str) -> Any:
        # what the declaration lacks is the model's: model_validate, model_fields, model_json_schema …
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(cls.model(), name)


class DeclaredModel(metaclass=_Declared):
    """A model declared with plain class attributes, `name: type = Param(default, description=…)`,
    whose pydantic model is built on first need (`model()`, or any `model_*` attribute asked of
    the class). Importing a tool that declares its input this way imports no pydantic, and a call
    whose input `coerce.plain_params` can settle never builds the model: the params are then an
    instance of this class, with the same attributes the model's instance would have."""

    _pydantic_base = "BaseModel"

    @classmethod
    def declared_fields(cls) -> dict[str, tuple[Any, Param]]:
        """{name: (type, Param)} in declaration order, the annotations evaluated once."""
        cached = cls.__dict__.get("_fields")
        if cached is None:
            import typing

            hints = typing.get_type_hints(cls)
            cached = {}
            for name in cls.__dict__.get("__annotations__", {}):
                value = cls.__dict__.get(name, REQUIRED)
                cached[name] = (hints[name], value if isinstance(value, Param) else Param(value))
            type.__setattr__(cls, "_fields", cached)
        return cached

    @classmethod
    def model(cls) -> type[BaseModel]:
        """The pydantic model of this declaration (built once)."""
        built = cls.__dict__.get("_model")
        if built is not None:
            return built
        with _defining:
            built = cls.__dict__.get("_model")
            if built is None:
                import pydantic

                base = _tool_input() if cls._pydantic_base == "ToolInput" else pydantic.BaseModel
                fields = {name: (tp, pydantic.Field(p.default, **p.kwargs))
                          for name, (tp, p) in cls.declared_fields().items()}
                built = pydantic.create_model(cls.__name__, __base__=base, __module__=cls.__module__,
                                              __doc__=cls.__doc__, **fields)
                built.__qualname__ = cls.__qualname__
                type.__setattr__(cls, "_model", built)
        return built

    def __init__(self, **values: Any) -> None:
        """The values as given (unchecked: `coerce.plain_params` checks an input first; an
        output is the tool's own), the defaults of the fields not given."""
        fields = type(self).declared_fields()
        unknown = set(values) - set(fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        for name, (_, param) in fields.items():
            if name not in values:
                if param.required:
                    raise TypeError(f"{type(self).__name__} needs {name!r}")
                values[name] = copy.deepcopy(param.default)
        self.__dict__.update(values)

    def model_dump(self) -> dict[str, Any]:
        return {name: self.__dict__[name] for name in type(self).declared_fields()}

    def model_dump_json(self, exclude_none: bool = False) -> str:
        import json

        values = {k: v for k, v in self.model_dump().items() if not (exclude_none and v is None)}
        return json.dumps(values, ensure_ascii=False, separators=(",", ":"))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.__dict__ == self.__dict__

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.model_dump().items())})"


class DeclaredInput(DeclaredModel):
    """A tool input declared as a `DeclaredModel`: its model is a `ToolInput` (strict, unknown
    fields refused)."""

    _pydantic_base = "ToolInput"


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
    # Which family of path rules covers this tool's path requests besides rules naming it:
    # "read" (`Read(…)` rules), "edit" (`Edit(…)` rules), or None.
    permission_family: ClassVar[Literal["read", "edit"] | None] = None
    # Whether a call may start programs on the model's behalf (a command, ripgrep, a language
    # server for diagnostics): its decision then says how they are confined.
    starts_programs: ClassVar[bool] = False
    # None: the tool bounds its own output and is never evicted.
    max_result_chars: ClassVar[int | None] = 30_000
    search_hint: ClassVar[str] = ""
    # A freeform tool takes raw text (its one `input` field) instead of JSON arguments where the
    # API allows (the OpenAI Responses API's custom tools): the text's format, e.g. a grammar.
    freeform: ClassVar[dict[str, Any] | None] = None
    # the tool whose permission rules decide this one's calls, when another profile's tool does
    # the same thing (exec_command is decided as Bash: `Bash(…)` rules, a bare `Bash` deny)
    rules_as: ClassVar[str | None] = None

    def hook_view(self, raw: dict[str, Any]) -> tuple[str, dict[str, Any], tuple[str, ...]]:
        """How hooks see a call: (the `tool_name` and `tool_input` a hook reads, other names a
        matcher may use). Hook scripts are written for Claude Code's tools, so a tool standing
        for one (Codex's exec_command for Bash) shows itself in that shape."""
        return self.name, raw, ()

    def from_hook_input(self, updated: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
        """A hook's `updatedInput`, written in `hook_view`'s shape, as this tool's input."""
        return updated

    def input_error(self, raw: dict[str, Any], error: Any) -> str | None:
        """The text for arguments that do not fit the schema, when the tool words it itself
        (as the program its profile follows does); None: the session's wording."""
        return None

    def is_concurrency_safe(self, params: Any) -> bool:
        """Whether this call may run alongside others (Bash decides per command)."""
        return self.concurrency_safe

    def validate(self, params: Any, ctx: ToolContext) -> None:
        """Checks that need the session (path exists, …); raise ToolError to refuse."""

    def precheck(self, params: Any, ctx: ToolContext) -> None:
        """Checks that can fail without side effects (unread or stale file, no match …), run
        when the call would ask someone, before they are asked: nobody approves a call that
        cannot work. Raise ToolError to refuse."""

    def permission_requests(self, params: Any, ctx: ToolContext) -> list["Request"]:
        """What this call would touch, for the permission engine. No requests = allowed."""
        return []

    def summarize(self, params: Any) -> str:
        """One line saying what this call would do, for a person asked to approve it."""
        path = getattr(params, "file_path", None)
        if isinstance(path, str):
            return path
        dump = getattr(params, "model_dump_json", None)  # a pydantic model's
        return dump(exclude_none=True) if callable(dump) else str(params)

    def preview(self, params: Any, ctx: ToolContext) -> "Preview | None":
        """More than `summarize` for a person asked to approve this call, when one line cannot
        say it (ApplyPatch: every file, its operation, a diff); None: the summary is enough."""
        return None

    def run(self, params: Any, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    # -- schema helpers -------------------------------------------------------------------
    @classmethod
    def input_schema(cls, texts: Texts | None = None) -> dict[str, Any]:
        """The input's JSON Schema; `texts`: the profile whose parameter descriptions win."""
        from ._schema import clean_schema

        schema = clean_schema(cls.Input.model_json_schema(by_alias=True))
        worded = texts.parameters(cls.name) if texts else {}
        for name, description in worded.items():
            prop = schema.get("properties", {}).get(name)
            if isinstance(prop, dict):
                prop["description"] = description
        return schema

    @classmethod
    def output_schema(cls) -> dict[str, Any] | None:
        from ._schema import clean_schema

        return clean_schema(cls.Output.model_json_schema(by_alias=True), output=True) if cls.Output else None

    @classmethod
    def spec(cls, texts: Texts | None = None) -> dict[str, Any]:
        """What a client is told about the tool; `texts`: the profile whose description wins."""
        return {
            "name": cls.name,
            "description": (texts.description(cls.name) if texts else None) or cls.description,
            "input_schema": cls.input_schema(texts),
            "output_schema": cls.output_schema(),
            "read_only": cls.read_only,
            "concurrency_safe": cls.concurrency_safe,
            "destructive": cls.destructive,
            "idempotent": cls.idempotent,
            "open_world": cls.open_world,
            "max_result_chars": cls.max_result_chars,
            "search_hint": cls.search_hint,
            **({"freeform": cls.freeform, "function_description": getattr(cls, "function_description", None)}
               if cls.freeform else {}),
        }
