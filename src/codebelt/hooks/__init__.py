"""Claude Code's hooks protocol: `config` (the settings section, matchers, HookSpec), `runner`
(command, http and Python hooks, bounded), `outcome` (reading and merging results as Claude Code
does), `engine` (which hooks run for an event, in parallel). Wired into every call by the session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562), so importing one module of the package does not load them all
# (through __import__, which `python -X importtime` reports, unlike importlib.import_module).
_EXPORTS = {
    "EVENTS": ".config",
    "HookSpec": ".config",
    "HookEngine": ".engine",
    "HookResult": ".outcome",
}
__all__ = ["EVENTS", "HookSpec", "HookEngine", "HookResult"]

if TYPE_CHECKING:  # pragma: no cover
    from .config import EVENTS, HookSpec
    from .engine import HookEngine
    from .outcome import HookResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(__name__ + module, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
