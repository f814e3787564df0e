"""The per-session services tools share, each built from the session-wide fields of a
`ToolContext` (`ctx.service(task_manager)`): engines get explicit inputs, never the session.

Each factory imports its engine itself: a Read imports neither the sandbox, the shell runner,
the code index nor the checkpoint store."""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..checkpoints import Checkpoints
    from ..files.lines import LineIndexCache
    from ..files.state import FileStates
    from ..intel.index import CodeIndex
    from ..intel.lsp import LspManager
    from ..network import Network
    from ..sandbox import Sandbox
    from ..sandbox.helpers import HelperProfile
    from ..search import ripgrep
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


def network(ctx: ToolContext) -> Network:
    """The session's network policy in force (sandbox.network): the proxy sandboxed commands
    reach allowed names through, and WebFetch's gate; every connection goes to the audit log."""
    from ..network.service import Network
    from ._network import policy_from_settings

    emit = ctx.emit
    return Network(policy_from_settings(ctx.settings.sandbox.network),
                   on_record=lambda record: emit("connection", {"record": record}))


def task_manager(ctx: ToolContext) -> TaskManager:
    from ..shell.execution.runner import build_env
    from ..shell.execution.tasks import TaskManager

    bash = ctx.settings.bash
    services, permissions = ctx.services, ctx.permissions

    def wrapper():
        # Read-deny paths masked in the write sandbox too, as each command starts
        return services.get(sandbox, ctx).wrapper(permissions.read_denied_paths)

    return TaskManager(
        ctx.results_dir / "shell",
        f"{ctx.session_id}-{_instance()}.",
        build_env(bash.env, list(bash.env_allow), ctx.temp_dir, ""),
        grace_s=bash.kill_grace_ms / 1000,
        max_output_bytes=bash.max_output_bytes or None,
        max_session_output_bytes=bash.max_session_output_bytes or None,
        wrapper=wrapper,
        on_task_end=lambda task: (_end_of_output(task, ctx), ctx.emit("task_end", {"task": task})),
        max_interactive=bash.max_interactive,
    )


def _end_of_output(task, ctx: ToolContext) -> None:
    """As Claude Code: a background task's output file ends with how the task ended. Not an exec
    session's: its output is read through write_stdin, as the program printed it."""
    out = task.process.outcome
    if out is None or task.how == "session":
        return
    if out.stop_reason is not None or out.timed_out:
        line = ctx.texts("Bash.output_killed")
    else:
        line = ctx.texts("Bash.output_end", code=out.exit_code)
    # the output file, and the terminal's own bytes behind it when the file is their transcript
    # (TaskOutput renders those)
    for path in dict.fromkeys((task.output_path, task.process.spool_path)):
        try:
            with open(path, "a", encoding="utf-8") as f:
                f.write(line)
        except OSError:
            pass  # the output stays readable without it


