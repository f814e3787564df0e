"""Model-provider adapters: codebelt's tools as plain-dict tool definitions and tool results.

    from codebelt.adapters import openai_tools, anthropic_tools, anthropic_result

Neither adapter imports a vendor SDK; both produce and accept plain dicts (and accept the SDKs'
response objects too, read by attribute). The names are resolved lazily so importing this package
costs nothing until an adapter is used.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "openai_tools": "openai",
    "run_tool_calls": "openai",
    "arun_tool_calls": "openai",
    "anthropic_tools": "anthropic",
    "anthropic_result": "anthropic",
    "run_tool_uses": "anthropic",
    "arun_tool_uses": "anthropic",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
