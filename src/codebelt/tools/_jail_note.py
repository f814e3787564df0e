"""The note after a failed command that ran in the read-only jail: said only when the failure is
plausibly the jail's, never on an ordinary missing file.

What the jail changes, and how each shows in a command's output:
- a path it does not show (outside the workspace, its additional directories, the system
  directories, /etc and the PATH directories; or one a Read deny rule masks) is missing
  ("No such file or directory", under bwrap) or refused ("Permission denied", under Landlock);
- a write anywhere is refused: "Read-only file system" (bwrap's read-only mounts) or "Permission
  denied" (Landlock) on a path the host would let this process write;
- no sockets and no network: "Permission denied" or "Operation not permitted" without a path,
  "Network is unreachable", "Temporary failure in name resolution".

Whether a path is shown is decided from the path and the jail's layout alone, never from what
exists on the host outside it: a note that came and went with a hidden file's existence would
tell the model what the jail hides.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from ..sandbox.jail import SECRETS, SYSTEM_DIRS, path_dirs

NOTE = ("This command ran in the read-only jail, because it was judged read-only: nothing is "
        "writable there (TMPDIR is a scratch directory that is thrown away), only the workspace, "
        "its additional directories and system directories are visible, and there is no network. "
        "A command that needs more than that is not a read-only command.")

_MISSING = "No such file or directory"
_DENIED = "Permission denied"
# the jail's and nothing else's in a command judged read-only
_ALWAYS = re.compile(r"Read-only file system|Operation not permitted|Network is unreachable|"
                     r"Temporary failure in name resolution")
_QUOTED = re.compile(r"'([^'\n]+)'|\"([^\"\n]+)\"|‘([^’\n]+)’|`([^'`\n]+)'")
_MESSAGE = re.compile(r"(?:\[Errno \d+\] )?(?:No such file or directory|Permission denied)")


def _candidates(line: str) -> list[str]:
    """The paths an error line names: quoted ones, and the `: `-separated fields between the
    program's name and the message (`cat: x: No such file…`, `bash: line 1: /x: …`)."""
    out = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(line)]
    fields = line.split(": ")
    for field in fields[1:]:
        if _MESSAGE.match(field):
            break
        field = field.strip()
        # a word with neither is more likely a name of something else (`ping: socket: …`)
        if field and " " not in field and ("/" in field or "." in field) and not _QUOTED.search(field):
            out.append(field)
    return out


def _within(path: Path, dirs: Iterable[Path]) -> bool:
    return any(path == d or d in path.parents for d in dirs)


class JailView:
    """What a jailed command sees: `shows(path)`; `masked(path)` (a Read deny rule or a secret
    of /etc covers it)."""

    def __init__(self, roots: Iterable[Path], is_read_denied: Callable[[Path], bool], temp_dir: Path | None = None):
        env_path, home = os.environ.get("PATH"), os.environ.get("HOME")
        roots_real = [Path(os.path.realpath(r)) for r in roots]
        self.visible = list(roots_real)
        self.visible += [Path(d) for d in (*SYSTEM_DIRS, "/etc", "/dev", "/proc")]
        # as the jail decides them: none reached through a directory a command may write
        writable = [*roots_real, *([Path(os.path.realpath(temp_dir))] if temp_dir else [])]
        self.visible += path_dirs(env_path, home, writable)
        self._secrets = [Path(s) for s in SECRETS]
        self._is_read_denied = is_read_denied

    def masked(self, path: Path) -> bool:
        if _within(path, self._secrets):
            return True
        try:
            return self._is_read_denied(path)
        except (OSError, ValueError):
            return False

    def shows(self, path: Path) -> bool:
        if not _within(path, self.visible) or self.masked(path):
            return False
        # a visible name may lead elsewhere (a workspace link to the home directory)
        real = Path(os.path.realpath(path))
        return real == path or (_within(real, self.visible) and not self.masked(real))


def _writable_on_host(path: Path) -> bool:
    """Whether this process may write `path` (or create it in its directory): a refusal of what
    the host allows is the jail's. (A jailed command is a known program judged read-only, so a
    refusal on a path it may read is of a write — not, say, of running a file that is not
    executable.)"""
    target = path if os.path.lexists(path) else path.parent
    return os.access(target, os.W_OK)


def jail_note(output_tail: str, cwd: Path, view: JailView) -> str | None:
    """The note, when a line of the failed command's output shows the jail at work; else None."""
    for line in output_tail.splitlines():
        if _ALWAYS.search(line):
            return NOTE
        missing, denied = _MISSING in line, _DENIED in line
        if not (missing or denied):
            continue
        paths = [Path(os.path.normpath(cwd / c)) for c in _candidates(line)]
        if denied and not paths:
            return NOTE  # a socket or another refusal without a path: the jail has no network
        for p in paths:
            if not view.shows(p):
                return NOTE  # outside what the jail shows, or masked in it
            if denied and _writable_on_host(p):
                return NOTE  # a write the host would allow: refused by the jail
    return None
