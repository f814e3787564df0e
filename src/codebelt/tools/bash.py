"""Bash: run a shell command in the workspace, foreground or as a background task.

The engines are codebelt.shell.analysis (the command's one parse) and codebelt.shell.execution
(runner, tasks, spool, cwd); this module shapes the call: input checks, the permission request
(the permission engine decides on the analysis), apply_patch interception, waiting, and the
result text.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..errors import ShellError
from ..permissions.requests import CommandRequest
from ..sandbox.protected import Guarded, guarded, undo_creations
from ..shell.analysis.parse import Script, parse
from ..shell.analysis.patch_call import PatchInvocation, find_invocation
from ..shell.execution.cwd import OUTSIDE, ShellCwd
from ..shell.execution.environment import secret_references, unasked_environ
from ..shell.execution.foreground import wait_foreground
from ..shell.execution.pty_session import Pty
from ..shell.execution.runner import Outcome, ShellProcess
from ..shell.execution.spool import Rendered, Progress, render
from ..shell.execution.tasks import Task, TaskManager
from ..tool import Tool, ToolContext, ToolError, ToolInput, ToolResult
from ._network import asker, refusal_note
from ._patching import check_patch, patch_preview, patch_requests, run_patch
from ._services import network, sandbox, shell_cwd, task_manager

MAX_RESULT_CHARS = 30_000
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t\r\f\v]*\n)+")

DESCRIPTION = """Executes a given bash command in a persistent working directory with optional timeout, ensuring proper handling and security measures.

Before executing the command, please follow these steps:

1. Directory Verification:
   - If the command will create new directories or files, first use `ls` to verify the parent directory exists and is the correct location
   - For example, before running "mkdir foo/bar", first use `ls foo` to check that "foo" exists and is the intended parent directory

2. Command Execution:
   - Always quote file paths that contain spaces with double quotes (e.g., cd "path with spaces/file.txt")
   - Examples of proper quoting:
     - cd "/Users/name/My Documents" (correct)
     - cd /Users/name/My Documents (incorrect - will fail)
     - python "/path/with spaces/script.py" (correct)
     - python /path/with spaces/script.py (incorrect - will fail)
   - After ensuring proper quoting, execute the command.
   - Capture the output of the command.

Usage notes:
  - The command argument is required.
  - You can specify an optional timeout in milliseconds (up to 600000ms / 10 minutes). If not specified, commands will timeout after 120000ms (2 minutes).
  - It is very helpful if you write a clear, concise description of what this command does in 5-10 words.
  - If the output exceeds 30000 characters, it is saved to a file and you get its path with the first and last lines; read the rest with Read (offset and limit) or search it with Grep.
  - You can use the `run_in_background` parameter to run the command in the background, which allows you to continue working while the command runs. You can monitor the output using the BashOutput tool as it becomes available, and stop it with KillShell. You do not need to use '&' at the end of the command when using this parameter. Processes started with '&' in a foreground command are stopped when that command finishes, so use `run_in_background` for servers and watchers.
  - A foreground command still running after 15 seconds is moved to the background automatically; you get its shell id and the output so far.
  - The working directory persists between commands (a `cd` carries over), but it always stays inside the workspace: a command that ends outside it leaves the directory unchanged. Environment variables and shell state (aliases, functions, `export`) do not persist between commands.
  - Commands run with stdin closed: anything waiting for input gets end-of-file at once. Do not run interactive commands (editors, pagers, `git rebase -i`, prompts).
  - VERY IMPORTANT: You MUST avoid using search commands like `find` and `grep`: use the Glob and Grep tools to search. You MUST avoid read tools like `cat`, `head`, `tail`, and `ls`: use Read to read files and Glob to list them. Those tools are faster, paginated, and never need approval.
  - If you _still_ need to search from the shell, prefer `rg` (ripgrep) over `grep` when it is installed.
  - When issuing multiple commands, use the ';' or '&&' operator to separate them. DO NOT use newlines (newlines are ok in quoted strings).
  - Try to maintain your current working directory throughout the session by using absolute paths and avoiding usage of `cd`. You may use `cd` if the User explicitly requests it.
    <good-example>
    pytest /foo/bar/tests
    </good-example>
    <bad-example>
    cd /foo/bar && pytest tests
    </bad-example>
  - To edit files with a patch, call `apply_patch` with the patch in a heredoc (apply_patch <<'EOF' … EOF); it is applied directly by the patch engine, never by a real shell.