class RipgrepRuns:
    """How this session runs ripgrep: the binary its settings name, confined as the call's
    decision says — the read-only jail with the session's Read-deny paths masked (asked at each
    run: they change) plus the ignore files found unsafe so far (a FIFO, a link to a device:
    once one made a search hang or die, later searches leave it out) — and told to skip the
    masked paths, so it never opens them (under Landlock it would report each as unreadable,
    naming it; unjailed it would read what then has to be filtered out)."""

    def __init__(self, path: str, sandbox, masks, roots: list[Path]):
        from ..sandbox.helpers import HelperProfile
        from ..search.ignore_files import outside_reads, refused_parents

        self.path = path
        self._sandbox = sandbox  # () -> Sandbox, made on first jailed run
        self._masks = masks
        self._roots = roots
        self._unsafe: set[Path] = set()
        files, markers = outside_reads(roots)
        self._refused_parents = refused_parents
        home, xdg = os.environ.get("HOME"), os.environ.get("XDG_CONFIG_HOME")
        self.profile = HelperProfile(
            "ripgrep", readable=(Path(path), *files), system=False, prefer_landlock=True,
            env=tuple((k, v) for k, v in (("HOME", home), ("XDG_CONFIG_HOME", xdg)) if v),
            markers=tuple(markers), cgroups=False, no_processes=True,
        )

    def program(self, confinement: str) -> ripgrep.Ripgrep:
        return self._program(confinement != "none", ())

    def _program(self, jailed: bool, extra: tuple[Path, ...]) -> ripgrep.Ripgrep:
        from ..search import ripgrep

        self._unsafe.update(extra)

        def wrap(argv, cwd, env):
            # The search root by its real path: rg may be started in it through a descriptor the
            # caller holds (/proc/self/fd/N, which the child enters before anything else runs);
            # the jail is built from real paths, and inside bwrap that name means nothing.
            where = Path(os.path.realpath(cwd))
            masks = [*self._masks(), *sorted(self._unsafe)]
            argv = _skipping(argv, masks, where)
            if not jailed:
                # another user's ignore files or repository above the roots (left out of the
                # jail's view): unjailed, rg would read them itself, so it reads no parent's at
                # all. Looked at each run: a few lstat calls, and a `.git` may appear any time.
                if "--" in argv and self._refused_parents(self._roots):
                    at = len(argv) - 1 - argv[::-1].index("--")
                    argv = [*argv[:at], "--no-ignore-parent", *argv[at:]]
                return argv, env, None
            profile = self.profile
            if not any(where == r or r in where.parents for r in self._roots):
                # a search the decision allowed outside the workspace (the results directory,
                # an approved path): that tree is visible too
                profile = replace(profile, readable=(*profile.readable, where))
            helper = self._sandbox().helper(profile, masks)
            if helper is None:
                raise ripgrep.RipgrepError("ripgrep may run only in the read-only jail, and no jail works here")
            return helper(argv, where, env)

        # masking an ignore file takes the jail (a glob only leaves files out of the search;
        # rg still reads the ignore files of every directory it enters)
        return ripgrep.Ripgrep(self.path, wrap, remask=(lambda more: self._program(True, more)) if jailed else None)


_GLOB_SPECIAL = re.compile(r"([\\*?\[\]{}])")


def _skipping(argv: list[str], masks: list[Path], cwd: Path) -> list[str]:
    """argv with `--glob !/<path>` for each masked path under `cwd` (anchored at the search
    root, glob characters escaped), before the `--` that ends rg's options."""
    globs: list[str] = []
    for m in masks:
        try:
            rel = Path(m).relative_to(cwd)
        except ValueError:
            continue
        if rel.parts:
            globs += ["--glob", "!/" + _GLOB_SPECIAL.sub(r"\\\1", rel.as_posix())]
    if not globs or "--" not in argv:
        return argv
    at = len(argv) - 1 - argv[::-1].index("--")
    return [*argv[:at], *globs, *argv[at:]]


def ripgrep_runs(ctx: ToolContext) -> RipgrepRuns:
    from ..search import ripgrep

    search, services, permissions = ctx.settings.search, ctx.services, ctx.permissions
    path = ripgrep.locate(search.ripgrep_path or None, search.use_system_ripgrep)
    return RipgrepRuns(path, lambda: services.get(sandbox, ctx), permissions.read_denied_paths,
                       list(ctx.workspace.roots))


def intel_cache_dir(ctx: ToolContext) -> Path:
    """One index per workspace root and set of Read deny rules (an index built without a deny
    rule must not answer for a session that has it)."""
    base = ctx.settings.intel.cache_dir
    if base is None:
        base = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "codebelt", "intel")
    denies = sorted(r.text for r in ctx.settings.rules if r.behavior == "deny")
    key = hashlib.sha256("\0".join([str(ctx.workspace.root), *denies]).encode()).hexdigest()[:16]
    return Path(base).expanduser() / key


def _listing_rg(ctx: ToolContext) -> ripgrep.Ripgrep | None:
    """The index lists the workspace with ripgrep, confined like the call that made the index."""
    from ..errors import RipgrepNotFound

    try:
        runs = ctx.service(ripgrep_runs)
    except RipgrepNotFound:
        return None  # the index says so when it lists
    return runs.program(ctx.decision.confinement if ctx.decision is not None
                        else ctx.permissions.confinement.for_helpers())


def code_index(ctx: ToolContext) -> CodeIndex:
    """The workspace's tree-sitter index, building in the background from first use."""
    from ..intel.index import CodeIndex

    permissions = ctx.permissions
    index = CodeIndex(
        ctx.workspace.root, intel_cache_dir(ctx),
        include=(lambda p: not permissions.is_read_denied(p)) if permissions.has_rules("deny") else None,
        max_files=ctx.settings.intel.max_files,
        rg=_listing_rg(ctx),
        pause=ctx.services.calls,  # the build gives way to the session's calls, unless one waits for it
    )
    index.start()
    return index


