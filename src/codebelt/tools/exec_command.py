"""exec_command (Codex's profile): run a command in a shell, on a pseudo-terminal when asked,
and return its output — or, while it still runs after `yield_time_ms`, a session id that
write_stdin writes to and polls. The same process model, sandbox, jail and permission decision
as Bash; the texts are Codex's (texts/codex.toml)."""

from __future__ import annotations

import os
import pwd
import shutil
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from ..permissions.requests import CommandRequest
from ..shell.analysis.parse import parse
from ..shell.analysis.patch_call import find_invocation
from ..tool import ToolContext, ToolError, ToolResult
from ._codex import (CodexTool, DEFAULT_MAX_OUTPUT_TOKENS, CodexInput, codex_texts, exec_sessions, finish,
                     start_process)
from ._patching import patch_requests
from ._services import shell_cwd, task_manager
from .bash import _guarded_before, _jail, _undo_at_exit, _write_sandbox
from .codex_patch import CodexApplyPatch

MIN_YIELD_MS, MAX_YIELD_MS, DEFAULT_YIELD_MS = 250, 30_000, 10_000

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "cmd": {"type": "string", "description": "Shell command to execute."},
        "justification": {"type": "string",
                          "description": "User-facing approval question for `require_escalated`; omit otherwise."},
        "login": {"type": "boolean",
                  "description": "True runs the shell with -l/-i semantics; false disables them. Defaults to true."},
        "max_output_tokens": {"type": "number", "description": "Output token budget. Defaults to 10000 tokens; "
                              "larger requests may be capped by policy."},
        "prefix_rule": {"type": "array", "description": "Reusable approval prefix for `cmd`, only with "
                        "`sandbox_permissions: \"require_escalated\"`; for example [\"git\", \"pull\"].",
                        "items": {"type": "string"}},
        "sandbox_permissions": {"type": "string", "description": "Per-command sandbox override. Defaults to "
                                "`use_default`; use `require_escalated` for unsandboxed execution.",
                                "enum": ["use_default", "require_escalated"]},
        "shell": {"type": "string", "description": "Shell binary to launch. Defaults to the user's default shell."},
        "tty": {"type": "boolean",
                "description": "True allocates a PTY for the command; false or omitted uses plain pipes."},
        "workdir": {"type": "string", "description": "Working directory for the command. Defaults to the turn cwd."},
        "yield_time_ms": {"type": "number", "description": "Wait before yielding output. Defaults to 10000 ms; "
                          "effective range is 250-30000 ms."},
    },
    "required": ["cmd"],
    "additionalProperties": False,
}


class ExecCommandInput(CodexInput):
    cmd: str
    justification: str | None = None
    login: bool = True
    max_output_tokens: float = DEFAULT_MAX_OUTPUT_TOKENS
    prefix_rule: list[str] | None = None
    sandbox_permissions: Literal["use_default", "require_escalated"] = "use_default"
    shell: str | None = None
    tty: bool = False
    workdir: str | None = None
    yield_time_ms: float = Field(DEFAULT_YIELD_MS)


def shell_argv(params: ExecCommandInput) -> list[str]:
    """The interpreter and its options, as Codex picks them: a shell asked for by name or path
    is looked up by its name on PATH; else the user's login shell; -l (a login shell) unless
    `login` is false."""
    if params.shell:
        found = shutil.which(os.path.basename(params.shell)) or params.shell
    else:
        try:
            found = pwd.getpwuid(os.getuid()).pw_shell or ""
        except KeyError:
            found = ""
        found = found if found and os.access(found, os.X_OK) else (shutil.which("bash") or "/bin/sh")
    return [found, "-l"] if params.login else [found]


def is_posix_shell(argv: list[str]) -> bool:
    return Path(argv[0]).name in ("bash", "sh", "dash", "zsh", "ksh")