# Committing changes with git

Only create commits when requested by the user. If unclear, ask first. When the user asks you to create a new git commit:
  - Run `git status`, `git diff` and `git log` to see the changes and the commit message style.
  - NEVER update the git config, NEVER run destructive git commands (push --force, hard reset) unless the user explicitly requests them, NEVER skip hooks (--no-verify).
  - Pass the commit message with a HEREDOC:
    git commit -m "$(cat <<'EOF'
    Commit message here.
    EOF
    )"
  - Never use git commands with the -i flag (like git rebase -i or git add -i): they need interactive input, which is not supported.
"""


DESCRIPTION_PARAMETER = 'Clear, concise description of what this command does in active voice. Never use words like "complex" or "risk" in the description - just describe what it does.\n\nSay what the command does in plain words: do not echo the command\'s text, its flags, or file paths - the user reads this description, often without seeing the command.\n\nFor simple commands (git, npm, standard CLI tools), keep it brief (5-10 words):\n- ls → "List files in current directory"\n- git status → "Show working tree status"\n- npm install → "Install package dependencies"\n\nFor commands that are harder to parse at a glance (piped commands, obscure flags, etc.), add enough context to clarify what it does:\n- find . -name "*.tmp" -exec rm {} \\; → "Find and delete all .tmp files recursively"\n- git reset --hard origin/main → "Discard all local changes and match remote main"\n- curl -s url | jq \'.data[]\' → "Fetch JSON from URL and extract data array elements"'


class BashInput(ToolInput):
    command: str = Field(description="The command to execute")
    timeout: float | None = Field(
        None, description="Optional timeout in milliseconds (max 600000 for a foreground command)"
    )
    description: str | None = Field(None, description=DESCRIPTION_PARAMETER)
    run_in_background: bool | None = Field(
        None,
        description="Set to true to run this command in the background. With it, `timeout` limits how long the "
        "command may run in the background before it is stopped (default 600000 ms, max 7200000 ms).",
    )

    @cached_property
    def script(self) -> Script:
        """The command's one parse: the permission check, apply_patch interception, the
        concurrency check and the runner all read it."""
        return parse(self.command)

    @cached_property
    def patch_invocation(self) -> PatchInvocation | None:
        try:
            return find_invocation(self.script)
        except Exception:  # noqa: BLE001 - a detector failure means "not an invocation": it runs as a command
            return None


class BashOutputData(BaseModel):
    stdout: str = Field(description="Combined stdout and stderr, in order (maybe truncated)")
    exitCode: int | None = Field(description="Exit code (128+N if killed by signal N); null while running")
    interrupted: bool = Field(description="Whether the command was cancelled or killed")
    timedOut: bool = Field(description="Whether the command hit its timeout and was killed")
    durationMs: int = Field(description="Wall time in milliseconds")
    truncated: bool = Field(description="Whether stdout is a head/tail summary of a larger output")
    outputBytes: int = Field(0, description="Total bytes of output")
    backgroundTaskId: str | None = Field(None, description="Shell id when the command runs in the background")
    outputPath: str | None = Field(None, description="File holding the full output, when it was saved")
    cwd: str | None = Field(None, description="Working directory after the command")
    sandboxNote: str | None = Field(None, description="Why the sandbox probably blocked the command")


# -- apply_patch interception ---------------------------------------------------------------------
def _patch_base(inv: PatchInvocation, cwd: Path, ctx: ToolContext) -> Path:
    return ctx.resolve(inv.workdir, base=cwd) if inv.workdir else cwd


# -- result shaping -------------------------------------------------------------------------------
def _guarded_before(ctx: ToolContext) -> "dict[Path, Guarded] | None":
    """For a command auto-allowed because the sandbox contains it: what exists of the paths it
    may not create (`.env*`, `.git` internals and gitfiles, nested agent settings), which the
    sandbox cannot protect before they exist; what it creates is removed afterwards. None
    otherwise (a person or a rule allowed the command: they chose)."""
    decision = ctx.decision
    if decision is None or decision.decided_by != "sandbox":
        return None
    return guarded(ctx.workspace.roots)


def _undo_note(ctx: ToolContext, before: "dict[Path, Guarded] | None") -> str | None:
    if before is None:
        return None
    removed = undo_creations(before, ctx.workspace.roots)
    if not removed:
        return None
    names = "; ".join(f"{ctx.workspace.relative(p)} ({why})" for p, why in removed)
    return (f"Removed {names}: a command that runs unasked in the sandbox may not create these. "
            "Write a file with the Write tool, which asks, or ask the user to run the command.")


def _undo_at_exit(ctx: ToolContext, proc: ShellProcess, before: "dict[Path, Guarded] | None") -> None:
    """The same for a command that goes on in the background: undone when it ends, and said in
    the next result."""
    if before is None:
        return

    def undo(_proc) -> None:
        note = _undo_note(ctx, before)
        if note:
            ctx.emit("notice", {"text": f"A background command ended. {note}"})

    proc.on_exit.append(undo)
    if not proc.running:
        undo(proc)


def _jail(ctx: ToolContext):
    """The read-only jail's wrapper when the call's decision confines it there (the jail is what
    makes running a command judged read-only without asking safe), else None (the write
    sandbox, as sandbox.mode sets it up). A call confined to the jail never runs elsewhere: with
    no jail to be had it is refused."""
    decision = ctx.decision
    if decision is None or decision.confinement != "jail":
        return None
    try:
        wrap = ctx.service(sandbox).jail_wrapper(ctx.permissions.read_denied_paths())
    except Exception as e:  # noqa: BLE001 - whatever broke, the command does not run unjailed
        raise ToolError(f"The command was not run: the read-only jail it must run in failed ({e}).") from None
    if wrap is None:
        raise ToolError("The command was not run: it may run without asking only in the read-only jail, "
                        "and no jail works here now.")
    return _as_judged(wrap)


def _as_judged(wrap):
    """`wrap` for a command no person approved: git's variables that would make it read another
    repository, configuration or program than the classifier judged are left out (environment.py)."""
    return lambda argv, cwd, env: wrap(argv, cwd, unasked_environ(env))


def _unasked(ctx: ToolContext) -> bool:
    """Whether the command was auto-allowed because the sandbox contains it (no person approved
    it): then the write sandbox masks the user's credential files as the jail does."""
    decision = ctx.decision
    return decision is not None and decision.confinement == "sandbox" and decision.decided_by == "sandbox"


