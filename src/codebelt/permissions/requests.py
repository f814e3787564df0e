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
    # The tool name rules are matched under: "Read" for reads, "Edit" for writes by default.
    rule_tool: str = ""

    @property
    def rule_name(self) -> str:
        return self.rule_tool or ("Read" if self.access == "read" else "Edit")


@dataclass(frozen=True)
class CommandRequest:
    """Running a shell command (the Bash tool). `cwd` is the directory it would start in."""

    command: str
    cwd: Path
    extra: dict = field(default_factory=dict, hash=False, compare=False)


Request = PathRequest | CommandRequest
