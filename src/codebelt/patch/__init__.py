"""The Codex patch language: parse it, locate it fuzzily but safely, apply it all or nothing.

    from codebelt.patch import apply_patch
    changes = apply_patch(patch_text, root=Path("."))
    print(changes.summary())
"""

from .apply import (
    Changes,
    FileChange,
    affected_paths,
    apply_patch,
    plan_patch,
    relative_display,
    workspace_resolver,
)
from .errors import PatchApplyError, PatchError, PatchParseError, PatchPathError
from .parser import Patch, parse_patch

__all__ = [
    "Changes", "FileChange", "Patch", "PatchApplyError", "PatchError", "PatchParseError", "PatchPathError",
    "affected_paths", "apply_patch", "parse_patch", "plan_patch", "relative_display", "workspace_resolver",
]
