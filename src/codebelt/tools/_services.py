"""The per-session services tools share, each built from the session-wide fields of a
`ToolContext` (`ctx.service(task_manager)`): engines get explicit inputs, never the session.

Each factory imports its engine itself: a Read imports neither the sandbox, the shell runner,
the code index nor the checkpoint store."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..checkpoints import Checkpoints
    from ..files.lines import LineIndexCache
    from ..files.state import FileStates
    from ..intel.index import CodeIndex
    from ..intel.lsp import LspManager
    from ..sandbox import Sandbox
    from ..shell.execution.cwd import ShellCwd
    from ..shell.execution.tasks import TaskManager
    from ..tool import ToolContext


def file_states(ctx: ToolContext) -> FileStates:
    """What each Read saw, for read-before-write and stale-file checks."""
    from ..files.state import FileStates

    return FileStates()


def line_indexes(ctx: ToolContext) -> LineIndexCache:
    from ..files.lines import LineIndexCache

    return LineIndexCache()


def shell_cwd(ctx: ToolContext) -> ShellCwd:
    from ..shell.execution.cwd import ShellCwd

    return ShellCwd(ctx.workspace)


def _instance() -> str:
    """A name part no other session shares. A session id may be given (the CLI keeps one per CLI
    session, across processes and at the same time): the cgroup a session kills at close and the
    marker it sweeps must still be its own."""
    return uuid.uuid4().hex[:8]


def sandbox(ctx: ToolContext) -> Sandbox:
    """The session's sandbox, probed once."""
    from ..sandbox import Sandbox, SandboxConfig

    config = SandboxConfig.from_settings(ctx.settings.sandbox, ctx.workspace.roots, ctx.temp_dir,
                                         name=f"codebelt-{ctx.session_id}-{_instance()}")
    return Sandbox(config)


def task_manager(ctx: ToolContext) -> TaskManager:
    from ..shell.execution.runner import build_env
    from ..shell.execution.tasks import TaskManager

    bash = ctx.settings.bash
    services = ctx.services

    def wrapper():
        return services.get(sandbox, ctx).wrapper()

    return TaskManager(
        ctx.results_dir / "shell",
        f"{ctx.session_id}-{_instance()}.",
        build_env(bash.env, list(bash.env_allow), ctx.temp_dir, ""),
        grace_s=bash.kill_grace_ms / 1000,
        max_output_bytes=bash.max_output_bytes or None,
        max_session_output_bytes=bash.max_session_output_bytes or None,
        wrapper=wrapper,
        on_task_end=lambda task: (_end_of_output(task, ctx), ctx.emit("task_end", {"task": task})),
    )


def _end_of_output(task, ctx: ToolContext) -> None:
    """As Claude Code: a background task's output file ends with how the task ended."""
    out = task.process.outcome
    if out is None:
        return
    if out.stop_reason is not None or out.timed_out:
        line = ctx.texts("Bash.output_killed")
    else:
        line = ctx.texts("Bash.output_end", code=out.exit_code)
    try:
        with open(task.output_path, "a", encoding="utf-8") as f:
            f.write(line)
    except OSError:
        pass  # the output stays readable without it


def intel_cache_dir(ctx: ToolContext) -> Path:
    """One index per workspace root and set of Read deny rules (an index built without a deny
    rule must not answer for a session that has it)."""
    base = ctx.settings.intel.cache_dir
    if base is None:
        base = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "codebelt", "intel")
    denies = sorted(r.text for r in ctx.settings.rules if r.behavior == "deny")
    key = hashlib.sha256("\0".join([str(ctx.workspace.root), *denies]).encode()).hexdigest()[:16]
    return Path(base).expanduser() / key


def code_index(ctx: ToolContext) -> CodeIndex:
    """The workspace's tree-sitter index, building in the background from first use."""
    from ..intel.index import CodeIndex

    permissions = ctx.permissions
    index = CodeIndex(
        ctx.workspace.root, intel_cache_dir(ctx),
        include=(lambda p: not permissions.is_read_denied(p)) if permissions.has_rules("deny") else None,
        max_files=ctx.settings.intel.max_files,
    )
    index.start()
    return index


def lsp_manager(ctx: ToolContext) -> LspManager:
    """The session's language servers (from `lsp.servers`, then those found installed), each
    started on first use and closed with the session."""
    from ..intel.lsp import LspManager, detected, from_settings

    cfg = ctx.settings.lsp
    specs = from_settings({name: m.model_dump(by_alias=True) for name, m in cfg.servers.items()})
    if cfg.auto_detect:
        named = {s.name for s in specs}
        specs += [d for d in detected() if d.name not in named]
    if not cfg.enabled:
        specs = []
    return LspManager(ctx.workspace.root, specs, request_timeout=cfg.request_timeout_ms / 1000,
                      start_timeout=cfg.start_timeout_ms / 1000)


def checkpoint_dir(directory: str | None) -> Path:
    if directory:
        return Path(directory).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(base) / "codebelt" / "checkpoints"


def checkpoints(ctx: ToolContext) -> Checkpoints | None:
    """The session's checkpoints (settings `checkpoints.*`); None when turned off."""
    cfg = ctx.settings.checkpoints
    if not cfg.enabled:
        return None
    from ..checkpoints import Checkpoints, Limits

    limits = Limits(max_store_bytes=cfg.max_store_mb << 20, max_age_s=cfg.max_age_days * 86400,
                    max_file_bytes=cfg.max_file_mb << 20, max_call_bytes=cfg.max_call_mb << 20,
                    max_entries=cfg.max_files)
    from ..sandbox.protected import GIT_PROTECTED_DIRS, PROTECTED_DIRS

    placeholders = [str(r / d) for r in ctx.workspace.roots for d in PROTECTED_DIRS]
    placeholders += [str(r / ".git" / d) for r in ctx.workspace.roots for d in GIT_PROTECTED_DIRS]
    return Checkpoints(checkpoint_dir(cfg.directory), [str(r) for r in ctx.workspace.roots], ctx.session_id, limits,
                       placeholders=placeholders, ignore=[ctx.temp_dir, ctx.results_dir])
