"""Glob: find files by name pattern (rg --files --glob), newest first."""

from __future__ import annotations

import time
from pathlib import Path

from ..humanize import duration
from ..permissions.requests import PathRequest
from ..search.collect import display
from ..search.glob import GLOB_META, glob_files, split_absolute
from ..search.grep import rg_message
from ._search import rg_lines
from ..search.ignored import Gate
from ..tool import DeclaredInput, DeclaredModel, Param, Tool, ToolContext, ToolError, ToolResult
from . import _search as common
from ._opening import pinned_dir


DESCRIPTION = """- Fast file pattern matching tool that works with any codebase size
- Supports glob patterns like "**/*.js" or "src/**/*.ts"
- Returns matching file paths sorted by modification time (oldest first), at most 100
- Leaves out files that .gitignore / .ignore rules ignore, whatever the pattern (pass include_ignored: true to list them too, e.g. build output); includes hidden files; never lists VCS directories (.git etc.)
- Use this tool when you need to find files by name patterns
- You can call multiple tools in a single response. It is always better to speculatively perform multiple searches in parallel if they are potentially useful.
"""


class GlobInput(DeclaredInput):
    pattern: str = Param(description="The glob pattern to match files against")
    path: str | None = Param(
        None,
        description='The directory to search in. If not specified, the current working directory will be '
        'used. IMPORTANT: Omit this field to use the default directory. DO NOT enter "undefined" '
        'or "null" - simply omit it for the default behavior. Must be a valid directory path if '
        'provided.',
    )
    include_ignored: bool | None = Param(
        None, description="Also list files that .gitignore / .ignore rules ignore (default false)"
    )


class GlobOutput(DeclaredModel):
    durationMs: int = Param(description="Time taken to execute the search in milliseconds")
    numFiles: int = Param(description="Total number of files found")
    filenames: list[str] = Param(description="Array of file paths that match the pattern")
    truncated: bool = Param(description="Whether results were truncated (limited to 100 files)")
    ignoredLeftOut: int | None = Param(None, description="Matching files left out because ignore rules ignore them")


def ignored_note(count: int, more: bool, what: str) -> str:
    n = f"{'more than ' if more else ''}{count:,}"
    return (f"({n} matching {what}{'s' if count != 1 or more else ''} left out because .gitignore / .ignore "
            "rules ignore them; pass include_ignored: true to include them.)")


def _split_relative(pattern: str) -> tuple[str | None, str]:
    """`../lib/*.py` → (`../lib`, `/*.py`): rg only walks down from its cwd, so leading `..`
    and the literal directories after it move into the base; `/` keeps the rest anchored."""
    if not (pattern.startswith("../") or pattern == ".."):
        return None, pattern
    parts = pattern.split("/")
    base: list[str] = []
    for i, part in enumerate(parts):
        if i == len(parts) - 1 or any(ch in GLOB_META for ch in part):
            return "/".join(base), "/" + "/".join(parts[i:])
        base.append(part)
    return "/".join(base), "/*"  # pragma: no cover


