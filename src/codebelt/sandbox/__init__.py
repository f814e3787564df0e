"""The OS sandbox for Bash commands (bubblewrap or Landlock), re-exported from its modules:
`manager` (choose a backend, probe it once, wrap each command), `config`, `bwrap`, `landlock`,
`limits` (rlimits, pids cgroup), `protected` (paths re-bound read-only), `denial` (explaining
a failure the sandbox probably caused)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562), so importing one module of the package does not load them all
# (through __import__, which `python -X importtime` reports, unlike importlib.import_module).
_EXPORTS = {
    "Limits": ".config",
    "SandboxConfig": ".config",
    "Sandbox": ".manager",
    "SandboxStatus": ".manager",
    "SandboxUnavailable": ".manager",
}
__all__ = ["Limits", "SandboxConfig", "Sandbox", "SandboxStatus", "SandboxUnavailable"]

if TYPE_CHECKING:  # pragma: no cover
    from .config import Limits, SandboxConfig
    from .manager import Sandbox, SandboxStatus, SandboxUnavailable


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(__name__ + module, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
