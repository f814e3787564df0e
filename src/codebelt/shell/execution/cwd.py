"""The shell's working directory, which persists between Bash calls of one session.

Each command starts where the previous one ended (`cd sub` then `ls` works), as in Claude
Code. What the command reports is only a hint (the EXIT trap's output can be forged by the
command): it is resolved here and kept only if it is an existing directory inside the
workspace; anything else leaves the directory unchanged and the result says so.
Environment variables do not persist: every command starts from the session's environment.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ...workspace import Workspace


OUTSIDE = "outside"  # learn(): the command ended outside the workspace


class ShellCwd:
    """The working directory of one session's shell (a per-session service)."""

    def __init__(self, workspace: Workspace):
        self._workspace = workspace
        self._cwd = self._workspace.root
        self._lock = threading.Lock()

    def current(self, consume: bool = True) -> tuple[Path, str | None]:
        """The directory the next command starts in, and a note if it had to be reset
        (the directory was deleted). `consume=False` only looks (permission checks)."""
        with self._lock:
            if self._cwd.is_dir():
                return self._cwd, None
            gone = self._cwd
            if consume:
                self._cwd = self._workspace.root
            return self._workspace.root, (
                f"The working directory {self._workspace.relative(gone)} no longer exists; "
                f"the command ran in the workspace root {self._workspace.root} instead."
            )

    def learn(self, reported: str | None) -> str | None:
        """Adopt the directory a command ended in. A directory outside the workspace is refused
        and the shell goes back to the workspace root: then OUTSIDE is returned."""
        if not reported or "\x00" in reported:
            return None
        path = Path(os.path.realpath(reported))
        with self._lock:
            if path == self._cwd:
                return None
            if not os.path.isabs(reported) or not path.is_dir():
                return None
            if not self._workspace.is_inside(path):
                self._cwd = self._workspace.root  # as Claude Code: back to where the shell started
                return OUTSIDE
            self._cwd = path
            return None

    def restore(self, path: str | None) -> None:
        """Start from a directory kept from before (the CLI's persistent session): adopted only
        if it still exists inside the workspace."""
        if path:
            self.learn(path)

    def reset(self) -> None:
        with self._lock:
            self._cwd = self._workspace.root
