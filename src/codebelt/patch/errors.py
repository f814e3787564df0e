"""Errors raised by the patch engine. Every message is written for the model: what went wrong, where,
and what to do next."""

from __future__ import annotations

from ..errors import CodebeltError


class PatchError(CodebeltError):
    """Base of every patch failure. When it is raised, no file has been changed."""


class PatchParseError(PatchError):
    """The patch text does not follow the grammar. `line` is the 1-based line of the patch text."""

    def __init__(self, message: str, line: int | None = None, *, hunk: bool = True):
        self.message = message
        self.line = line
        # Codex's two wordings, so tools that grep for them keep working.
        if hunk and line is not None:
            text = f"Invalid patch hunk on line {line}: {message}"
        elif line is not None:
            text = f"Invalid patch: {message} (line {line})"
        else:
            text = f"Invalid patch: {message}"
        super().__init__(text)


class PatchApplyError(PatchError):
    """The patch is well formed but cannot be applied to the files as they are."""


class PatchPathError(PatchApplyError):
    """A path in the patch is not allowed (outside the workspace, empty, a directory …)."""
