"""Grep: content search on ripgrep, with Claude Code's input schema and texts (plus fixed_strings)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ..humanize import duration
from ..permissions.requests import PathRequest
from ..search.collect import Line, display
from ..search.ignored import Gate
from ..search.grep import GrepOutcome, GrepQuery, grep, rg_message
from ..tool import Tool, ToolContext, ToolError, ToolInput, ToolResult
from . import _search as common
from ._opening import pinned_dir
from ._search import rg_lines
from .glob import ignored_note

MAX_RESULT_CHARS = 20_000

DESCRIPTION = """A powerful search tool built on ripgrep

Usage:
- ALWAYS use Grep for search tasks. NEVER invoke `grep` or `rg` as a Bash command. The Grep tool has been optimized for correct permissions and access.
- Supports full regex syntax (e.g., "log.*Error", "function\\s+\\w+"). Set fixed_strings: true to search for text literally (no need to escape regex characters).
- Filter files with glob parameter (e.g., "*.js", "**/*.tsx") or type parameter (e.g., "js", "py", "rust")
- Output modes: "content" shows matching lines (path:line:text, with -A/-B/-C context), "files_with_matches" shows only file paths, newest first (default), "count" shows match counts per file
- Results are paged: head_limit entries (default 250; 0 = unlimited) starting at offset. When more remain, the result says which offset to continue from.
- Leaves out files that .gitignore / .ignore rules ignore, also when a glob names them (include_ignored: true searches them too); includes hidden files; skips binary files and VCS directories (.git etc.)
- Pattern syntax: Uses ripgrep (not grep) - literal braces need escaping (use `interface\\{\\}` to find `interface{}` in Go code)
- Multiline matching: By default patterns match within single lines only. For cross-line patterns like `struct \\{[\\s\\S]*?field`, use `multiline: true`
"""


class GrepInput(ToolInput):
    pattern: str = Field(
        description="The regular expression pattern to search for in file contents"
    )
    path: str | None = Field(
        None,
        description="File or directory to search in (rg PATH). Defaults to current working directory.",
    )
    glob: str | None = Field(
        None,
        description='Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to rg --glob',
    )
    output_mode: Literal["content", "files_with_matches", "count"] | None = Field(
        None,
        description='Output mode: "content" shows matching lines (supports -A/-B/-C context, '
        '-n line numbers, head_limit), "files_with_matches" shows file paths (supports '
        'head_limit), "count" shows match counts (supports head_limit). Defaults to '
        '"files_with_matches".',
    )
    before: int | None = Field(
        None, alias="-B", json_schema_extra={"type": "number"},
        description='Number of lines to show before each match (rg -B). Requires output_mode: "content", ignored otherwise.',
    )
    after: int | None = Field(
        None, alias="-A", json_schema_extra={"type": "number"},
        description='Number of lines to show after each match (rg -A). Requires output_mode: "content", ignored otherwise.',
    )
    context_c: int | None = Field(
        None, alias="-C", description="Alias for context.", json_schema_extra={"type": "number"},
    )
    context: int | None = Field(
        None, json_schema_extra={"type": "number"},
        description='Number of lines to show before and after each match (rg -C). Requires output_mode: "content", ignored otherwise.',
    )
    line_numbers: bool | None = Field(
        None, alias="-n",
        description='Show line numbers in output (rg -n). Requires output_mode: "content", ignored otherwise. Defaults to true.',
    )
    case_insensitive: bool | None = Field(
        None, alias="-i", description="Case insensitive search (rg -i)"
    )
    only_matching: bool | None = Field(
        None, alias="-o",
        description='Print only the matched (non-empty) parts of each matching line, one match per output line '
        '(rg -o / --only-matching). Requires output_mode: "content", ignored otherwise. Defaults to false.',
    )
    type: str | None = Field(
        None,
        description="File type to search (rg --type). Common types: js, py, rust, go, java, etc. More efficient than include for standard file types.",
    )
    head_limit: int | None = Field(
        None, json_schema_extra={"type": "number"},
        description='Limit output to first N lines/entries, equivalent to "| head -N". Works across all output modes: content (limits output lines), files_with_matches (limits file paths), count (limits count entries). Defaults to 250 when unspecified. Pass 0 for unlimited (use sparingly — large result sets waste context).',
    )
    offset: int | None = Field(
        None, json_schema_extra={"type": "number"},
        description='Skip first N lines/entries before applying head_limit, equivalent to "| tail -n +N | head -N". Works across all output modes. Defaults to 0.',
    )
    multiline: bool | None = Field(
        None,
        description="Enable multiline mode where . matches newlines and patterns can span lines (rg -U --multiline-dotall). Default: false.",
    )
    fixed_strings: bool | None = Field(
        None,
        description="Treat pattern as a literal string, not a regex (rg -F). Use it when the text contains regex characters like ( [ { . * + ?. Default: false.",
    )
    include_ignored: bool | None = Field(
        None, description="Also search files that .gitignore / .ignore rules ignore (default false)"
    )


class GrepOutput(BaseModel):
    mode: Literal["content", "files_with_matches", "count"]
    numFiles: int = Field(description="Files in this page of results")
    filenames: list[str] = Field(description="Those files, relative to the workspace root")
    content: str | None = Field(None, description="content/count modes: the result lines")
    numLines: int | None = Field(None, description="content mode: lines in this page")
    numMatches: int | None = Field(None, description="count mode: matching lines in all files")
    total: int = Field(description="Entries in the whole result (a lower bound if totalIsLowerBound)")
    totalIsLowerBound: bool = False
    appliedLimit: int | None = None
    appliedOffset: int | None = None
    nextOffset: int | None = Field(None, description="Offset of the next page, when more remain")
    truncated: bool = False
    durationMs: int = 0
    warnings: list[str] = Field(default_factory=list)


class Grep(Tool):
    name = "Grep"
    permission_family = "read"
    description = DESCRIPTION
    Input = GrepInput
    Output = GrepOutput
    read_only = True
    concurrency_safe = True
    idempotent = True
    max_result_chars = None  # bounded by head_limit and the 20,000-character cap
    starts_programs = True
    search_hint = "search file contents with regex (ripgrep)"

    # -- checks ----------------------------------------------------------------------------
    def _target(self, params: GrepInput, ctx: ToolContext) -> Path:
        return ctx.resolve(params.path) if params.path else ctx.workspace.root

    def validate(self, params: GrepInput, ctx: ToolContext) -> None:
        if "\x00" in params.pattern:
            raise ToolError("pattern contains a NUL byte; ripgrep cannot search for it.")
        target = self._target(params, ctx)
        if not target.exists():
            raise ToolError(ctx.texts("Grep.no_path", path=target, cwd=ctx.workspace.root))
        if not (target.is_dir() or target.is_file()):
            # a FIFO or device would block rg (or stream forever) until the timeout
            raise ToolError(
                f"{params.path} is not a regular file or a directory (a pipe, socket or "
                "device); Grep searches files. Give a file or directory path."
            )

    def permission_requests(self, params: GrepInput, ctx: ToolContext) -> list[PathRequest]:
        return [PathRequest(access="read", path=self._target(params, ctx))]

    # -- run -------------------------------------------------------------------------------
    def run(self, params: GrepInput, ctx: ToolContext) -> ToolResult:
        started = time.perf_counter()
        target = self._target(params, ctx)
        mode = params.output_mode or "files_with_matches"
        limit = params.head_limit
        if limit is None or limit < 0:
            limit = ctx.settings.grep.head_limit
        offset = max(params.offset or 0, 0)
        max_chars = ctx.settings.grep.max_result_chars
        q = GrepQuery(
            pattern=params.pattern,
            mode=mode,
            glob=params.glob,
            type=params.type,
            before=params.before,
            after=params.after,
            context=params.context if params.context is not None else params.context_c,
            ignore_case=bool(params.case_insensitive),
            multiline=bool(params.multiline),
            fixed_strings=bool(params.fixed_strings),
            only_matching=bool(params.only_matching),
            offset=offset,
            limit=None if limit == 0 else limit,
            max_chars=max_chars,
            max_columns=ctx.settings.grep.max_columns,
            hidden=ctx.settings.grep.include_hidden,
            include_ignored=params.include_ignored if params.include_ignored is not None else ctx.settings.grep.include_ignored,
            extra_excludes=common.extra_excludes(ctx, "grep"),
        )
        if target.is_dir():
            cwd, rg_target = target, "."
        else:
            cwd, rg_target = target.parent, "./" + target.name
        rg, timeout = common.rg_binary(ctx), common.timeout_seconds(ctx, "grep")
        # rg runs in the directory the decision allowed, held open: not in whatever its name holds now
        with pinned_dir(ctx, cwd, common.visibility(ctx)) as (run_in, visible):
            # A glob overrides ripgrep's ignore rules: the gate keeps the one rule (ignored files stay out).
            gate = None
            if q.glob and not q.include_ignored and target.is_dir():
                gate = Gate(run_in, hidden=q.hidden, extra_excludes=q.extra_excludes, rg=rg, timeout=timeout,
                            cancel_event=ctx.cancel_event, visible=visible)
            outcome = grep(
                q,
                run_in,
                rg_target,
                visible=gate if gate is not None else visible,
                rg=rg,
                timeout=timeout,
                cancel_event=ctx.cancel_event,
            )
        ctx.check_cancelled()
        if gate is not None:
            outcome.hidden = gate.denied
            if gate.ignored and not (outcome.files or outcome.counts or outcome.lines):
                outcome.notes.append(ignored_note(gate.ignored, False, "file").strip("()"))
        return _Formatter(q, outcome, common.display_prefix(ctx, cwd), params, started,
                          ctx.workspace.relative(target), ctx, single_file=not target.is_dir()).result()


class _Formatter:
    """Shapes a GrepOutcome into the text the model reads (Claude Code's, with the true total and
    where to continue when more remain) and the structured data."""

    def __init__(self, q: GrepQuery, o: GrepOutcome, prefix: str, params: GrepInput,
                 started: float, where: str, ctx: ToolContext, single_file: bool = False):
        self.q, self.o, self.prefix, self.params, self.started = q, o, prefix, params, started
        self.where = display(where)
        self.texts = ctx.texts
        self.single_file = single_file

    def p(self, rel: str) -> str:
        return self.prefix + display(rel)

    def result(self) -> ToolResult:
        o, q = self.o, self.q
        if o.timed_out:
            return self._timeout()
        warnings: list[str] = []
        if o.errors:
            shown_any = bool(o.files or o.counts or o.lines or o.total)
            if not shown_any:
                raise ToolError(self.texts("Grep.rg_failed", message=rg_lines(o.errors)))
            warnings.append(
                "ripgrep reported errors, so results may be incomplete:\n" + rg_message(o.errors)
            )
        if o.notes:
            warnings += o.notes[:5]
        if q.mode == "files_with_matches":
            return self._page([self.p(f) for f in o.files], self.texts("Grep.no_files"), warnings)
        if q.mode == "count":
            lines = [f"{self.p(f)}:{n}" for f, n in o.counts]
            return self._page(lines, self.texts("Grep.no_matches"), warnings)
        return self._page(self._content_lines(o.lines), self.texts("Grep.no_matches"), warnings)

    def _content_lines(self, lines: list[Line]) -> list[str]:
        given = self.params.line_numbers  # not given: the profile's default (older releases: off)
        show_numbers = given if given is not None else self.texts.value("Grep.line_numbers", True)
        with_context = any(
            v for v in (self.q.context, self.q.before, self.q.after) if v
        )
        out: list[str] = []
        prev: str | None = None
        for ln in lines:
            if out and with_context and (ln.sep_before or ln.path != prev):
                out.append("--")
            prev = ln.path
            mark = ":" if ln.is_match else "-"
            num = f"{ln.number}" if show_numbers else ""
            # as ripgrep prints one file: no file name; a line's CR is not part of its text
            name = "" if self.single_file else self.p(ln.path) + (mark if show_numbers else "")
            sep = mark if (show_numbers or not self.single_file) else ""
            if not show_numbers and not self.single_file:
                name, sep = self.p(ln.path), mark
            out.append(f"{name}{num}{sep}{ln.text.removesuffix(chr(13))}")
        return out

    def _paging(self, shown: int, truncated: bool) -> str:
        parts = []
        if truncated and self.q.limit is not None:
            parts.append(f"limit: {self.q.limit}")
        if self.q.offset:
            parts.append(f"offset: {self.q.offset}")
        return ", ".join(parts)

    def _page(self, lines: list[str], empty: str, warnings: list[str]) -> ToolResult:
        o, q = self.o, self.q
        offset = q.offset
        is_content = q.mode == "content"
        # entries = result lines, without the "--" separators of content mode
        n_entries = sum(1 for s in lines if not (is_content and s == "--"))
        if n_entries == 0:
            if o.total > 0 and offset >= o.total:
                text = self.texts("Grep.past_end", paging=f"offset: {offset}")
            elif is_content and o.notes and not o.errors:
                text = "\n".join(n.split(": ", 1)[1] if self.single_file and ": " in n else n for n in o.notes[:5])
                warnings = []
            else:
                text = empty
                if q.mode == "count":
                    text += "\n\n" + self.texts("Grep.counts", total=0, occurrences="occurrences", files=0,
                                                 file_word="files", paging="")
            if o.hidden:
                text += f"\n\n({o.hidden} file{'s' if o.hidden != 1 else ''} hidden by Read deny rules.)"
            for w in warnings:
                text += f"\n\nNote: {w}"
            return self._result(text, [], 0, None, False, warnings)
        # the 20,000-character cap: cut at a line boundary and say where to continue
        kept: list[str] = []
        used = 0
        shown = 0
        cut = False
        for s in lines:
            if used + len(s) + 1 > q.max_chars and kept:
                cut = True
                break
            kept.append(s)
            used += len(s) + 1
            if not (is_content and s == "--"):
                shown += 1
        while kept and kept[-1] == "--":
            kept.pop()
        end = offset + shown
        more = cut or o.total_is_lower_bound or end < o.total
        next_offset = end if more else None
        text = "\n".join(kept)
        paging = self._paging(shown, more)
        if q.mode == "files_with_matches":
            head = self.texts("Grep.files", count=shown, files="file" if shown == 1 else "files",
                              paging=" " + paging if paging else "")
            full = head + "\n" + text
        elif q.mode == "count":
            full = text + "\n\n" + self.texts(
                "Grep.counts", total=o.total_matches, occurrences="occurrence" if o.total_matches == 1 else "occurrences",
                files=o.total, file_word="file" if o.total == 1 else "files",
                paging=f" with pagination = {paging}" if paging else "")
        else:
            note = self.texts("Grep.paging", paging=paging) if paging else ""
            full = text + ("\n\n" + note if note else "")
        notes: list[str] = []
        if more:
            total = f"more than {end}" if o.total_is_lower_bound else str(o.total)
            why = ", output capped at {:,} characters".format(q.max_chars) if cut else ""
            notes.append(self.texts("Grep.more", total=total, next=end, why=why))
        if o.hidden:
            notes.append(
                f"({o.hidden} file{'s' if o.hidden != 1 else ''} hidden by Read deny rules.)"
            )
        for w in warnings:
            notes.append(f"Warning: {w}")
        full += ("\n" if q.mode != "files_with_matches" and not paging else "\n") + "\n".join(notes) if notes else ""
        return self._result(full, kept, shown, next_offset, cut, warnings, content_text=text)

    def _result(self, text: str, kept: list[str], shown: int, next_offset: int | None,
                cut: bool, warnings: list[str], content_text: str | None = None) -> ToolResult:
        o, q = self.o, self.q
        if q.mode == "files_with_matches":
            filenames = [self.p(f) for f in o.files[:shown]]
        elif q.mode == "count":
            filenames = [self.p(f) for f, _ in o.counts[:shown]]
        else:
            seen: dict[str, None] = {}
            for ln in o.lines[:shown]:
                seen.setdefault(self.p(ln.path))
            filenames = list(seen)
        data = GrepOutput(
            mode=q.mode,
            numFiles=len(filenames),
            filenames=filenames,
            content=content_text if q.mode != "files_with_matches" else None,
            numLines=shown if q.mode == "content" else None,
            numMatches=o.total_matches if q.mode == "count" else None,
            total=o.total,
            totalIsLowerBound=o.total_is_lower_bound,
            appliedLimit=q.limit if next_offset is not None else None,
            appliedOffset=q.offset or None,
            nextOffset=next_offset,
            truncated=next_offset is not None,
            durationMs=int((time.perf_counter() - self.started) * 1000),
            warnings=warnings,
        )
        return ToolResult(text=text, data=data.model_dump())

    def _timeout(self) -> ToolResult:
        o = self.o
        found = o.total
        secs = o.elapsed
        text = (
            f"Grep timed out after {duration(secs)} while searching {self.where} and was stopped; "
            "the result is incomplete (this is not 'no matches'). Narrow the search: give a "
            "more specific path, a glob or type filter, or a more selective pattern."
        )
        if found:
            text += f" {found} entries had been found before the timeout."
        unsafe = [e for e in o.errors if "ignore files" in e]
        if unsafe:
            text += " " + unsafe[0][0].upper() + unsafe[0][1:] + "."
        return ToolResult(text=text, data={"error": text, "timedOut": True}, is_error=True)
