"""What ApplyPatch and the Bash tool's apply_patch interception share: paths resolved in the
workspace (outside it is refused), an Edit permission request for every file the patch touches,
and the file-state store updated so Edit/Write keep working on the patched files."""

from __future__ import annotations

from pathlib import Path

from ..errors import PatchError, PathError
from ..permissions.requests import PathRequest
from ..tool import ToolContext, ToolResult
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
