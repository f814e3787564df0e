"""A thin Language Server Protocol client: one server per language per workspace (manager),
the JSON-RPC conversation (client, transport), where servers come from (servers), and the
operations of the LSP tool in codebelt's answer model (query, convert)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562), so importing one module of the package does not load them all
# (through __import__, which `python -X importtime` reports, unlike importlib.import_module).
_EXPORTS = {
    "LspClient": ".client",
    "LspCrashed": ".client",
    "LspError": ".client",
    "LspTimeout": ".client",
    "LspManager": ".manager",
    "Unanswered": ".query",
    "ask": ".query",
    "ServerSpec": ".servers",
    "detected": ".servers",
    "from_settings": ".servers",
}
__all__ = ["LspClient", "LspCrashed", "LspError", "LspTimeout", "LspManager", "ServerSpec", "Unanswered",
           "ask", "detected", "from_settings"]

if TYPE_CHECKING:  # pragma: no cover
    from .client import LspClient, LspCrashed, LspError, LspTimeout
    from .manager import LspManager
    from .query import ask, Unanswered
    from .servers import detected, from_settings, ServerSpec


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(__name__ + module, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
