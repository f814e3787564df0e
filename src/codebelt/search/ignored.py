"""One rule for ignore files: a file that .gitignore / .ignore / .rgignore rules leave out is left
out of Glob and Grep results, whatever glob the call gives.

ripgrep's `--glob` overrides ignore rules (`--glob '*.log'` lists a git-ignored `debug.log`, but
`build/**` finds nothing in an ignored `build/`), so a glob alone cannot give that rule. Here the
files rg lists with no glob at all — the set its ignore rules keep — are collected in a thread
beside the main search, and the main search keeps only paths in that set (`Gate`). `count_left_out`
then says how many matches the rule left out, so a result can say so instead of a bare "No files
found". Both are bounded: past `MAX_FILES` or a failure the gate stands aside (and says so).
"""

from __future__ import annotations

import os
import threading
from typing import Callable

from . import ripgrep

MAX_FILES = 2_000_000  # unignored files held for one call; past this the gate stands aside
COUNT_CAP = 1_000  # left-out matches counted at most (then "more than")
COUNT_TIMEOUT = 3.0


def _listing_args(hidden: bool, extra_excludes: tuple[str, ...], no_ignore: bool = False,
                  pattern: str | None = None) -> list[str]:
    args = ["--no-config", "--files", "--null"]
    if pattern is not None:
        args += ["--glob", pattern]
    if hidden:
        args.append("--hidden")
    if no_ignore:
        args.append("--no-ignore")
    for g in extra_excludes:
        args += ["--glob", g if g.startswith("!") else "!" + g]
    for d in ripgrep.VCS_DIRS:
        args += ["--glob", "!" + d]
    return args + ["--", "."]


class _Collect(ripgrep.RecordReader):
    def __init__(self, cwd: str, limit: int):
        super().__init__(b"\0", max_record=64 * 1024)
        self.cwd = cwd
        self.limit = limit
        self.paths: set[str] = set()
        self.over = False

    def on_record(self, record: bytes, clipped: bool) -> bool:
        if record and not clipped:
            self.paths.add(os.path.normpath(os.path.join(self.cwd, os.fsdecode(record))))
            if len(self.paths) > self.limit:
                self.over = True
                return False
        return True


class Gate:
    """A `Visible` predicate: kept = not ignored (and visible to the caller's own predicate).

    The unignored set is listed in a thread started at once, so it runs beside the main search;
    the first question waits for it. `ignored` counts paths left out for the ignore rules,
    `denied` those the caller's predicate refused (Read deny rules)."""

    def __init__(self, cwd: str, *, hidden: bool, extra_excludes: tuple[str, ...], rg: "str | ripgrep.Ripgrep",
                 timeout: float, cancel_event: threading.Event | None = None,
                 visible: Callable[[str], bool] | None = None, max_files: int = MAX_FILES):
        self.cwd = cwd
        self.visible = visible
        self.ignored = 0
        self.denied = 0
        self.failed: str | None = None  # why the ignore rules could not be applied
        self._paths: set[str] | None = None
        self._done = threading.Event()
        self._args = (_listing_args(hidden, extra_excludes), rg, timeout, cancel_event, max_files)
        threading.Thread(target=self._list, name="codebelt-unignored", daemon=True).start()

    def _list(self) -> None:
        args, rg, timeout, cancel_event, max_files = self._args
        c = _Collect(self.cwd, max_files)
        try:
            res = ripgrep.run(args, self.cwd, c, rg=rg, timeout=timeout, cancel_event=cancel_event)
            if c.over:
                self.failed = f"more than {max_files:,} files"
            elif res.timed_out or res.cancelled or res.returncode not in (0, 1, 2):
                self.failed = "listing the files timed out" if res.timed_out else "listing the files failed"
            else:
                self._paths = c.paths
        except Exception as e:  # noqa: BLE001 - the gate stands aside rather than failing the call
            self.failed = f"{type(e).__name__}: {e}"
        finally:
            self._done.set()

    def __call__(self, abs_path: str) -> bool:
        self._done.wait()
        if self._paths is not None and os.path.normpath(abs_path) not in self._paths:
            self.ignored += 1
            return False
        if self.visible is not None and not self.visible(abs_path):
            self.denied += 1
            return False
        return True

    def left_out(self, pattern: str, *, hidden: bool, extra_excludes: tuple[str, ...], rg: "str | ripgrep.Ripgrep",
                 cancel_event: threading.Event | None = None) -> tuple[int, bool]:
        """(ignored files the pattern matches, whether there are more than that) — counted with
        `--no-ignore`, bounded in count and time."""
        self._done.wait()
        if self._paths is None:
            return 0, False
        paths, cap = self._paths, COUNT_CAP
        found = [0]

        class Count(ripgrep.RecordReader):
            def on_record(inner, record: bytes, clipped: bool) -> bool:  # noqa: N805
                if record and os.path.normpath(os.path.join(self.cwd, os.fsdecode(record))) not in paths:
                    found[0] += 1
                return found[0] <= cap

        ripgrep.run(_listing_args(hidden, extra_excludes, no_ignore=True, pattern=pattern), self.cwd,
                    Count(b"\0", max_record=64 * 1024), rg=rg, timeout=COUNT_TIMEOUT, cancel_event=cancel_event)
        return min(found[0], cap), found[0] > cap
