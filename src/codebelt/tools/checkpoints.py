"""Checkpoints: the model's view of the session's checkpoints — list, rewind, undo.

Off unless the user's settings turn it on (`checkpoints.modelTool`): rewinding is a person's
feature first. A rewind writes files, so the paths it would restore are asked for like any
write (a deny rule on a path keeps the model from rewinding it); it never overwrites a path
someone else changed since, and `force` is not offered to the model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..permissions.requests import PathRequest
from ..tool import Tool, ToolContext, ToolError, ToolInput, ToolResult
from ._services import checkpoints

DESCRIPTION = """Lists and rewinds the checkpoints of this session: before every call that may change the workspace (Write, Edit, MultiEdit, ApplyPatch, and Bash commands that are not read-only) codebelt records what was there, so the change can be undone.

- action "list": the checkpoints, oldest first, with the paths each changed.
- action "rewind" with checkpoint_id: put the workspace back as it was before that checkpoint (it and every later one undone). dry_run: true shows the diff and changes nothing.
- action "undo": undo the last checkpoint (undoing a rewind redoes it).
- A path someone else changed since the checkpoint is left as it is and reported.
"""


class CheckpointsInput(ToolInput):
    action: Literal["list", "rewind", "undo"] = Field(description="list, rewind or undo")
    checkpoint_id: int | None = Field(None, description="For rewind: the checkpoint to go back to before")
    dry_run: bool = Field(False, description="Show what would change (a diff) without changing anything")


class CheckpointsTool(Tool):
    name = "Checkpoints"
    description = DESCRIPTION
    Input = CheckpointsInput
    destructive = True
    search_hint = "undo or rewind changes made by earlier tool calls"
    makes_own_checkpoints = True  # a rewind records its own checkpoint (undo it to redo)

    def validate(self, params: CheckpointsInput, ctx: ToolContext) -> None:
        if params.action == "rewind" and params.checkpoint_id is None:
            raise ToolError("action rewind needs checkpoint_id (see action list).")
        if ctx.service(checkpoints) is None:
            raise ToolError("Checkpoints are turned off in this session (setting checkpoints.enabled).")

    def permission_requests(self, params: CheckpointsInput, ctx: ToolContext) -> list:
        if params.action == "list" or params.dry_run:
            return []
        report = self._report(params, ctx, dry_run=True)
        from pathlib import Path

        return [PathRequest("write", Path(p)) for p in report.restored]

    def _report(self, params: CheckpointsInput, ctx: ToolContext, dry_run: bool):
        book = ctx.service(checkpoints)
        assert book is not None
        try:
            if params.action == "undo":
                return book.undo(session=ctx.session_id, dry_run=dry_run)
            return book.rewind(int(params.checkpoint_id or 0), session=ctx.session_id, dry_run=dry_run)
        except KeyError:
            raise ToolError(f"No checkpoint {params.checkpoint_id}; call with action list to see them.") from None

    def run(self, params: CheckpointsInput, ctx: ToolContext) -> ToolResult:
        book = ctx.service(checkpoints)
        assert book is not None
        if params.action == "list":
            cps = [{**cp.summary(), "paths": [book.relative(c.path) for c in cp.changes]}
                   for cp in book.list(session=ctx.session_id)]
            if not cps:
                return ToolResult("No checkpoints yet in this session.", data={"checkpoints": []})
            lines = [f"{c['id']}: {c['tool']} {' '.join(c['label'].split())[:100]} — "
                     f"{', '.join(c['paths'][:8]) or 'nothing changed'}" + (" …" if len(c["paths"]) > 8 else "")
                     for c in cps]
            return ToolResult("\n".join(lines), data={"checkpoints": cps})
        report = self._report(params, ctx, params.dry_run)
        return ToolResult(report.text(book.relative), data=report.to_dict())