def _attachment(command: str, ctx: ToolContext):
    """This command's way out through the proxy when `sandbox.network` is an object and bwrap
    runs it, else None (the network stays off, as configured)."""
    if isinstance(ctx.settings.sandbox.network, bool):
        return None
    try:
        if not ctx.service(sandbox).filters_domains:
            return None
        service = ctx.service(network)
        if not service.policy.reaches_anything:
            return None
        return service.attach("Bash", command, asker(ctx, f"`{command[:200]}`"))
    except Exception:  # noqa: BLE001 - no proxy: the command runs with the network off, as configured
        return None


def _write_sandbox(command: str, ctx: ToolContext, jailed: bool):
    """(wrapper, attachment) of a command in the write sandbox that needs more than the
    session's own wrapper (credential files masked for an unasked command; the proxy), else
    (None, None). A jailed command has neither: the jail has no network at all."""
    if jailed:
        return None, None
    unasked = _unasked(ctx)
    attachment = _attachment(command, ctx)
    if not unasked and attachment is None:
        return None, None
    try:
        wrap = ctx.service(sandbox).wrapper(ctx.permissions.read_denied_paths, unasked=unasked, network=attachment)
        return (_as_judged(wrap) if unasked and wrap is not None else wrap), attachment
    except BaseException:
        if attachment is not None:
            attachment.close()
        raise


