"""What a tool call asks permission for. Tools declare these; only the engine decides."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal


@dataclass(frozen=True)
class PathRequest:
    """Reading or writing one path. `path` is absolute and resolved by the workspace."""

    access: Literal["read", "write"]
    path: Path


@dataclass(frozen=True)
class CommandRequest:
    """Running a shell command (the Bash tool). `cwd` is the directory it would start in.

    `script` is the command's parse (`shell.analysis.parse.Script`) when the caller already has
    it, so the command is parsed once per call; `analysis` likewise, when already made for the
    same cwd and workspace. Neither takes part in equality.
    """

    command: str
    cwd: Path
    script: Any = field(default=None, hash=False, compare=False)
    analysis: Any = field(default=None, hash=False, compare=False)


Request = PathRequest | CommandRequest
