"""The patch engine's errors (defined in `codebelt.errors`, where the whole tree is drawn).
Every message is written for the model: what went wrong, where, and what to do next. When one is
raised, no file has been changed."""

from ..errors import PatchApplyError, PatchError, PatchParseError, PatchPathError

__all__ = ["PatchError", "PatchParseError", "PatchApplyError", "PatchPathError"]