def _secret_note(command: str, ctx: ToolContext) -> str | None:
    """When the command reads a variable whose name looks secret: say why it is empty. Decided
    from the command's text and the naming rule alone, so it tells nothing about which variables
    codebelt itself has."""
    names = secret_references(command, ctx.settings.bash.env_allow)
    if not names:
        return None
    shown = ", ".join(f"${n}" for n in names[:5]) + (" …" if len(names) > 5 else "")
    return (f"Commands never see {shown}, set or not: variables whose names look like secrets are not passed "
            "to commands. If the task needs one, ask the user to pass it on with bash.envAllow in their own settings.")


def _jail_note(output_tail: str, cwd: Path, ctx: ToolContext) -> str | None:
    """Why a jailed command failed, when the jail is the plausible cause (_jail_note.py)."""
    from ._jail_note import JailView, jail_note

    return jail_note(output_tail, cwd, JailView(ctx.workspace.roots, ctx.permissions.is_read_denied, ctx.temp_dir))


def _sandbox_note(output_tail: str, exit_code: int | None, ctx: ToolContext) -> str | None:
    try:
        return ctx.service(sandbox).explain_denial(output_tail, exit_code)
    except Exception:  # noqa: BLE001 - an explanation is a courtesy; never fail the call for it
        return None


def _oom_kills(ctx: ToolContext) -> int:
    try:
        return ctx.service(sandbox).oom_kills()
    except Exception:  # noqa: BLE001 - a sandbox that cannot start refuses the command at spawn
        return 0


def _memory_note(oom_before: int, exit_code: int | None, output: str, ctx: ToolContext) -> str | None:
    try:
        return ctx.service(sandbox).memory_note(oom_before, exit_code, output)
    except Exception:  # noqa: BLE001 - an explanation is a courtesy
        return None


def _has_pipeline(script: Script) -> bool:
    """Whether the command may end in a pipeline, whose parts' statuses are then recorded (it
    costs bash the fork it saves when it can exec the last command)."""
    if script.complex is not None or not script.commands:
        return "|" in script.text
    return any(c.op in ("|", "|&") for c in script.commands)


def _failure(out: Outcome) -> int:
    """The exit code that says the command (or a part of its last pipeline) failed, 0 if none did.
    A part ended by SIGPIPE (141) only lost its reader (`yes | head -1`): not a failure."""
    if out.exit_code not in (0, None):
        return out.exit_code
    return next((code for code in out.pipe_status or () if code not in (0, 141)), 0)


def _status_lines(out: Outcome, ctx: ToolContext) -> list[str]:
    """What comes before the output: Claude Code's `Exit code N` (the real status: 128+N for a
    signal), or why codebelt stopped the command."""
    lines = []
    if out.stop_reason == "cancelled":
        lines.append("Command was cancelled and killed (with its whole process group).")
    elif out.stop_reason in ("killed", "session_end"):
        lines.append("Command was killed.")
    elif out.stop_reason == "output_limit":
        lines.append("Command was stopped: its output exceeded the per-command output limit (setting bash.maxOutputBytes).")
    elif out.stop_reason == "session_output_limit":
        lines.append("Command was stopped: the output of this session's commands on disk (background tasks' "
                     "outputs and outputs too long to show count until the session ends) exceeded the session's "
                     "limit (setting bash.maxSessionOutputBytes). Print less (filter with grep, redirect to "
                     "/dev/null), or start a new session.")
    elif out.timed_out:
        lines.append("Command was stopped: it reached its time limit.")
    if out.exit_code not in (0, None):
        lines.insert(0, ctx.texts("Bash.exit_code", code=out.exit_code))
    return lines


def _trim(text: str) -> str:
    """Output as Claude Code shows it: without blank lines before it or whitespace after it."""
    return _LEADING_BLANK_LINES.sub("", text).rstrip()


def _preview(path: Path, limit: int = 2000) -> str:
    """The first ~2 KB of a saved output, cut after its last whole line."""
    with open(path, "rb") as f:
        head = f.read(limit).decode("utf-8", "replace")
    cut = head.rfind("\n")
    return head[:cut] if cut > 0 else head


def _kb(n: int) -> str:
    return f"{n / 1024:.1f}KB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f}MB"


def _duration(ms: int) -> str:
    """10m, 90s — a limit as Claude Code names it."""
    return f"{ms // 60000}m" if ms % 60000 == 0 else f"{round(ms / 1000)}s"


