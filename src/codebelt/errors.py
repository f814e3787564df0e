"""The exception hierarchy. Engines raise these; the session turns them into error results."""

from __future__ import annotations


class CodebeltError(Exception):
    """Base of every codebelt exception."""


class PathError(CodebeltError):
    """A path that cannot be used at all (UNC, NUL byte, empty)."""


class SettingsError(CodebeltError):
    """A settings file or value that cannot be understood."""


class RuleError(SettingsError):
    """A permission rule that cannot be parsed."""


class UnknownToolError(CodebeltError):
    """A call named a tool that is not registered."""
