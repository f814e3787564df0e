"""Session: the call pipeline every tool call goes through, whatever the interface.

call → validate against the schema (with semantic coercion) → tool.validate → permission
decision (ask → approver) → tool.run → budget → audit → ToolResult.
"""

from __future__ import annotations

import atexit
import contextvars
import fcntl
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

from . import budget
from .coerce import coerce_input, describe_validation_error, plain_params
from .errors import (
    Cancelled,
    CodebeltError,
    PathError,
    SessionClosed,
    SettingsError,
    ToolError,
    UnknownToolError,
)
from .permissions.approvers import ApprovalRefused, ApprovalRequest, Approver
from .permissions.decision import Decision
from .permissions.engine import PermissionEngine
from .settings import MODES, SANDBOX_MODES, Settings, load_settings
from .texts import load as load_texts
from .tool import ProgressCallback, Services, Tool, ToolContext, ToolResult
from .workspace import Workspace

T = TypeVar("T")
# How long close() waits for a thread that begins background work at the start (each step is
# bounded; a step under way when the session closed finishes, then the thread ends).
START_JOIN_S = 5.0


# Sessions not closed by their owner are closed when the interpreter exits normally, so their
# background commands and temp directories do not outlive the process.
_open_sessions: "weakref.WeakSet[Session]" = weakref.WeakSet()


@atexit.register
def _close_open_sessions() -> None:
    for s in list(_open_sessions):
        try:
            s.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


_TEMP_PREFIX = re.compile(r"^codebelt-[0-9a-f]+-p(\d+)-")
_swept = False


def _sweep_orphaned_temp_dirs() -> None:
    """Remove the temp directories (command outputs, evicted results) of codebelt processes
    that died without closing their session (SIGKILL, a crash): once per process, only ours,
    only directories whose owner is gone."""
    global _swept
    if _swept:
        return
    _swept = True
    base = Path(tempfile.gettempdir())
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    uid = os.getuid()
    for e in entries[:100_000]:
        m = _TEMP_PREFIX.match(e.name)
        if m is None or int(m.group(1)) == os.getpid():
            continue
        try:
            if not e.is_dir(follow_symlinks=False) or e.stat(follow_symlinks=False).st_uid != uid:
                continue
        except OSError:
            continue
        if _owner_gone(e.path, int(m.group(1))):
            shutil.rmtree(e.path, ignore_errors=True)


