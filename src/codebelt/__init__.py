"""codebelt: the tool layer of a coding agent.

    from codebelt import Session
    with Session(root=".") as s:
        print(s.call("Grep", {"pattern": "def main"}).text)

The public names are imported lazily, so light entry points (the `apply_patch` command) do not
pay for pydantic and the session machinery they never use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: the light entry points stay light

__version__ = "0.1.0"

_EXPORTS = {
    # the session and what a call returns
    "Session": ".session",
    "ToolResult": ".tool",
    "Image": ".tool",
    # the tool contract, for `Session(tools=[...])`
    "Tool": ".tool",
    "ToolInput": ".tool",
    "ToolContext": ".tool",
    # permissions
    "Decision": ".permissions.decision",
    "ApprovalRequest": ".permissions.approvers",
    # settings
    "Settings": ".settings",
    # the exception tree (drawn in codebelt.errors)
    "CodebeltError": ".errors",
    "SettingsError": ".errors",
    "RuleError": ".errors",
    "PathError": ".errors",
    "UnknownToolError": ".errors",
    "SessionClosed": ".errors",
    "ToolError": ".errors",
    "Cancelled": ".errors",
    "ApprovalRefused": ".errors",
    "FileToolError": ".errors",
    "PatchError": ".errors",
    "ShellError": ".errors",
    "SandboxUnavailable": ".errors",
    "ServeError": ".errors",
    "RipgrepError": ".errors",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from .errors import (
        ApprovalRefused,
        Cancelled,
        CodebeltError,
        FileToolError,
        PatchError,
        PathError,
        RipgrepError,
        RuleError,
        SandboxUnavailable,
        ServeError,
        SessionClosed,
        SettingsError,
        ShellError,
        ToolError,
        UnknownToolError,
    )
    from .permissions.approvers import ApprovalRequest
    from .permissions.decision import Decision
    from .session import Session
    from .settings import Settings
    from .tool import Image, Tool, ToolContext, ToolInput, ToolResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'codebelt' has no attribute {name!r}")
    # __import__ rather than importlib.import_module: `python -X importtime` reports it
    value = getattr(__import__(__name__ + module, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
