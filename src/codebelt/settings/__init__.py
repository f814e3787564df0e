"""Settings: one declared schema (`schema`), what a workspace's own files may do with each key
(`narrowing`), whether the user trusts the workspace (`trust`), bounded reading of the files
(`reading`), and checking and merging them (`loader`). `codebelt config` shows the result with
the file each value came from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562), so importing one module of the package does not load them all
# (through __import__, which `python -X importtime` reports, unlike importlib.import_module).
_EXPORTS = {
    "Ignored": ".loader",
    "Layer": ".loader",
    "RuleSource": ".loader",
    "Settings": ".loader",
    "load_settings": ".loader",
    "user_settings_path": ".loader",
    "MODES": ".modes",
    "SANDBOX_MODES": ".modes",
    "SettingsModel": ".schema",
    "json_schema": ".schema",
    "Trust": ".trust",
}
__all__ = [
    "Ignored", "Layer", "RuleSource", "Settings", "Trust", "load_settings", "user_settings_path",
    "MODES", "SANDBOX_MODES", "SettingsModel", "json_schema",
]

if TYPE_CHECKING:  # pragma: no cover
    from .loader import Ignored, Layer, load_settings, RuleSource, Settings, user_settings_path
    from .modes import MODES, SANDBOX_MODES
    from .schema import json_schema, SettingsModel
    from .trust import Trust


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(__name__ + module, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