class Glob(Tool):
    name = "Glob"
    permission_family = "read"
    description = DESCRIPTION
    Input = GlobInput
    Output = GlobOutput
    read_only = True
    concurrency_safe = True
    idempotent = True
    max_result_chars = None  # at most 100 paths (configurable); never evicted
    starts_programs = True
    search_hint = "find files by name pattern or wildcard"

    def _plan(self, params: GlobInput, ctx: ToolContext) -> tuple[Path, str]:
        """(directory rg runs in, pattern relative to it)."""
        base, pattern = split_absolute(params.pattern.strip() or "**/*")  # as Claude Code: "" lists everything
        if base is not None:
            return ctx.resolve(base), pattern
        directory = ctx.resolve(params.path) if params.path else ctx.workspace.root
        sub, pattern = _split_relative(pattern)
        if sub:
            directory = ctx.resolve(sub, directory)
        if pattern.startswith("./"):
            pattern = pattern[1:]  # "./*.py" = only the top level: anchor it
        return directory, pattern

    def validate(self, params: GlobInput, ctx: ToolContext) -> None:
        if "\x00" in params.pattern:
            raise ToolError("pattern contains a NUL byte.")
        directory, _ = self._plan(params, ctx)
        if not directory.exists():
            raise ToolError(ctx.texts("Glob.no_directory", path=directory, cwd=ctx.workspace.root))
        if not directory.is_dir():
            raise ToolError(ctx.texts("Glob.not_directory", path=params.path or directory))

    def permission_requests(self, params: GlobInput, ctx: ToolContext) -> list[PathRequest]:
        directory, _ = self._plan(params, ctx)
        return [PathRequest(access="read", path=directory)]

    def run(self, params: GlobInput, ctx: ToolContext) -> ToolResult:
        started = time.perf_counter()
        directory, pattern = self._plan(params, ctx)
        # rg lists the directory the decision allowed, held open: not whatever its name holds now
        with pinned_dir(ctx, directory, common.visibility(ctx)) as (run_in, visible):
            return self._list(params, ctx, started, directory, pattern, run_in, visible)

    def _list(self, params: GlobInput, ctx: ToolContext, started: float, directory: Path, pattern: str,
              run_in: str, visible) -> ToolResult:
        limit = ctx.settings.glob.max_results
        include_ignored = params.include_ignored if params.include_ignored is not None else ctx.settings.glob.include_ignored
        hidden, excludes, rg = ctx.settings.glob.include_hidden, common.extra_excludes(ctx, "glob"), common.rg_binary(ctx)
        timeout = common.timeout_seconds(ctx, "glob")
        gate = None if include_ignored else Gate(run_in, hidden=hidden, extra_excludes=excludes, rg=rg,
                                                 timeout=timeout, cancel_event=ctx.cancel_event,
                                                 visible=visible)
        outcome = glob_files(
            pattern,
            run_in,
            limit=limit,
            hidden=hidden,
            include_ignored=include_ignored,
            extra_excludes=excludes,
            visible=gate if gate is not None else visible,
            rg=rg,
            timeout=timeout,
            cancel_event=ctx.cancel_event,
            oldest_first=True,  # Claude Code's order
        )
        ctx.check_cancelled()
        where = display(ctx.workspace.relative(directory))
        if outcome.timed_out:
            msg = (
                f"Glob timed out after {duration(outcome.elapsed)} listing {where}; the result is "
                "incomplete (this is not 'no files'). Use a more specific path or pattern."
            )
            raise ToolError(msg, timedOut=True)
        if outcome.errors and not outcome.total:
            raise ToolError(ctx.texts("Glob.rg_failed", message=rg_lines(outcome.errors)))
        prefix = common.display_prefix(ctx, directory)
        filenames = [prefix + display(f) for f in outcome.files]
        truncated = outcome.total > len(filenames)
        text = "\n".join(filenames) if filenames else ctx.texts("Glob.none")
        if outcome.errors:  # exit code 2 with results: unreadable directories and the like
            text += "\n\nWarning: ripgrep reported errors, so results may be incomplete:\n" + (
                rg_message(outcome.errors, limit=5)
            )
        if truncated:
            text += "\n" + ctx.texts("Glob.truncated", shown=len(filenames), total=outcome.total,
                                     rest=outcome.total - len(filenames))
        left_out = None
        if gate is not None and not filenames and not outcome.timed_out:  # not a bare "No files found"
            count, more = gate.left_out(pattern, hidden=hidden, extra_excludes=excludes, rg=rg,
                                        cancel_event=ctx.cancel_event)
            if count:
                left_out = count
                text += "\n" + ignored_note(count, more, "file")
        data = GlobOutput(
            durationMs=int((time.perf_counter() - started) * 1000),
            numFiles=len(filenames),
            filenames=filenames,
            truncated=truncated,
            ignoredLeftOut=left_out,
        )
        return ToolResult(text=text, data=data.model_dump())


__all__ = ["Glob"]
