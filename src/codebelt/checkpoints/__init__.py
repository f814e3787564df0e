"""Checkpoints: what each call changed in the workspace, kept so it can be rewound.

A plain library (no sessions, no settings): `Checkpoints` records calls and rewinds them;
`store` keeps contents by hash; `tracker` and `journal` find what a command changed; `rewind`
puts paths back without clobbering what someone else changed. See docs/checkpoints.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562), so importing one module of the package does not load them all
# (through __import__, which `python -X importtime` reports, unlike importlib.import_module).
_EXPORTS = {
    "Entry": ".entries",
    "Checkpoints": ".manager",
    "Limits": ".manager",
    "Recording": ".manager",
    "RewindReport": ".manager",
    "Change": ".records",
    "Checkpoint": ".records",
}
__all__ = ["Checkpoints", "Limits", "Recording", "RewindReport", "Checkpoint", "Change", "Entry"]

if TYPE_CHECKING:  # pragma: no cover
    from .entries import Entry
    from .manager import Checkpoints, Limits, Recording, RewindReport
    from .records import Change, Checkpoint


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(__name__ + module, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
