"""The per-session services tools share, each built from the session-wide fields of a
`ToolContext` (`ctx.service(task_manager)`): engines get explicit inputs, never the session."""

from __future__ import annotations

from ..files.lines import LineIndexCache
from ..files.state import FileStates
from ..sandbox import Sandbox, SandboxConfig
from ..shell.execution.cwd import ShellCwd
from ..shell.execution.runner import build_env
from ..shell.execution.tasks import TaskManager
from ..tool import ToolContext


def file_states(ctx: ToolContext) -> FileStates:
    """What each Read saw, for read-before-write and stale-file checks."""
    return FileStates()


def line_indexes(ctx: ToolContext) -> LineIndexCache:
    return LineIndexCache()


def shell_cwd(ctx: ToolContext) -> ShellCwd:
    return ShellCwd(ctx.workspace)


def sandbox(ctx: ToolContext) -> Sandbox:
    """The session's sandbox, probed once."""
    config = SandboxConfig.from_settings(ctx.settings.sandbox, ctx.workspace.roots, ctx.temp_dir,
                                         name=f"codebelt-{ctx.session_id}")
    return Sandbox(config)


def task_manager(ctx: ToolContext) -> TaskManager:
    bash = ctx.settings.bash
    services = ctx.services

    def wrapper():
        return services.get(sandbox, ctx).wrapper()

    return TaskManager(
        ctx.results_dir / "shell",
        f"{ctx.session_id}.",
        build_env(bash.env, list(bash.env_allow), ctx.temp_dir, ""),
        grace_s=bash.kill_grace_ms / 1000,
        max_output_bytes=bash.max_output_bytes or None,
        wrapper=wrapper,
        on_task_end=lambda task: ctx.emit("task_end", {"task": task}),
    )
