"""Content search on ripgrep: argv building, the three output modes, paging, early stop.

Pure library code (no session): the Grep tool maps its input to a `GrepQuery`, calls `grep()`,
and formats the `GrepOutcome`.

Ordering, so that `offset` paging is stable between calls:
- files_with_matches: newest first by mtime (ties by path);
- count: by path;
- content: by path, then line (see `_content`): `rg --sort path` for a short budget, then a
  parallel scan sorted here, then `--sort path` again if the output is too big to sort here.
  Whenever rg is stopped once the page is complete, the total is reported as "more than N".
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Literal

from . import ripgrep
from .collect import ContentLines, Counts, Line, NewestFiles, Visible

Mode = Literal["content", "files_with_matches", "count"]

SORTED_BUDGET = 0.05  # seconds of `rg --sort path` before switching to a parallel scan
SORTED_PROBE = 0.025  # after this long, give up early on `--sort path` if it cannot make it
SORT_IN_MEMORY_BYTES = 2 << 20  # rg output kept for sorting here; beyond it, rg sorts


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
    only_matching: bool = False  # content mode: the matched parts only (rg -o)
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


def build_args(q: GrepQuery, target: str, *, sort_path: bool = False,
               line_buffered: bool = False) -> list[str]:
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
        # a longer line is rg's "[Omitted long matching line]", as Claude Code shows it
        args += ["-n", f"--max-columns={q.max_columns}"]
        if q.only_matching:
            args.append("--only-matching")
        if q.context is not None:
            args += ["-C", str(q.context)]
        else:
            if q.before is not None:
                args += ["-B", str(q.before)]
            if q.after is not None:
                args += ["-A", str(q.after)]
    if sort_path:
        args.append("--sort=path")
    if line_buffered:
        args.append("--line-buffered")
    for g in split_globs(q.glob):
        args += ["--glob", g]
    # Later globs win in rg, so the always-on exclusions come last.
    for g in q.extra_excludes:
        args += ["--glob", g if g.startswith("!") else "!" + g]
    for d in ripgrep.VCS_DIRS:
        args += ["--glob", "!" + d]
    args += ["-e", q.pattern, "--", target]
    return args


def _content(q: GrepQuery, cwd: str, target: str, visible: Visible | None, run,
             sorted_budget: float, sort_bytes: int):
    """Content mode, path-ordered so `offset` pages are stable between calls.

    1. `rg --sort path` (single-threaded, line-buffered so progress shows) for a short
       budget: dense matches fill the page within milliseconds and rg is ended right there.
       It is given up early when, after SORTED_PROBE, the pace so far says the page cannot
       be complete within the budget (a sparse pattern: nothing or little found yet).
    2. Past the budget, rg in parallel, keeping everything up to SORT_IN_MEMORY_BYTES of
       output, sorted here: a sparse pattern costs one parallel scan.
    3. More output than that: `rg --sort path` again, to the end of the page however long.
    """
    def ordered() -> ContentLines:
        return ContentLines(cwd, offset=q.offset, limit=q.limit,
                            max_chars=q.max_chars, ordered=True, visible=visible)

    first_output: list[float] = []

    def promising(elapsed: float) -> bool:
        # Extrapolate the pace since the first line (rg's start-up is a fixed cost, not
        # pace); nothing at all after the probe time means a sparse (or late) pattern.
        done = c.progress()
        if done > 0 and not first_output:
            first_output.append(elapsed)
        if elapsed < SORTED_PROBE:
            return True
        if done <= 0:
            return False
        start = first_output[0]
        return start + (elapsed - start) / done <= sorted_budget

    c = ordered()
    res = run(build_args(q, target, sort_path=True, line_buffered=True), c, sorted_budget,
              promising)
    if not res.over_budget:
        return c, res
    c = ContentLines(cwd, offset=q.offset, limit=q.limit, max_chars=q.max_chars,
                     ordered=False, visible=visible, cap=None, byte_cap=sort_bytes)
    res = run(build_args(q, target), c)
    if not c.overflow or res.timed_out or res.cancelled:
        return c, res
    c = ordered()
    return c, run(build_args(q, target, sort_path=True), c)


def grep(
    q: GrepQuery,
    cwd: str,
    target: str = ".",
    *,
    visible: Visible | None = None,
    rg: "str | ripgrep.Ripgrep | None" = None,
    timeout: float = ripgrep.DEFAULT_TIMEOUT,
    kill_grace: float = ripgrep.KILL_GRACE,
    cancel_event: threading.Event | None = None,
    sorted_budget: float = SORTED_BUDGET,
    sort_in_memory_bytes: int = SORT_IN_MEMORY_BYTES,
) -> GrepOutcome:
    """Run one search. `target` is relative to `cwd` (`.` or `./name`); results are too.

    `sorted_budget` and `sort_in_memory_bytes` tune content mode's strategy (see `_content`);
    every setting gives the same result.
    """
    started = time.monotonic()

    def run(args: list[str], consumer: ripgrep.Consumer, budget: float | None = None,
            keep_going=None):
        left = max(timeout - (time.monotonic() - started), 0.05)
        return ripgrep.run(args, cwd, consumer, rg=rg, timeout=left, kill_grace=kill_grace,
                           cancel_event=cancel_event, budget=budget, keep_going=keep_going)

    keep = None if q.limit is None else q.offset + q.limit
    out = GrepOutcome(mode=q.mode)
    if q.mode == "files_with_matches":
        with NewestFiles(cwd, keep, visible) as c:
            res = run(build_args(q, target), c)
            out.files, out.total, out.hidden = c.paths()[q.offset :], c.total, c.hidden
    elif q.mode == "count":
        c2 = Counts(cwd, keep, visible)
        res = run(build_args(q, target), c2)
        out.counts, out.total = c2.entries()[q.offset :], c2.total_files
        out.total_matches, out.notes, out.hidden = c2.total_matches, c2.notes, c2.hidden
    else:
        c3, res = _content(q, cwd, target, visible, run, sorted_budget,
                           sort_in_memory_bytes)
        out.total_is_lower_bound = res.stopped_early
        out.lines, out.total, out.notes, out.hidden = c3.page(), c3.count, c3.notes, c3.hidden
    res.elapsed = time.monotonic() - started
    out.timed_out, out.cancelled = res.timed_out, res.cancelled
    out.elapsed, out.returncode = res.elapsed, res.returncode
    if res.returncode == 2 or (res.returncode not in (0, 1) and not res.stopped_early):
        out.errors = res.errors
    elif res.unsafe_note():
        out.notes.append(res.unsafe_note())
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
