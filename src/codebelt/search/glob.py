"""File discovery on ripgrep: `rg --files --glob PATTERN`, newest first, bounded.

Pure library code: the Glob tool resolves and checks paths, then calls `glob_files()`.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from . import ripgrep
from .collect import NewestFiles, Visible

GLOB_META = set("*?[{")


def split_absolute(pattern: str) -> tuple[str | None, str]:
    """`/a/b/**/*.py` → (`/a/b`, `**/*.py`): rg's --glob only takes relative patterns.

    The base is the longest leading run of path components without glob metacharacters.
    Relative patterns return (None, pattern).
    """
    if not os.path.isabs(pattern):
        return None, pattern
    parts = pattern.split("/")
    base: list[str] = []
    for i, part in enumerate(parts):
        if any(ch in GLOB_META for ch in part) or i == len(parts) - 1:
            rest = "/".join(parts[i:])
            break
        base.append(part)
    else:  # pragma: no cover - loop always breaks on the last part
        rest = ""
    return "/".join(base) or "/", rest


@dataclass
class GlobOutcome:
    files: list[str] = field(default_factory=list)  # relative to cwd, newest first
    total: int = 0
    timed_out: bool = False
    cancelled: bool = False
    errors: list[str] = field(default_factory=list)
    hidden: int = 0
    elapsed: float = 0.0
    returncode: int | None = None


def build_args(pattern: str, *, hidden: bool = True, include_ignored: bool = False,
               extra_excludes: tuple[str, ...] = ()) -> list[str]:
    args = ["--no-config", "--files", "--null", "--glob", pattern]
    if hidden:
        args.append("--hidden")
    if include_ignored:
        args.append("--no-ignore")
    # Later globs win in rg, so the always-on exclusions come after the pattern.
    for g in extra_excludes:
        args += ["--glob", g if g.startswith("!") else "!" + g]
    for d in ripgrep.VCS_DIRS:
        args += ["--glob", "!" + d]
    args += ["--", "."]
    return args


def glob_files(
    pattern: str,
    cwd: str,
    *,
    limit: int | None = 100,
    hidden: bool = True,
    include_ignored: bool = False,
    extra_excludes: tuple[str, ...] = (),
    visible: Visible | None = None,
    rg: "str | ripgrep.Ripgrep | None" = None,
    timeout: float = ripgrep.DEFAULT_TIMEOUT,
    kill_grace: float = ripgrep.KILL_GRACE,
    cancel_event: threading.Event | None = None,
    oldest_first: bool = False,
) -> GlobOutcome:
    with NewestFiles(cwd, limit, visible, oldest_first=oldest_first) as c:
        res = ripgrep.run(
            build_args(pattern, hidden=hidden, include_ignored=include_ignored,
                       extra_excludes=extra_excludes),
            cwd, c, rg=rg, timeout=timeout, kill_grace=kill_grace, cancel_event=cancel_event,
        )
        out = GlobOutcome(files=c.paths(), total=c.total, hidden=c.hidden)
    out.timed_out, out.cancelled = res.timed_out, res.cancelled
    out.elapsed, out.returncode = res.elapsed, res.returncode
    if (res.returncode not in (0, 1) and not res.stopped_early) or res.unsafe_ignore_files:
        out.errors = res.errors
    return out
