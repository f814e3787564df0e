"""The Codex patch language: parse it, locate it fuzzily but safely, apply it all or nothing.

    from codebelt.patch import apply_patch
    changes = apply_patch(patch_text, root=Path("."))
    print(changes.summary())
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562), so importing one module of the package does not load them all
# (through __import__, which `python -X importtime` reports, unlike importlib.import_module).
_EXPORTS = {
    "Changes": ".apply",
    "FileChange": ".apply",
    "affected_paths": ".apply",
    "apply_patch": ".apply",
    "plan_patch": ".apply",
    "relative_display": ".apply",
    "workspace_resolver": ".apply",
    "PatchApplyError": ".errors",
    "PatchError": ".errors",
    "PatchParseError": ".errors",
    "PatchPathError": ".errors",
    "Patch": ".parser",
    "parse_patch": ".parser",
}
__all__ = [
    "Changes", "FileChange", "Patch", "PatchApplyError", "PatchError", "PatchParseError", "PatchPathError",
    "affected_paths", "apply_patch", "parse_patch", "plan_patch", "relative_display", "workspace_resolver",
]

if TYPE_CHECKING:  # pragma: no cover
    from .apply import affected_paths, apply_patch, Changes, FileChange, plan_patch, relative_display, workspace_resolver
    from .errors import PatchApplyError, PatchError, PatchParseError, PatchPathError
    from .parser import parse_patch, Patch


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(__name__ + module, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