def lsp_manager(ctx: ToolContext) -> LspManager:
    """The session's language servers (from `lsp.servers`, then those found installed), each
    started on first use, in the read-only jail when the call's decision confines helpers
    there, and closed with the session."""
    from ..intel.lsp import LspManager, detected, from_settings
    from ..sandbox.helpers import allowed_env

    cfg = ctx.settings.lsp
    specs = from_settings({name: m.model_dump(by_alias=True) for name, m in cfg.servers.items()})
    if cfg.auto_detect:
        named = {s.name for s in specs}
        specs += [d for d in detected() if d.name not in named]
    if not cfg.enabled:
        specs = []
    confinement = ctx.decision.confinement if ctx.decision is not None else ctx.permissions.confinement.for_helpers()
    services, permissions = ctx.services, ctx.permissions
    jail = refuse = None
    if confinement != "none":
        def jail(spec):
            return services.get(sandbox, ctx).helper(server_profile(spec, (*ctx.workspace.roots, ctx.temp_dir)),
                                                     permissions.read_denied_paths())
    else:
        def refuse(spec):
            if spec.runs_workspace_programs:
                return (f"not started: {spec.name} runs programs the workspace supplies (an interpreter, its "
                        "own packages), and no read-only jail works here to contain them")
            if permissions.has_rules("deny"):
                return ("not started: a Read deny rule covers files here, and a language server reads every "
                        "file it is pointed at; only the read-only jail (not available here) hides them from it")
            return None
    return LspManager(ctx.workspace.root, specs, request_timeout=cfg.request_timeout_ms / 1000,
                      start_timeout=cfg.start_timeout_ms / 1000, jail=jail, refuse=refuse,
                      env=allowed_env(os.environ),
                      include=(lambda p: not permissions.is_read_denied(p)) if permissions.has_rules("deny") else None)


def warm_start(services, ctx: ToolContext) -> None:
    """At session start (a thread of its own): the index begins its refresh and the servers of
    the languages found in the workspace start, within the session's settings and confinement
    (only servers the user's settings or this machine provide; the workspace picks none).
    Each step waits its turn: while a call runs, and until none has for a moment, nothing begins
    (the first call of a session does not pay for what is done for later ones); a call that
    needs the index or a server starts it itself."""
    from ..errors import CodebeltError, SessionClosed

    try:
        services.calls.wait("code index")
        services.get(code_index, ctx)
        if ctx.settings.lsp.enabled:
            services.calls.wait("language servers")
            services.get(lsp_manager, ctx).prewarm()
    except (CodebeltError, SessionClosed, OSError, RuntimeError):
        pass  # the first call meets the same problem and reports it


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
                       placeholders=placeholders, ignore=[ctx.temp_dir, ctx.results_dir], exclude=cfg.exclude,
                       use_git=cfg.git_objects)


def server_profile(spec, untrusted: "tuple[Path, ...]" = ()) -> HelperProfile:
    """A language server in the jail: its installation readable, a scratch of its own for caches,
    its settings' environment, and under Landlock a reaper above it (or, without signal scoping,
    itself a subreaper) so that it ends with all it started.
    `untrusted`: the directories a command may write (the workspace roots, TMPDIR). A server found
    there (an activated `.venv/bin` on PATH) is the repository's program: nothing it names or
    links to is made readable, and no directory reached through them is (the roots are visible
    anyway)."""
    from ..sandbox.helpers import HelperProfile, install_dirs
    from ..sandbox.jail import resolved_outside

    readable = install_dirs(spec.command, untrusted)
    for arg in spec.args:  # a script or a config file its command line names
        if arg.startswith("/") and os.path.exists(arg):
            readable += install_dirs(arg, untrusted) if os.path.isfile(arg) else [Path(arg)]
    if untrusted:
        readable = [p for p in readable if resolved_outside(str(p), untrusted, directory=False) is not None]
    return HelperProfile(f"lsp-{spec.name}", readable=tuple(dict.fromkeys(readable)), system=True,
                         long_lived=True, env=tuple(spec.env.items()))
