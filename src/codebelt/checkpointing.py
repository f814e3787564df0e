"""The session's use of the checkpoint engine: which calls get a checkpoint, and how.

A call gets one when it may change the workspace: a tool that declares paths it writes (Write,
Edit, MultiEdit, NotebookEdit, ApplyPatch, apply_patch through Bash) is checkpointed on those
paths; a shell command by what the tracker sees change in the writable roots — except a command
that runs in the read-only jail because it was judged read-only, which cannot write. A command
that goes on in the background gets a checkpoint of its own for what it writes after its call
returned, closed when it ends.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .permissions.requests import CommandRequest, PathRequest

if TYPE_CHECKING:
    from .checkpoints import Checkpoints, Recording
    from .permissions.decision import Decision
    from .tool import Tool, ToolContext, ToolResult


def may_record(tool: Tool) -> bool:
    """Whether a call of `tool` may get a checkpoint (else the store need not even be opened)."""
    return not (tool.read_only or getattr(tool, "makes_own_checkpoints", False))


def begin(checkpoints: Checkpoints, tool: Tool, params: Any, ctx: ToolContext, decision: Decision) -> Recording | None:
    if not may_record(tool):
        return None
    requests = tool.permission_requests(params, ctx)
    if any(isinstance(r, CommandRequest) for r in requests):
        if decision.decided_by == "read-only":
            return None  # jailed, or a program whose every argument is modelled: cannot write
        return checkpoints.begin_command(tool.name, _label(tool, params))
    paths = [str(r.path) for r in requests if isinstance(r, PathRequest) and r.access == "write"]
    if not paths:
        return None
    return checkpoints.begin_files(tool.name, _label(tool, params), _with_new_parents(paths, ctx))


def finish(checkpoints: Checkpoints, rec: Recording, result: ToolResult, task_done) -> int | None:
    cid = rec.finish()
    task_id = (result.data or {}).get("backgroundTaskId")
    if isinstance(task_id, str):
        checkpoints.open_task(task_id, f"{rec.label} (after its call returned)")
        if task_done(task_id):  # ended before its checkpoint was open: close it now
            checkpoints.close_task(task_id)
    return cid


def _label(tool: Tool, params: Any) -> str:
    try:
        return tool.summarize(params)
    except Exception:  # noqa: BLE001 - a label is a courtesy
        return tool.name


def _with_new_parents(paths: list[str], ctx: ToolContext) -> list[str]:
    """The paths, plus the directories a write would create above them (a rewind removes them)."""
    roots = {str(r) for r in ctx.workspace.roots}
    out = list(paths)
    for p in paths:
        parent = os.path.dirname(p)
        while parent not in roots and parent != os.path.dirname(parent) and not os.path.lexists(parent):
            out.append(parent)
            parent = os.path.dirname(parent)
    return out
