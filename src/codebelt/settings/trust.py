"""Whether the user trusts a workspace, i.e. honours its own settings files in full.

Trust comes only from outside the workspace: `trustedWorkspaces` in the user's settings (or
`--settings` / the API), or `--trust-workspace` / `Session(trust_workspace=True)`. An entry names
one directory, absolute, and matches a workspace when both are the same directory on disk (same
device and inode after following symlinks): a symlinked checkout, `..`, a trailing slash or
another letter case (on a case-insensitive file system) cannot make another directory pass for a
trusted one, and a trusted parent does not trust what is cloned below it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

USER_FILE_HINT = "~/.config/codebelt/settings.json"


@dataclass(frozen=True)
class Trust:
    root: str  # the workspace's real path, as people should write it in trustedWorkspaces
    trusted: bool
    how: str | None = None  # why it is trusted, for people

    def hint(self) -> str:
        """How to trust this workspace."""
        return (f'add "{self.root}" to trustedWorkspaces in {USER_FILE_HINT}, or pass --trust-workspace '
                "(Session(trust_workspace=True))")


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def decide_trust(root: Path, entries: list[str], flag: bool, warnings: list[str]) -> Trust:
    """The workspace's trust from the flag and the user's `trustedWorkspaces` entries."""
    real = os.path.realpath(root)
    if flag:
        return Trust(real, True, "trusted for this session (--trust-workspace / trust_workspace=True)")
    here = _identity(real)
    for entry in entries:
        expanded = os.path.expanduser(entry)
        if not os.path.isabs(expanded):
            # Relative to what? The directory codebelt happens to start in would be trusted.
            warnings.append(f"trustedWorkspaces entry {entry!r} is not an absolute path; it trusts nothing")
            continue
        if here is not None and _identity(os.path.realpath(expanded)) == here:
            return Trust(real, True, f"listed in trustedWorkspaces ({entry})")
    return Trust(real, False)
