"""What ApplyPatch and the Bash tool's apply_patch interception share: paths resolved in the
workspace (outside it is refused), an Edit permission request for every file the patch touches,
and the file-state store updated so Edit/Write keep working on the patched files."""

from __future__ import annotations

from pathlib import Path

from ..errors import PatchError, PathError
from ..permissions.question import Preview
from ..permissions.requests import PathRequest
from ..tool import ToolContext, ToolError, ToolResult
from . import _diagnostics
from ._opening import beneath
from ._services import file_states


def patch_requests(patch: str, base: Path, ctx: ToolContext) -> list[PathRequest]:
    """A write request for every path the patch touches (add, update, delete, move source and
    destination). A patch that does not parse asks for nothing: run_patch reports the error."""
    from ..patch.parser import parse_patch

    try:
        paths = parse_patch(patch).paths()
    except PatchError:
        return []
    out: list[PathRequest] = []
    for text in paths:
        try:
            resolved = ctx.resolve(text, base)
        except PathError:
            continue  # refused by run_patch with a clear message
        req = PathRequest("write", resolved)
        if req not in out:
            out.append(req)
    return out


def run_patch(patch: str, base: Path, ctx: ToolContext) -> ToolResult:
    """Apply the patch with paths taken from `base`. Never raises for a bad patch: the error is
    an is_error result that says what to fix."""
    from ..patch.apply import commit, plan_patch
    from ..patch.paths import workspace_resolver

    try:
        # The paths the permission decision was made on, opened and written beneath their root.
        plan = plan_patch(patch, workspace_resolver(ctx.workspace, base, resolved=ctx.resolve), ctx.workspace.relative,
                          beneath(ctx))
        ctx.check_cancelled()  # the last moment to stop: nothing is written yet
        writes = plan.writes()
        commit(plan)
    except PatchError as e:
        return ToolResult.error(str(e))
    try:
        states = ctx.service(file_states)
        for path, new, _orig, _mode in writes:
            if new is None:
                states.forget(path)
            else:
                states.record_write(path, new, None)  # the path was written a moment ago
    except OSError:
        pass  # the files are written; a stale state only means a later Edit asks for a Read
    changes = plan.changes
    result = ToolResult(text=changes.summary(), data=changes.to_data())
    found = [d for path, new, orig, _mode in writes if new is not None
             for d in _diagnostics.between(ctx, path, orig, new)]
    return _diagnostics.attach(result, ctx, found)


# What a person asked to approve a patch sees of its diff, all files together.
PREVIEW_DIFF_LINES = 160
PREVIEW_DIFF_CHARS = 14_000
_OPERATION = {"add": "A", "update": "M", "delete": "D"}


def check_patch(patch: str, base: Path, ctx: ToolContext) -> None:
    """Refuse, before anyone is asked, a patch that cannot apply (nothing is written)."""
    from ..patch.apply import plan_patch
    from ..patch.paths import workspace_resolver

    try:
        plan_patch(patch, workspace_resolver(ctx.workspace, base), ctx.workspace.relative)
    except PatchError as e:
        raise ToolError(str(e)) from None


def patch_preview(patch: str, base: Path, ctx: ToolContext) -> Preview | None:
    """Every file the patch touches with its operation and line counts, and a readable diff of
    them all, bounded (a fair share per file) with the totals: what a person needs to judge it."""
    from ..patch.apply import plan_patch
    from ..patch.paths import workspace_resolver

    try:
        files = plan_patch(patch, workspace_resolver(ctx.workspace, base), ctx.workspace.relative).changes.files
    except PatchError:
        return None
    rows, diffs = [], []
    counts = {"add": 0, "update": 0, "delete": 0}
    total_added = total_removed = 0
    for f in files:
        counts[f.action] += 1
        lines = f.diff.splitlines()
        added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
        removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
        total_added += added
        total_removed += removed
        name = f"{f.move_from_display} -> {f.display}" if f.move_from_display else f.display
        rows.append(f"{_OPERATION[f.action]} {name}  (+{added} -{removed})")
        diffs.append(lines or [f"(no change to the text of {f.display})"])
    shown, budget_lines, budget_chars = [], PREVIEW_DIFF_LINES, PREVIEW_DIFF_CHARS
    total_lines = sum(len(d) for d in diffs)
    for k, lines in enumerate(diffs):
        share = max(8, budget_lines // (len(diffs) - k))  # what is left, split among the rest
        part = []
        for line in lines[:share]:
            if budget_chars - len(line) < 0:
                break
            part.append(line)
            budget_chars -= len(line) + 1
        if len(part) < len(lines):
            part.append(f"… {len(lines) - len(part):,} more diff lines of this file not shown")
        shown += part
        budget_lines -= min(len(lines), share)
    parts = [f"{n} {word}" for word, n in (("added", counts["add"]), ("changed", counts["update"]),
                                            ("deleted", counts["delete"])) if n]
    heading = (f"a patch of {len(files)} file{'s' if len(files) != 1 else ''}: {', '.join(parts)}; "
               f"+{total_added} -{total_removed} lines")
    diff_title = "Changes (unified diff)" if len(shown) >= total_lines else \
        f"Changes (unified diff; {PREVIEW_DIFF_LINES:,}-line preview of {total_lines:,} lines)"
    return Preview(heading, (("Files (A added, M changed, D deleted)", "\n".join(rows)),
                             (diff_title, "\n".join(shown))))
