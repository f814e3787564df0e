"""Content search on ripgrep: argv building, the three output modes, paging, early stop.

Pure library code (no session): the Grep tool maps its input to a `GrepQuery`, calls `grep()`,
and formats the `GrepOutcome`.

Ordering, so that `offset` paging is stable between calls:
- files_with_matches: newest first by mtime (ties by path);
- count: by path;
- content: by path, then line. rg first runs in parallel; if the whole result (up to the page
  end) fits in memory it is sorted here. If it does not, rg is ended and run again with
  `--sort path`, which is single-threaded but lets us stop as soon as the page is complete
  (the total is then reported as "more than N").
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Literal

from . import ripgrep
from .collect import ContentLines, Counts, Line, NewestFiles, Visible

Mode = Literal["content", "files_with_matches", "count"]


@dataclass
class GrepQuery:
    pattern: str
    mode: Mode = "files_with_matches"
    glob: str | None = None
    type: str | None = None
    before: int | None = None
    after: int | None = None
    context: int | None = None
    ignore_case: bool = False
    multiline: bool = False
    fixed_strings: bool = False
    offset: int = 0
    limit: int | None = 250  # None = unlimited
    max_chars: int = 20_000
    max_columns: int = 500
    hidden: bool = True
    include_ignored: bool = False
    extra_excludes: tuple[str, ...] = ()  # more `!glob`s (e.g. from settings)


@dataclass
class GrepOutcome:
    mode: Mode
    # files_with_matches: paths; count: (path, n); content: Line — all relative to rg's cwd
    files: list[str] = field(default_factory=list)
    counts: list[tuple[str, int]] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    total: int = 0  # entries in the whole result (files, files, or lines)
    total_is_lower_bound: bool = False  # stopped early: the total is "more than"
    total_matches: int = 0  # count mode: sum of per-file counts
    timed_out: bool = False
    cancelled: bool = False
    errors: list[str] = field(default_factory=list)  # rg's own messages (exit code 2)
    notes: list[str] = field(default_factory=list)  # e.g. binary file matches
    hidden: int = 0  # files hidden by the visibility filter (Read deny rules)
    elapsed: float = 0.0
    returncode: int | None = None


def split_globs(glob: str | None) -> list[str]:
    """`"*.js,*.ts"` or `"*.js *.ts"` → two globs; brace groups (`*.{ts,tsx}`) stay whole."""
    if not glob:
        return []
    out: list[str] = []
    for part in glob.split():
        if "{" in part and "}" in part:
            out.append(part)
        else:
            out.extend(p for p in part.split(",") if p)
    return out


def build_args(q: GrepQuery, target: str, *, sort_path: bool = False) -> list[str]:
    args = ["--no-config", "--color=never", "--no-heading", "--with-filename", "--null"]
    if q.hidden:
        args.append("--hidden")
    if q.include_ignored:
        args.append("--no-ignore")
    if q.ignore_case:
        args.append("-i")
    if q.fixed_strings:
        args.append("-F")
    if q.multiline:
        args += ["-U", "--multiline-dotall"]
    if q.type:
        args += ["--type", q.type]
    if q.mode == "files_with_matches":
        args.append("--files-with-matches")
    elif q.mode == "count":
        args.append("--count")
    else:
        args += ["-n", f"--max-columns={q.max_columns}", "--max-columns-preview"]
        if q.context is not None:
            args += ["-C", str(q.context)]
        else:
            if q.before is not None:
                args += ["-B", str(q.before)]
            if q.after is not None:
                args += ["-A", str(q.after)]
    if sort_path:
        args.append("--sort=path")
    for g in split_globs(q.glob):
        args += ["--glob", g]
    # Later globs win in rg, so the always-on exclusions come last.
    for g in q.extra_excludes:
        args += ["--glob", g if g.startswith("!") else "!" + g]
    for d in ripgrep.VCS_DIRS:
        args += ["--glob", "!" + d]
    args += ["-e", q.pattern, "--", target]
    return args


def grep(
    q: GrepQuery,
    cwd: str,
    target: str = ".",
    *,
    visible: Visible | None = None,
    rg: str | None = None,
    timeout: float = ripgrep.DEFAULT_TIMEOUT,
    kill_grace: float = ripgrep.KILL_GRACE,
    cancel_event: threading.Event | None = None,
) -> GrepOutcome:
    """Run one search. `target` is relative to `cwd` (`.` or `./name`); results are too."""
    run = lambda args, consumer: ripgrep.run(  # noqa: E731
        args, cwd, consumer, rg=rg, timeout=timeout, kill_grace=kill_grace,
        cancel_event=cancel_event,
    )
    keep = None if q.limit is None else q.offset + q.limit
    out = GrepOutcome(mode=q.mode)
    if q.mode == "files_with_matches":
        c = NewestFiles(cwd, keep, visible)
        res = run(build_args(q, target), c)
        out.files, out.total, out.hidden = c.paths()[q.offset :], c.total, c.hidden
    elif q.mode == "count":
        c2 = Counts(cwd, keep, visible)
        res = run(build_args(q, target), c2)
        out.counts, out.total = c2.entries()[q.offset :], c2.total_files
        out.total_matches, out.notes, out.hidden = c2.total_matches, c2.notes, c2.hidden
    else:
        c3 = ContentLines(
            cwd, offset=q.offset, limit=q.limit, max_chars=q.max_chars, ordered=False,
            visible=visible, cap=keep,
        )
        res = run(build_args(q, target), c3)
        if c3.overflow and not (res.timed_out or res.cancelled):
            c3 = ContentLines(
                cwd, offset=q.offset, limit=q.limit, max_chars=q.max_chars, ordered=True,
                visible=visible,
            )
            first = res.elapsed
            res = run(build_args(q, target, sort_path=True), c3)
            res.elapsed += first
            out.total_is_lower_bound = res.stopped_early
        out.lines, out.total, out.notes, out.hidden = c3.page(), c3.count, c3.notes, c3.hidden
    out.timed_out, out.cancelled = res.timed_out, res.cancelled
    out.elapsed, out.returncode = res.elapsed, res.returncode
    if res.returncode == 2 or (res.returncode not in (0, 1) and not res.stopped_early):
        out.errors = res.errors
    return out


def is_regex_error(errors: list[str]) -> bool:
    return any("regex parse error" in e or "error parsing regex" in e for e in errors)


def rg_message(errors: list[str], limit: int = 12) -> str:
    """rg's stderr, trimmed for a tool result."""
    shown = errors[:limit]
    more = len(errors) - len(shown)
    text = "\n".join(shown)
    if more > 0:
        text += f"\n… and {more} more messages"
    return text
