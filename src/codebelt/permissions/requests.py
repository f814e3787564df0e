"""What a tool call asks permission for. Tools declare these; only the engine decides."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class PathRequest:
    """Reading or writing one path. `path` is absolute and resolved by the workspace."""

    access: Literal["read", "write"]
    path: Path


@dataclass(frozen=True)
class CommandRequest:
    """Running a shell command (the Bash tool). `cwd` is the directory it would start in."""

    command: str
    cwd: Path
    extra: dict = field(default_factory=dict, hash=False, compare=False)


Request = PathRequest | CommandRequest
