"""codebelt: the tool layer of a coding agent.

    from codebelt import Session
    with Session(root=".") as s:
        print(s.call("Grep", {"pattern": "def main"}).text)

The public names are imported lazily, so light entry points (the `apply_patch` command) do not
pay for pydantic and the session machinery they never use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Session": ".session",
    "ToolResult": ".tool",
    "Image": ".tool",
    "Decision": ".permissions.decision",
    "ApprovalRequest": ".permissions.approvers",
    "ApprovalRefused": ".permissions.approvers",
    "CodebeltError": ".errors",
    "PathError": ".errors",
    "SettingsError": ".errors",
    "UnknownToolError": ".errors",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from .errors import CodebeltError, PathError, SettingsError, UnknownToolError
    from .permissions.approvers import ApprovalRefused, ApprovalRequest
    from .permissions.decision import Decision
    from .session import Session
    from .tool import Image, ToolResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'codebelt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