class ExecCommand(CodexTool):
    name = "exec_command"
    description = codex_texts().description("exec_command")
    Input = ExecCommandInput
    read_only = False
    destructive = True
    open_world = True
    max_result_chars = None  # bounded by max_output_tokens, as in Codex
    search_hint = "run a shell command, interactively on a terminal when asked"
    schema = SCHEMA
    rules_as = "Bash"
    starts_programs = True  # confined as the tool it is decided as

    def hook_view(self, raw: dict[str, Any]) -> tuple[str, dict[str, Any], tuple[str, ...]]:
        # As Codex shows its shell tools to hooks: Claude Code's Bash and {"command": …}, so a
        # hook written for Bash (a matcher, an `if: "Bash(git push *)"`) judges this command too.
        return "Bash", {"command": raw.get("cmd", "")}, ("exec_command",)

    def from_hook_input(self, updated: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in raw.items() if k != "cmd"}
        out.update((k, v) for k, v in updated.items() if k in SCHEMA["properties"])
        if "command" in updated:
            out["cmd"] = updated["command"]
        return out

    def summarize(self, params: ExecCommandInput) -> str:
        return params.cmd

    def _cwd(self, params: ExecCommandInput, ctx: ToolContext) -> Path:
        base, _ = ctx.service(shell_cwd).current(consume=False)
        return ctx.workspace.resolve(params.workdir, base=base) if params.workdir else base

    def _command(self, params: ExecCommandInput) -> str:
        argv = shell_argv(params)
        if is_posix_shell(argv):
            return params.cmd
        # another interpreter: decided as what it is, `NAME -c CMD`
        import shlex

        return f"{shlex.quote(argv[0])} -c {shlex.quote(params.cmd)}"

    def _patch(self, params: ExecCommandInput):
        """An `apply_patch <<'EOF' … EOF` command: applied by the patch engine, never a shell."""
        try:
            return find_invocation(parse(params.cmd))
        except Exception:  # noqa: BLE001 - not an invocation: it runs as a command
            return None

    def permission_requests(self, params: ExecCommandInput, ctx: ToolContext) -> list:
        inv = self._patch(params)
        if inv is not None:
            cwd = self._cwd(params, ctx)
            return list(patch_requests(inv.patch, ctx.workspace.resolve(inv.workdir, base=cwd) if inv.workdir else cwd, ctx))
        command = self._command(params)
        return [CommandRequest(command, self._cwd(params, ctx), script=parse(command))]

    def run(self, params: ExecCommandInput, ctx: ToolContext) -> ToolResult:
        started = time.monotonic()
        inv = self._patch(params)
        if inv is not None:  # as Codex answers an intercepted apply_patch: its own output, wrapped
            cwd = self._cwd(params, ctx)
            result = CodexApplyPatch().apply(inv.patch, ctx.workspace.resolve(inv.workdir, base=cwd) if inv.workdir else cwd, ctx)
            result.text = codex_texts(ctx)("exec_command.patch", wall=time.monotonic() - started, output=result.text)
            return result
        if params.sandbox_permissions == "require_escalated":
            # a command cannot leave codebelt's sandbox on its own say-so: the sandbox is the
            # session's, and the permission engine has already decided the call
            raise ToolError(codex_texts(ctx)("exec_command.escalation_refused"))
        cwd = self._cwd(params, ctx)
        if not cwd.exists():
            raise ToolError(codex_texts(ctx)("exec_command.no_such_directory"))
        if not cwd.is_dir():
            raise ToolError(codex_texts(ctx)("exec_command.not_a_directory"))
        manager = ctx.service(task_manager)
        sessions = ctx.service(exec_sessions)
        jail = _jail(ctx)
        # as Bash: the jail, or the write sandbox with credentials masked for an unasked command
        # and the session's network proxy when sandbox.network names domains
        net_wrap, attachment = _write_sandbox(params.cmd, ctx, jail is not None)
        before = _guarded_before(ctx)  # as for Bash: what an unasked command may not create is undone
        try:
            task = start_process(ctx, manager, params.cmd, cwd, tty=params.tty, shell=shell_argv(params),
                                 wrap=jail or net_wrap, on_exit=lambda proc: _undo_at_exit(ctx, proc, before))
        except BaseException:
            if attachment is not None:
                attachment.close()
            raise
        number = sessions.add(task.id)
        yield_s = min(max(params.yield_time_ms, MIN_YIELD_MS), MAX_YIELD_MS) / 1000
        outcome = manager.wait(task, 0, yield_s, None, ctx.cancel_event)
        if outcome.reason == "cancelled":
            task.process.stop("cancelled")
            ctx.check_cancelled()
        if not task.process.running:  # its end (and any undo) is said in this result
            task.settled.wait(2)
        text = finish(ctx, sessions, manager, task, number, started, outcome.size, int(params.max_output_tokens))
        data: dict[str, Any] = {"session_id": number if task.process.running else None,
                                "exit_code": task.process.outcome.exit_code if task.process.outcome else None}
        if task.process.running:  # what it writes from now on is checkpointed as a background task's
            data["backgroundTaskId"] = task.id
        return ToolResult(text=text, data=data)