def _progress_sink(ctx: ToolContext, output: Path):
    if ctx.progress is None:
        return None

    def sink(p: Progress, elapsed: float) -> None:
        ctx.report(
            "\n".join(p.last_lines),
            lastLines=p.last_lines,
            totalLines=p.total_lines,
            totalBytes=p.total_bytes,
            elapsedSeconds=round(elapsed, 1),
            outputPath=str(output),  # the whole output so far, for a viewer that shows all of it
        )

    return sink


class Bash(Tool):
    name = "Bash"
    description = DESCRIPTION
    Input = BashInput
    Output = BashOutputData
    read_only = False
    concurrency_safe = False
    destructive = True
    open_world = True
    max_result_chars = MAX_RESULT_CHARS
    starts_programs = True
    search_hint = "run a shell command (build, test, git, package managers)"

    # -- pipeline hooks ------------------------------------------------------------------------
    def is_concurrency_safe(self, params: BashInput) -> bool:
        """Only read-only commands run alongside other calls."""
        if params.run_in_background or params.patch_invocation is not None:
            return False
        try:
            from ..shell.analysis.analyze import analyze

            return bool(analyze(params.script, None, None).read_only)
        except Exception:  # noqa: BLE001 - unknown means: not safe to run alongside others
            return False

    def summarize(self, params: BashInput) -> str:
        return params.command

    def precheck(self, params: BashInput, ctx: ToolContext) -> None:
        inv = params.patch_invocation  # a patch that cannot apply is refused before anyone is asked
        if inv is not None:
            cwd, _ = ctx.service(shell_cwd).current(consume=False)
            check_patch(inv.patch, _patch_base(inv, cwd, ctx), ctx)

    def preview(self, params: BashInput, ctx: ToolContext):
        inv = params.patch_invocation  # `apply_patch <<EOF …`: shown as the patch it is
        if inv is None:
            return None
        cwd, _ = ctx.service(shell_cwd).current(consume=False)
        return patch_preview(inv.patch, _patch_base(inv, cwd, ctx), ctx)

    def validate(self, params: BashInput, ctx: ToolContext) -> None:
        command = params.command
        if "\x00" in command:
            raise ToolError(
                "The command contains a NUL byte (\\0), which bash cannot take in a command line. "
                "Remove it; to produce a NUL byte, write printf '\\0'."
            )
        try:
            command.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ToolError(
                f"The command contains an unpaired UTF-16 surrogate ({command[e.start]!r} at "
                f"position {e.start}), which is not valid text. Send the command as valid Unicode; "
                "to produce arbitrary bytes, use printf escapes such as printf '\\xff'."
            ) from None
        if params.run_in_background and not ctx.settings.bash.background_tasks:
            raise ToolError(
                "Background commands are not available here: this process ends when the call returns, "
                "and a background task would end with it (as in `codebelt call`). Run the command in the "
                f"foreground (it runs to its timeout, at most {ctx.settings.bash.max_timeout_ms} ms), or use "
                "the MCP server or the Python library for background work."
            )
        self._timeout_ms(params, ctx)

    def _timeout_ms(self, params: BashInput, ctx: ToolContext) -> int:
        """The call's timeout, as Claude Code takes it: none, zero, negative or NaN is the
        default, more than the maximum is the maximum."""
        background = bool(params.run_in_background)
        maximum = ctx.settings.bash.max_background_timeout_ms if background else ctx.settings.bash.max_timeout_ms
        default = ctx.settings.bash.background_timeout_ms if background else ctx.settings.bash.default_timeout_ms
        default = min(default, maximum)
        if params.timeout is None or params.timeout != params.timeout or params.timeout <= 0:
            return default
        return int(min(params.timeout, maximum))

    def permission_requests(self, params: BashInput, ctx: ToolContext) -> list:
        cwd, _ = ctx.service(shell_cwd).current(consume=False)
        inv = params.patch_invocation
        if inv is not None:
            return list(patch_requests(inv.patch, _patch_base(inv, cwd, ctx), ctx))
        return [CommandRequest(params.command, cwd, script=params.script)]

    # -- run -----------------------------------------------------------------------------------
    def run(self, params: BashInput, ctx: ToolContext) -> ToolResult:
        cwd_service = ctx.service(shell_cwd)
        cwd, cwd_note = cwd_service.current()
        inv = params.patch_invocation
        if inv is not None:
            return run_patch(inv.patch, _patch_base(inv, cwd, ctx), ctx)

        timeout_ms = self._timeout_ms(params, ctx)
        manager = ctx.service(task_manager)
        if params.run_in_background:
            return self._start_background(params, ctx, manager, cwd, cwd_note)

        jail = _jail(ctx)
        net_wrap, attachment = _write_sandbox(params.command, ctx, jail is not None)
        env_before = _guarded_before(ctx)
        # As Claude Code: at its timeout a foreground command moves to the background, where it
        # may run for bash.backgroundTimeoutMs more (then it is stopped); autoBackground moves
        # it there sooner.
        budget_ms = timeout_ms
        if ctx.settings.bash.auto_background:
            budget_ms = min(budget_ms, ctx.settings.bash.auto_background_ms)
        limit_ms = ctx.settings.bash.background_timeout_ms
        total_s = (timeout_ms + limit_ms) / 1000 if limit_ms else None
        oom_before = _oom_kills(ctx)
        # Nothing between spawn and wait_foreground may raise: the caller's thread watches.
        try:
            # Recording the final directory costs bash a fork (it cannot exec the last command
            # under an EXIT trap); skip it when the command cannot change the directory.
            proc = manager.spawn(params.command, cwd, total_s,
                                 record_cwd=params.script.may_change_cwd, watch=False, wrap=jail or net_wrap,
                                 record_status=_has_pipeline(params.script))
        except ShellError as e:
            if attachment is not None:
                attachment.close()
            raise ToolError(f"The command could not be started: {e}") from None
        finished = wait_foreground(
            proc,
            budget_s=budget_ms / 1000,
            cancel_event=ctx.cancel_event,
            on_progress=_progress_sink(ctx, proc.spool_path),
        )
        if not finished:
            _undo_at_exit(ctx, proc, env_before)
            return self._moved_to_background(params, ctx, manager, proc, budget_ms)
        return self._finished(params, ctx, proc, timeout_ms, cwd_service, cwd_note, oom_before, jailed=jail is not None,
                              env_before=env_before, attachment=attachment)

    def _finished(self, params: BashInput, ctx: ToolContext, proc: ShellProcess, timeout_ms: int,
                  cwd_service: ShellCwd, cwd_note: str | None, oom_before: int = 0,
                  jailed: bool = False, env_before: "dict[Path, Guarded] | None" = None, attachment: Any = None) -> ToolResult:
        out = proc.outcome
        assert out is not None
        before, _ = cwd_service.current(consume=False)
        notes = [n for n in (cwd_note,) if n]
        # As Claude Code: a `cd` carries over only when the command succeeded; one that ends
        # outside the workspace sends the shell back to the workspace root
        if out.exit_code == 0 and out.stop_reason is None and cwd_service.learn(out.final_cwd) == OUTSIDE:
            notes.append(ctx.texts("Bash.cwd_reset", root=ctx.workspace.root))
        undone = _undo_note(ctx, env_before)
        if undone:
            notes.append(undone)
        after, _ = cwd_service.current(consume=False)
        if after != before:
            ctx.emit("cwd_changed", {"old": str(before), "new": str(after)})
        try:
            rendered = render(proc.spool_path, MAX_RESULT_CHARS - 2_000, out.output_bytes)
        except FileNotFoundError:  # the session closed meanwhile, and its files went with it
            rendered = Rendered("", False, out.output_bytes)
        if rendered.truncated:
            output_path: str | None = str(proc.spool_path)
            shown = ctx.texts("Bash.persisted", size=_kb(out.output_bytes), path=output_path,
                              preview=_preview(proc.spool_path))
        else:
            output_path = None
            shown = _trim(rendered.text)
            ctx.service(task_manager).release_spool(proc)
        sandbox_note = None
        failed = _failure(out)
        refused = refusal_note(attachment.denials()) if attachment is not None else None
        if refused:
            sandbox_note = refused
            notes.append(refused)
        elif failed and out.stop_reason is None:
            sandbox_note = (_memory_note(oom_before, failed, rendered.text, ctx)
                            or (_jail_note(rendered.text[-4000:], before, ctx) if jailed else None)
                            or _sandbox_note(rendered.text[-4000:], failed, ctx))
            if sandbox_note:
                notes.append(sandbox_note)
        notes += filter(None, [_secret_note(params.command, ctx)])
        unsuccessful = out.exit_code not in (0, None) or out.stop_reason is not None
        parts = _status_lines(out, ctx)
        parts += [shown] if shown else []
        parts += notes
        text = "\n".join(parts)
        cwd_now, _ = cwd_service.current()
        data = BashOutputData(
            stdout=rendered.text,
            exitCode=out.exit_code,
            interrupted=out.interrupted,
            timedOut=out.timed_out,
            durationMs=int(out.duration_ms),
            truncated=rendered.truncated,
            outputBytes=out.output_bytes,
            outputPath=output_path,
            cwd=str(cwd_now),
            sandboxNote=sandbox_note,
        ).model_dump()
        data = {k: v for k, v in data.items() if v is not None or k == "exitCode"}
        if rendered.truncated:
            data["isIncomplete"] = True
        # As Claude Code: a command that did not succeed is an error result, its exit code first
        return ToolResult(text=text, data=data, is_error=unsuccessful)

    def _start_background(self, params: BashInput, ctx: ToolContext, manager: TaskManager,
                          cwd: Path, cwd_note: str | None) -> ToolResult:
        timeout_ms = self._timeout_ms(params, ctx)
        before = _guarded_before(ctx)
        jail = _jail(ctx)
        net_wrap, attachment = _write_sandbox(params.command, ctx, jail is not None)
        idle_ms = ctx.settings.bash.interactive_idle_timeout_ms
        try:
            # On a terminal of its own: TaskInput can type into it (a REPL, a prompt, an editor),
            # and what it prints is line-buffered, so TaskOutput sees it as it comes. Its output
            # file holds the output as plain text (no colours, `\n` line ends), as Claude Code's
            # piped one does: that is the file the model is told to Read.
            proc = manager.spawn(params.command, cwd, (timeout_ms / 1000) if timeout_ms else None, record_cwd=False,
                                 wrap=jail or net_wrap, stdio=Pty(transcript=True),
                                 idle_timeout_s=idle_ms / 1000 if idle_ms else None)
        except ShellError as e:
            if attachment is not None:
                attachment.close()
            raise ToolError(f"The command could not be started: {e}") from None
        _undo_at_exit(ctx, proc, before)
        task = manager.adopt(proc, params.command, params.description, "requested")
        text = ctx.texts("Bash.background", id=task.id, output=task.output_path)
        if cwd_note:
            text += "\n" + cwd_note
        return ToolResult(text=text, data=self._task_data(task))

    def _moved_to_background(self, params: BashInput, ctx: ToolContext, manager: TaskManager,
                             proc: ShellProcess, budget_ms: int) -> ToolResult:
        task = manager.adopt(proc, params.command, params.description, "auto")
        _, so_far, truncated = manager.read(task.id, None, MAX_RESULT_CHARS - 4_000)
        so_far = _trim(so_far)
        limit_ms = ctx.settings.bash.background_timeout_ms
        text = ctx.texts("Bash.moved", seconds=round(budget_ms / 1000), id=task.id, output=task.output_path,
                         limit=_duration(limit_ms) if limit_ms else "no time limit",
                         silent="" if so_far else ctx.texts("Bash.moved_silent"))
        if so_far:
            text = so_far + "\n" + text
        data = self._task_data(task)
        data["stdout"] = so_far
        data["truncated"] = bool(truncated)
        return ToolResult(text=text, data=data)

    @staticmethod
    def _task_data(task: Task) -> dict[str, Any]:
        data = BashOutputData(
            stdout="",
            exitCode=None,
            interrupted=False,
            timedOut=False,
            durationMs=int(task.process.elapsed_ms()),
            truncated=False,
            backgroundTaskId=task.id,
            outputPath=str(task.output_path),
        ).model_dump()
        return {k: v for k, v in data.items() if v is not None or k == "exitCode"}