def _owner_gone(path: str, pid: int) -> bool:
    """The pid in a directory's name is only a hint: a process in another pid namespace (a
    container sharing /tmp) has a number that means nothing here, and a dead owner's number may
    be reused. A live session holds a lock on its directory (`_hold`): taking it proves the owner
    is gone. The pid is still asked, for directories of versions that took no lock."""
    try:
        os.kill(pid, 0)
        return False
    except ProcessLookupError:
        pass
    except OSError:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _hold(path: Path) -> int:
    """Lock a session's temp directory for as long as the returned descriptor is open."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _task_info(task: Any) -> dict[str, Any]:
    out = task.process.outcome
    return {"id": task.id, "command": task.command, "status": task.status(), "status_text": task.status_text(),
            "exit_code": out.exit_code if out is not None else None, "output_path": str(task.output_path)}


def _as_input(raw: Any) -> dict[str, Any]:
    return dict(raw) if isinstance(raw, Mapping) else {}


def _add_hook_output(result: ToolResult, hooked: Any) -> None:
    """What hooks said for the model: feedback (exit 2 / decision block after the call) and
    additionalContext go into the text; system messages and non-blocking errors into data."""
    parts = []
    if hooked.feedback:
        parts.append("Hook feedback:\n" + "\n".join(hooked.feedback))
    if hooked.context:
        parts.append(hooked.additional_context)
    if parts:
        result.text += "\n\n" + "\n\n".join(parts)
    extra = {}
    if hooked.system_messages:
        extra["hookSystemMessages"] = hooked.system_messages
    if hooked.errors:
        extra["hookErrors"] = hooked.errors
    if hooked.stop:
        extra["hookStop"] = hooked.stop_reason
    if extra:
        result.data = {**(result.data or {}), **extra}


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _NoHooks:
    """A session without hooks."""

    def has(self, event: str) -> bool:
        return False


_NO_HOOKS: Any = _NoHooks()


@dataclass
class _Prepared:
    """A call whose input has been checked against the schema: parsed once, used by the
    concurrency check and by the call itself."""

    tool: Tool
    params: Any


class Session:
    """One agent's view of one workspace: tools, policy, state and audit trail.

    `settings` is a dict in the settings-file format, merged on top of the files found under
    `root`. `approver` answers `ask` decisions (a callable taking an ApprovalRequest and
    returning True/False); without one, `ask` becomes `deny` with the rule that would allow it.
    A settings file or value that cannot be used raises `SettingsError` here, naming it.
    The workspace's own settings files may only narrow access unless `trust_workspace` (or the
    user's `trustedWorkspaces`) trusts it; `trust_workspace_hooks` is the older name of it.
    `results_root` keeps what results point to (a large output's file, an evicted result) after
    the session: they go in a new subdirectory of it, which close() leaves, and Read may read
    anything below it without asking (the CLI keeps one per CLI session). By default they live
    in the session's temp directory and go with it.
    `web_summarizer(page, prompt, info) -> str`: the host's own model for WebFetch (else the
    page goes back with the prompt).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] = ".",
        mode: str | None = None,
        approver: Approver | None = None,
        sandbox: str | None = None,
        settings: Mapping[str, Any] | None = None,
        *,
        settings_file: str | os.PathLike[str] | None = None,
        audit: bool | str | os.PathLike[str] = True,
        load_user_settings: bool = True,
        session_id: str | None = None,
        results_root: str | os.PathLike[str] | None = None,
        tools: Iterable[type[Tool]] | None = None,
        trust_workspace: bool = False,
        trust_workspace_hooks: bool = False,
        web_summarizer: Callable[[str, str, dict[str, Any]], str] | None = None,
        profile: str | None = None,
    ):
        root_path = Path(root).expanduser()
        if not root_path.is_dir():
            raise PathError(f"workspace root {root} is not a directory")
        if mode is not None and mode not in MODES:
            raise SettingsError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        if sandbox is not None and sandbox not in SANDBOX_MODES:
            raise SettingsError(f"unknown sandbox mode {sandbox!r}; expected one of {', '.join(SANDBOX_MODES)}")
        overrides: dict[str, Any] = {}
        if mode is not None:
            overrides["permissions"] = {"defaultMode": mode}
        if sandbox is not None:
            overrides["sandbox"] = {"mode": sandbox}
        if profile is not None:  # whose tool set and texts: "claude-code" or "codex"
            overrides["compat"] = {"profile": profile}
        self.id = session_id or uuid.uuid4().hex[:12]
        self.settings: Settings = load_settings(
            root_path,
            explicit=settings,
            settings_file=Path(settings_file) if settings_file else None,
            load_user=load_user_settings,
            overrides=overrides,
            trust_workspace=trust_workspace or trust_workspace_hooks,
        )
        self.mode = self.settings.permissions.default_mode
        self.texts = load_texts(self.settings.compat.profile)

        extra = [
            (root_path / d) if not Path(d).expanduser().is_absolute() else Path(d).expanduser()
            for d in self.settings.permissions.additional_directories
        ]
        _sweep_orphaned_temp_dirs()
        self._tmp = Path(tempfile.mkdtemp(prefix=f"codebelt-{self.id}-p{os.getpid()}-"))
        self._tmp_lock = _hold(self._tmp)
        try:
            if results_root is None:
                self.results_dir = readable = self._tmp / "results"
                self.results_dir.mkdir()
            else:
                readable = Path(results_root)
                readable.mkdir(parents=True, exist_ok=True, mode=0o700)
                self.results_dir = Path(tempfile.mkdtemp(prefix=f"{time.strftime('%Y%m%d-%H%M%S')}-", dir=readable))
            self.temp_dir = self._tmp / "tmp"  # the per-session TMPDIR for shell commands
            self.temp_dir.mkdir()
            self.workspace = Workspace(
                root_path, [d for d in extra if d.is_dir()], internal_read_dirs=[readable]
            )
            self.approver = approver
            # WebFetch hands it (page, prompt, info) and returns its answer instead of the page
            self.web_summarizer = web_summarizer

            from .tools import ToolTable, builtin_families, registry

            # Built-in tools are imported when first called or described, not here; another
            # profile's tool set (codex) is its own list of classes, and a profile of an older
            # Claude Code release leaves out the tools that release did not have.
            profile = self.settings.compat.profile
            without = self.texts.value("profile.without", ())
            classes = tools if tools is not None or profile.startswith("claude-code") else registry(profile)
            self._tools = ToolTable(classes, without=without)
            if self.settings.checkpoints.enabled and self.settings.checkpoints.model_tool:
                from .tools.checkpoints import CheckpointsTool

                self._tools.add(CheckpointsTool())
            self._services = Services()
            # Path rules name tools (`Write(src/**)`): a rule naming a built-in tool keeps its meaning
            # in a session that registers other tools.
            families = {**builtin_families(), **self._tools.families()}
            self.engine = PermissionEngine(
                self.settings, self.workspace, self.mode,
                tool_families=families,
                sandbox_contains=self._sandbox_contains,
                jail_available=self._jail_available,
                helper_tools=self._tools.starting_programs(),
            )
            self._audit = None
            if audit:
                from .audit import AuditLog

                self._audit = AuditLog.open(None if audit is True else Path(audit))
        except BaseException:  # a bad rule, an unusable audit path …: leave nothing behind
            shutil.rmtree(self._tmp, ignore_errors=True)
            if results_root is not None and hasattr(self, "results_dir"):
                shutil.rmtree(self.results_dir, ignore_errors=True)
            os.close(self._tmp_lock)
            raise
        self._closed = False
        # The cancel events of the calls running now: closing the session cancels them, so a
        # command, hook or server a call started does not outlive it.
        self._running: set[threading.Event] = set()
        self._running_lock = threading.Lock()
        self._hooks = self._load_hooks()
        self._pending_context: list[str] = []  # hook output for the model, added to the next result
        self._events_lock = threading.Lock()
        self._ended_tasks: list[Any] = []  # background tasks that ended since the last result
        self._task_end_callbacks: list[Callable[[dict[str, Any]], None]] = []
        _open_sessions.add(self)
        self._run_hooks("SessionStart", {"source": "startup"})
        # Threads that begin, once no call runs (`Services.calls`), what later calls will use;
        # close() joins them.
        self._starting: list[threading.Thread] = []
        if self.settings.checkpoints.enabled and self.settings.checkpoints.baseline_at_start:
            # imported and loaded here, not in the thread: see `tracker.preload`
            from .checkpoints import manager  # noqa: F401
            from .checkpoints.tracker import preload
            from .sandbox import protected  # noqa: F401
            from .tools import _services  # noqa: F401

            preload()
            self._start_thread(self._start_checkpoints, "codebelt-checkpoints-start")
        self._warm_start()

    def _start_thread(self, target: Callable[[], None], name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        self._starting.append(t)
        t.start()

    def _warm_start(self) -> None:
        """The code index and the workspace's language servers start in the background, so the
        first LSP call does not meet them cold (it never waits for them either way) — once no
        call runs: a session's first call, whatever it is, does not share the GIL and the cores
        with them (`tools._services.warm_start`)."""
        if not self.settings.intel.start_with_session or "LSP" not in self._tools:
            return
        def run() -> None:
            from .tools._services import warm_start

            self._services.calls.wait("code index")
            if self._closed:
                return
            try:
                self._tools["LSP"]  # its module and the index's, imported off the first call's path
            except Exception:  # noqa: BLE001 - the first call reports what is wrong
                return
            warm_start(self._services, self.context("LSP"))

        self._start_thread(run, "codebelt-warm-start")

    # -- services ----------------------------------------------------------------------------
    def context(self, tool_name: str, cancel_event: threading.Event | None = None,
                progress: ProgressCallback | None = None) -> ToolContext:
        """The context a call of `tool_name` runs with."""
        return ToolContext(
            tool_name=tool_name, session_id=self.id, workspace=self.workspace, settings=self.settings,
            permissions=self.engine, results_dir=self.results_dir, temp_dir=self.temp_dir,
            services=self._services, cancel_event=cancel_event or threading.Event(), progress=progress,
            events=self._event, texts=self.texts, approver=self.approver,
            web_summarizer=self.web_summarizer,
        )

    # -- hooks ---------------------------------------------------------------------------------
    def _load_hooks(self, always: bool = False):
        """The hook engine, or `_NO_HOOKS` when no hook is configured (then nothing of the hooks
        machinery is imported; `add_hook` builds the engine)."""
        layers = [] if self.settings.disable_all_hooks else self.settings.hook_layers
        if not layers and not always:
            return _NO_HOOKS

        from .hooks.conditions import if_matcher
        from .hooks.config import specs_from
        from .hooks.engine import HookEngine

        specs = []
        # The settings hold a workspace's own hooks only when the workspace is trusted.
        for label, workspace, section in layers:
            specs += specs_from(section, label, workspace)
        families = self._tools.families()
        return HookEngine(specs, self.workspace.root, if_matcher=if_matcher(self.workspace, families),
                          on_run=self._audit_hook)

    def add_hook(self, event: str, function: Callable[[dict[str, Any]], dict[str, Any] | None],
                 matcher: str | None = None) -> None:
        """A Python hook: `function(payload) -> dict | None`, answering as a command hook's JSON."""
        from .hooks.config import EVENTS, HookSpec

        if event not in EVENTS:
            raise SettingsError(f"unknown hook event {event!r}; expected one of {', '.join(EVENTS)}")
        if not self.settings.disable_all_hooks:
            if self._hooks is _NO_HOOKS:
                self._hooks = self._load_hooks(always=True)
            self._hooks.add(HookSpec(event=event, matcher=matcher, type="python", function=function,
                                     source="session"))

    def _audit_hook(self, run: Any, event: str) -> None:
        if self._audit is None:
            return
        data = run.json or {}
        specific = data.get("hookSpecificOutput") if isinstance(data, dict) else None
        decision = (specific or {}).get("permissionDecision") if isinstance(specific, dict) else None
        if run.exit_code == 2:
            decision = "block"
        self._audit.record_hook(session_id=self.id, event=event, tool=None, hook=run.spec.label,
                                source=run.spec.source, exit_code=run.exit_code, duration_ms=run.duration_ms,
                                decision=decision, error=run.error)

    def _hook_payload(self, **extra: Any) -> dict[str, Any]:
        return {"session_id": self.id, "transcript_path": None, "cwd": str(self.workspace.root),
                "permission_mode": self.mode, **extra}

    def _run_hooks(self, event: str, extra: dict[str, Any], tool_name: str | None = None,
                   tool_input: dict[str, Any] | None = None, tool: Tool | None = None,
                   cancel: threading.Event | None = None):
        if not self._hooks.has(event):
            return None
        payload = self._hook_payload(**extra)
        aliases: tuple[str, ...] = ()
        if tool is not None:  # as the tool shows itself to hooks (Codex's exec_command as Bash)
            tool_name, tool_input, aliases = tool.hook_view(tool_input or {})
        if tool_name is not None:
            payload.update(tool_name=tool_name, tool_input=tool_input or {})
        result = self._hooks.run(event, payload, tool_name, tool_input, aliases, cancel=cancel)
        if result.context and event in ("SessionStart", "Notification", "CwdChanged"):
            with self._events_lock:
                self._pending_context.append(result.additional_context)
        return result

    # -- events between calls ------------------------------------------------------------------
    def on_task_end(self, callback: Callable[[dict[str, Any]], None]) -> None:
        """Call `callback(task)` when a background task ends: a dict with `id`, `command`,
        `status`, `status_text`, `exit_code`, `output_path` (from the watching thread)."""
        self._task_end_callbacks.append(callback)

    def _event(self, name: str, data: dict[str, Any]) -> None:
        if name == "connection":  # the network proxy or WebFetch opened (or was refused) one
            if self._audit is not None:
                self._audit.record_connection(session_id=self.id, record=data["record"])
            return
        if name == "notice":  # something the model must hear in the next result
            with self._events_lock:
                self._pending_context.append(str(data["text"]))
            return
        if name == "cwd_changed":
            self._run_hooks("CwdChanged", {"old_cwd": data.get("old"), "new_cwd": data.get("new")})
            return
        if name == "task_end":
            task = data["task"]
            self._checkpoint_task_end(task.id)
            with self._events_lock:
                self._ended_tasks.append(task)
            info = _task_info(task)
            self._run_hooks("Notification", {
                "message": f"Background task {info['id']} ({_short(info['command'])}) {info['status_text']}.",
                "notification_type": "task_end", "task": info})
            for callback in list(self._task_end_callbacks):
                try:
                    callback(info)
                except Exception:  # noqa: BLE001 - a listener never breaks the task's watcher
                    pass

    def _with_notices(self, result: ToolResult) -> ToolResult:
        """The next result after a background task ended tells the model so (unless it already
        saw the end through TaskOutput/BashOutput or stopped the task itself)."""
        if self._pending_context:
            with self._events_lock:
                context, self._pending_context = self._pending_context, []
            result.text += "\n\n" + "\n".join(context)
        if not self._ended_tasks:
            return result
        with self._events_lock:
            ended, self._ended_tasks = self._ended_tasks, []
        infos = [_task_info(t) for t in ended if not t.reported]
        for t in ended:
            t.reported = True
        if not infos:
            return result
        lines = [self._notification(i) for i in infos]
        result.text = result.text + "\n\n" + "\n".join(lines)
        result.data = {**(result.data or {}), "taskNotifications": infos}
        return result

    def _notification(self, info: dict[str, Any]) -> str:
        """Claude Code's <task-notification> for a task that ended (it sends one as a turn of its
        own; a tool layer has the next result to carry it)."""
        status = info["status"]
        if status == "completed":
            summary = self.texts("Bash.ended", code=info["exit_code"])
        elif status == "failed":
            summary = self.texts("Bash.failed", code=info["exit_code"])
        else:
            status, summary = "killed", self.texts("Bash.killed")
        return self.texts("Bash.notification", id=info["id"], output=info["output_path"], status=status,
                          command=_short(info["command"], 200), summary=summary)

    def service(self, factory: Callable[[ToolContext], T]) -> T:
        """A per-session singleton (see `ToolContext.service`)."""
        return self._services.get(factory, self.context("session"))

    def sandbox(self):
        """The session's Bash sandbox (`codebelt.sandbox.Sandbox`), probed on first use."""
        from .tools._services import sandbox

        return self.service(sandbox)

    def _jail_available(self) -> bool:
        return self.sandbox().jail.backend is not None

    def _sandbox_contains(self) -> bool:
        status = self.sandbox().status
        return bool(status.active and status.protected_paths)

    # -- tools -------------------------------------------------------------------------------
    @property
    def tools(self) -> Mapping[str, Tool]:
        """The session's tools by name (read-only; a tool's module is imported when its entry is
        first looked at: `name in session.tools` imports nothing)."""
        return self._tools

    def tool(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownToolError(self.texts("common.no_such_tool", name=name)) from None

    def tool_specs(self) -> list[dict[str, Any]]:
        return [t.spec(self.texts) for t in self._tools.values()]

    def tasks(self) -> list[dict[str, Any]]:
        """The session's background shell tasks: id, command, status, output file."""
        from .tools._services import task_manager

        manager = self._services.peek(task_manager)
        if manager is None:
            return []
        return [{**_task_info(t), "description": t.description} for t in manager.tasks()]

    # -- the pipeline ------------------------------------------------------------------------
    def call(
        self,
        name: str,
        input: Mapping[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        cancel_event: threading.Event | None = None,
    ) -> ToolResult:
        return self._call(name, input, None, progress, cancel_event)

    def _call(self, name: str, input: Any, prepared: _Prepared | None,
              progress: ProgressCallback | None, cancel_event: threading.Event | None) -> ToolResult:
        cancel_event = cancel_event or threading.Event()
        with self._running_lock:
            self._running.add(cancel_event)
        self._services.calls.begin()  # background work for later calls waits meanwhile
        try:
            return self._call_running(name, input, prepared, progress, cancel_event)
        finally:
            self._services.calls.end()
            with self._running_lock:
                self._running.discard(cancel_event)

    def _call_running(self, name: str, input: Any, prepared: _Prepared | None,
                      progress: ProgressCallback | None, cancel_event: threading.Event) -> ToolResult:
        started = time.perf_counter()
        decision: Decision | None = None
        tool_name = name
        use_id = None
        may_write = False
        checkpoint: int | None = None
        try:
            if self._closed:
                raise SessionClosed()
            if prepared is None:
                prepared = self._prepare(name, input)
            tool, params = prepared.tool, prepared.params
            tool_name = tool.name
            may_write = not tool.read_only
            use_id = f"toolu_{uuid.uuid4().hex[:20]}"
            pre = self._run_hooks("PreToolUse", {"tool_use_id": use_id}, tool.name, _as_input(input), tool,
                                  cancel=cancel_event)
            if cancel_event.is_set():
                raise Cancelled()
            if pre is not None and pre.updated_input is not None:
                # replaces the whole input: checked again against the schema, and decided again
                updated = tool.from_hook_input(pre.updated_input, _as_input(input))
                try:
                    prepared = self._prepare(tool.name, updated)
                except ToolError as e:
                    raise ToolError(f"A PreToolUse hook returned an updatedInput that is not valid: {e.message}") from None
                params, input = prepared.params, updated
            ctx = self.context(tool.name, cancel_event, progress)
            if pre is not None and pre.stop:
                raise ToolError(f"Stopped by a hook: {pre.stop_reason}")
            tool.validate(params, ctx)
            decision = self._permit(tool, params, input, ctx, pre)
            if decision.behavior != "allow":
                result = ToolResult.error(decision.message(tool.name), decision=decision.to_dict())
            else:
                ctx.decision = decision
                recording = self._checkpoint_begin(tool, params, ctx, decision)
                ran: ToolResult | None = None
                try:
                    ran = tool.run(params, ctx)
                finally:  # a call that failed half-way may still have written
                    checkpoint = self._checkpoint_finish(recording, ran)
                result = budget.apply(tool, ran, self.results_dir)
            if pre is not None:
                _add_hook_output(result, pre)
        except ToolError as e:
            result = ToolResult(text=e.message, data={"error": e.message, **e.data}, is_error=True)
        except PathError as e:
            result = ToolResult.error(f"{e} — give a path inside the workspace {self.workspace.root}.")
        except Cancelled:
            result = ToolResult.error(f"{tool_name} was cancelled before it finished.")
        except CodebeltError as e:
            result = ToolResult.error(str(e))
        except Exception as e:  # noqa: BLE001 — never hand a traceback to the model
            result = ToolResult.error(
                f"{tool_name} failed with an internal error: {type(e).__name__}: {e}. "
                "This is a bug in codebelt, not in your input; try another approach."
            )
        if use_id is not None:  # the tool was known and PreToolUse had its turn
            try:
                event = "PostToolUseFailure" if result.is_error else "PostToolUse"
                post = self._run_hooks(event, {"tool_use_id": use_id, "tool_response": result.data if result.data is not None else result.text},
                                       tool_name, _as_input(input), tool, cancel=cancel_event)
                if post is not None:
                    _add_hook_output(result, post)
            except Exception:  # noqa: BLE001 - a failing hook never fails the call
                pass
        if not result.text and not result.images:  # the model always reads something
            result.text = self.texts("common.empty", tool=tool_name)
        if may_write:  # whatever the outcome: a failed command may still have written
            self._services.workspace_changed()
        result = self._with_notices(result)
        self._record(tool_name, input, decision, result, started, checkpoint)
        return result

    async def acall(
        self,
        name: str,
        input: Mapping[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Async `call`; cancelling the awaiting task cancels the tool (and kills commands)."""
        return await self._acall(name, input, None, progress)

    async def _acall(self, name: str, input: Any, prepared: _Prepared | None,
                     progress: ProgressCallback | None) -> ToolResult:
        import asyncio  # here, not at the top: the CLI's start-up never needs it

        event = threading.Event()
        context = contextvars.copy_context()  # the caller's context variables reach the tool
        fut = asyncio.get_running_loop().run_in_executor(
            None, lambda: context.run(self._call, name, input, prepared, progress, event)
        )
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            event.set()
            # Give the tool a moment to stop (kill its process group) before we return.
            try:
                await asyncio.wait({fut}, timeout=15)
            except asyncio.CancelledError:
                pass
            raise

    async def call_many(
        self, calls: Iterable[tuple[str, Mapping[str, Any]]]
    ) -> list[ToolResult]:
        """Run consecutive concurrency-safe calls in parallel, the rest one at a time, in order."""
        import asyncio

        calls = list(calls)
        results: list[ToolResult | None] = [None] * len(calls)
        batch: list[int] = []
        prepared: list[_Prepared | None] = []
        for name, inp in calls:
            try:
                prepared.append(self._prepare(name, inp))
            except CodebeltError:
                prepared.append(None)  # the call reports its own error, in order

        async def flush() -> None:
            if batch:
                outs = await asyncio.gather(*(self._acall(*calls[i], prepared[i], None) for i in batch))
                for i, r in zip(batch, outs):
                    results[i] = r
                batch.clear()

        for i, p in enumerate(prepared):
            if p is not None and self._is_concurrency_safe(p):
                batch.append(i)
                continue
            await flush()
            results[i] = await self._acall(*calls[i], p, None)
        await flush()
        out = [r for r in results if r is not None]
        if self._hooks.has("PostToolBatch") and out:
            batch_calls = [{"tool_name": n, "tool_input": _as_input(i), "tool_response": r.data if r.data is not None else r.text,
                            "is_error": r.is_error} for (n, i), r in zip(calls, out)]
            done = await asyncio.get_running_loop().run_in_executor(
                None, lambda: self._run_hooks("PostToolBatch", {"tool_calls": batch_calls}))
            if done is not None:
                _add_hook_output(out[-1], done)
        return out

    # -- pipeline steps ----------------------------------------------------------------------
    @staticmethod
    def _is_concurrency_safe(p: _Prepared) -> bool:
        try:
            return bool(p.tool.is_concurrency_safe(p.params))
        except Exception:  # noqa: BLE001 - unknown means: run it alone
            return False

    def _prepare(self, name: str, input: Any) -> _Prepared:
        tool = self.tool(name)
        if input is None:
            input = {}
        if not isinstance(input, Mapping):
            raise ToolError(
                f"Input to {tool.name} must be a JSON object, got {type(input).__name__}."
            )
        data = coerce_input(tool.Input, dict(input))
        # a declared input a plain check settles needs no pydantic; anything else, and every error, is pydantic's
        params = plain_params(tool.Input, data)
        if params is None:
            from pydantic import ValidationError

            try:
                params = tool.Input.model_validate(data)
            except ValidationError as e:
                raise ToolError(tool.input_error(dict(input), e)
                                or describe_validation_error(tool.name, e, self.texts, tool.Input)) from None
        return _Prepared(tool, params)

    def _permit(self, tool: Tool, params: Any, raw: Any, ctx: ToolContext, pre: Any = None) -> Decision:
        """The call's decision. Hooks and approvals settle whether it runs; how what it starts is
        confined stays the engine's answer."""
        requests = tool.permission_requests(params, ctx)
        # a tool of another profile is decided as the tool it stands for (exec_command as Bash)
        decision = self.engine.decide(tool.rules_as or tool.name, requests)
        return self._decide(tool, params, raw, ctx, pre, requests, decision).confined(decision.confinement)

    def _decide(self, tool: Tool, params: Any, raw: Any, ctx: ToolContext, pre: Any, requests: list,
                decision: Decision) -> Decision:
        hooked = pre.permission if pre is not None else None
        if hooked == "deny":
            return Decision.deny(f"denied by a PreToolUse hook: {pre.permission_reason or '; '.join(pre.reasons) or 'no reason given'}",
                                 "rule")
        if hooked == "allow" and decision.behavior == "ask":
            # a hook may answer a question, never widen access past a deny
            return Decision.allow(f"allowed by a PreToolUse hook{': ' + pre.permission_reason if pre.permission_reason else ''}", "rule")
        if hooked == "ask" and decision.behavior == "allow":
            decision = Decision.ask(f"a PreToolUse hook asks: {pre.permission_reason or 'confirm this call'}", "rule")
        if decision.behavior == "ask" and self._hooks.has("PermissionRequest"):
            answer = self._run_hooks("PermissionRequest", {"permission_suggestions": [decision.suggestion] if decision.suggestion else []},
                                     tool.name, _as_input(raw), tool)
            if answer is not None and answer.permission in ("allow", "deny"):
                return Decision(answer.permission, f"{answer.permission_reason or 'decided'} (PermissionRequest hook)", "rule")  # type: ignore[arg-type]
        if decision.behavior == "ask":
            if self.approver is not None:  # someone would be asked: not about a call that cannot work
                tool.precheck(params, ctx)
            decision = self._ask(tool, params, raw, decision, ctx, requests)
            ctx.forget_resolutions()
            if decision.behavior == "allow" and tool.permission_requests(params, ctx) != requests:
                # A symlink or directory was swapped while the user decided: what was approved
                # is no longer what would run (TOCTOU). Refuse rather than write elsewhere.
                return Decision.deny(
                    "the paths this call touches changed while approval was pending (a symlink "
                    "or directory was replaced); nothing was done. Call again to be asked about "
                    "the new paths",
                    "workspace",
                )
        return decision

    def _ask(self, tool: Tool, params: Any, raw: Any, decision: Decision, ctx: ToolContext,
             requests: list[Any]) -> Decision:
        if self.approver is None:
            return decision.refused("no approver is attached to this session")
        try:
            detail = tool.summarize(params)
        except Exception:  # noqa: BLE001 - the request then shows the raw input
            detail = None
        try:
            preview = tool.preview(params, ctx)
        except Exception:  # noqa: BLE001 - a preview is a courtesy; the summary still shows
            preview = None
        # Why it asks, for each part that asks (every file of a patch), not only the first.
        reasons: tuple[str, ...] = ()
        if len(requests) > 1:
            asked = [self.engine.decide(tool.name, [r]) for r in requests]
            reasons = tuple(d.reason for d in asked if d.behavior == "ask") or (decision.reason,)
        request = ApprovalRequest(tool=tool.name, input=dict(raw or {}), decision=decision, detail=detail,
                                  preview=preview, reasons=reasons)
        try:
            approved = bool(self.approver(request))
        except ApprovalRefused as e:  # the approver could not ask anyone, and says why
            return decision.refused(str(e))
        except Exception as e:  # an approver failure is a refusal, never a crash
            return decision.refused(f"the approver failed: {type(e).__name__}: {e}")
        return decision.answered(approved)

    def _record(
        self,
        tool: str,
        input: Any,
        decision: Decision | None,
        result: ToolResult,
        started: float,
        checkpoint: int | None = None,
    ) -> None:
        if self._audit is None:
            return
        self._audit.record(
            session_id=self.id,
            workspace=str(self.workspace.root),
            tool=tool,
            input=input,
            decision=decision,
            duration_ms=(time.perf_counter() - started) * 1000,
            result_chars=len(result.text),
            is_error=result.is_error,
            error=result.text if result.is_error else None,
            checkpoint=checkpoint,
        )

    # -- checkpoints -------------------------------------------------------------------------
    def _checkpoints(self):
        from .tools._services import checkpoints

        return self.service(checkpoints)

    def _start_checkpoints(self) -> None:
        """The checkpoint baseline, begun in the background once no call runs (a writing command
        waits only for its watches, never for its contents; one that comes first begins the
        baseline itself: `_checkpoint_begin`)."""
        self._services.calls.wait("checkpoint baseline")
        try:
            book = self._checkpoints()
            if book is not None:
                book.start_background()
        except Exception:  # noqa: BLE001 - closed meanwhile, or no store: the first command tries again
            pass

    def _checkpoint_begin(self, tool: Tool, params: Any, ctx: ToolContext, decision: Decision):
        from . import checkpointing

        if not checkpointing.may_record(tool):
            return None
        try:
            book = self._checkpoints()
            if book is None:
                return None
            if self.settings.checkpoints.baseline_at_start and decision.decided_by != "read-only":
                # begun now if the session's start is still waiting for a quiet moment: as at the
                # session's start, so a command waits for the watches only
                book.start_background()
            return checkpointing.begin(book, tool, params, ctx, decision)
        except Exception:  # noqa: BLE001 - a checkpoint that cannot be made never stops the call
            return None

    def _checkpoint_finish(self, recording: Any, result: ToolResult | None) -> int | None:
        from . import checkpointing

        if recording is None:
            return None
        try:
            return checkpointing.finish(recording.book, recording, result or ToolResult(""), self._task_done)
        except Exception:  # noqa: BLE001 - nor does one that cannot be stored
            return None

    def _task_done(self, task_id: str) -> bool:
        return any(t["id"] == task_id and t["status"] != "running" for t in self.tasks())

    def _checkpoint_task_end(self, task_id: str) -> None:
        from .tools._services import checkpoints

        book = self._services.peek(checkpoints)
        if book is not None:
            try:
                book.close_task(task_id)
            except Exception:  # noqa: BLE001 - the task's watcher thread must go on
                pass

    def checkpoints(self, *, all_sessions: bool = False) -> list[dict[str, Any]]:
        """This session's checkpoints (every session's in this workspace with `all_sessions`),
        oldest first: id, kind (call, task, rewind), tool, label, paths changed, paths whose
        earlier content was not kept, notes."""
        book = self._checkpoints()
        if book is None:
            return []
        return [{**cp.summary(), "paths": [book.relative(c.path) for c in cp.changes],
                 "notKept": [book.relative(p) for p in cp.summary()["notKept"]]}
                for cp in book.list(session=None if all_sessions else self.id)]

    def rewind(self, checkpoint_id: int, *, force: bool = False, dry_run: bool = False,
               all_sessions: bool = False):
        """Back to the state before checkpoint `checkpoint_id`: it and every later checkpoint of
        this session (of every session in the workspace with `all_sessions`) undone, newest
        first. A path someone else changed since is reported and left unless `force`. The
        rewind is itself a checkpoint (undo it to redo). Returns a `RewindReport` (`.text()`,
        `.to_dict()`, `.diff` with `dry_run`)."""
        book = self._require_checkpoints()
        try:
            return book.rewind(int(checkpoint_id), session=None if all_sessions else self.id, force=force,
                               dry_run=dry_run)
        except KeyError:
            raise ToolError(f"No checkpoint {checkpoint_id} in this workspace (see the list of checkpoints).") from None
        finally:
            self._services.workspace_changed()

    def undo(self, *, force: bool = False, dry_run: bool = False, all_sessions: bool = False):
        """Undo this session's last checkpoint (undoing a rewind redoes it)."""
        book = self._require_checkpoints()
        try:
            return book.undo(session=None if all_sessions else self.id, force=force, dry_run=dry_run)
        finally:
            self._services.workspace_changed()

    def reset(self, *, force: bool = False, dry_run: bool = False):
        """Back to the workspace as it was when this session started (its first checkpoint)."""
        book = self._require_checkpoints()
        mine = book.list(session=self.id, limit=1_000_000)
        if not mine:
            from .checkpoints import RewindReport

            return RewindReport([], [], [], dry_run=dry_run)
        return self.rewind(mine[0].id, force=force, dry_run=dry_run)

    def _require_checkpoints(self):
        if self._closed:
            raise SessionClosed()
        book = self._checkpoints()
        if book is None:
            raise SettingsError("checkpoints are turned off (setting checkpoints.enabled)")
        return book

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """End background tasks, flush the audit log and remove the session's temp files."""
        if self._closed:
            return
        with self._running_lock:
            running = list(self._running)
        for cancel in running:
            cancel.set()
        try:
            self._run_hooks("SessionEnd", {"reason": "other"})
        except Exception:  # noqa: BLE001 - a hook never keeps a session open
            pass
        self._closed = True
        self._services.close()  # wakes the start threads waiting for a quiet moment: they end
        for t in getattr(self, "_starting", ()):
            if t is not threading.current_thread():
                t.join(START_JOIN_S)
        if self._audit is not None:
            self._audit.close()
        shutil.rmtree(self._tmp, ignore_errors=True)
        os.close(self._tmp_lock)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
