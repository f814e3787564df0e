"""Session: the call pipeline every tool call goes through, whatever the interface.

call → validate against the schema (with semantic coercion) → tool.validate → permission
decision (ask → approver) → tool.run → budget → audit → ToolResult.
"""

from __future__ import annotations

import contextvars
import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

from pydantic import ValidationError

from . import budget
from .coerce import coerce_input, describe_validation_error
from .errors import PathError, UnknownToolError
from .permissions.approvers import ApprovalRefused, Approver, ApprovalRequest
from .permissions.decision import Decision
from .permissions.engine import PermissionEngine
from .settings import Settings, load_settings
from .tool import Cancelled, ProgressCallback, Tool, ToolContext, ToolError, ToolResult
from .workspace import Workspace

T = TypeVar("T")

MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")


class Session:
    """One agent's view of one workspace: tools, policy, state and audit trail.

    `settings` is a dict in the settings-file format, merged on top of the files found under
    `root`. `approver` answers `ask` decisions (a callable taking an ApprovalRequest and
    returning True/False); without one, `ask` becomes `deny` with the rule that would allow it.
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
        tools: Iterable[type[Tool]] | None = None,
    ):
        root_path = Path(root).expanduser()
        if not root_path.is_dir():
            raise PathError(f"workspace root {root} is not a directory")
        self.id = session_id or uuid.uuid4().hex[:12]
        self.settings: Settings = load_settings(
            root_path,
            explicit=settings,
            settings_file=Path(settings_file) if settings_file else None,
            load_user=load_user_settings,
        )
        if mode is not None:
            self.settings.set("permissions.defaultMode", mode)
        if sandbox is not None:
            self.settings.set("sandbox.mode", sandbox)
        self.mode = self.settings.get("permissions.defaultMode", "default")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; expected one of {', '.join(MODES)}")

        self._tmp = Path(tempfile.mkdtemp(prefix=f"codebelt-{self.id}-"))
        self.results_dir = self._tmp / "results"
        self.results_dir.mkdir()
        self.temp_dir = self._tmp / "tmp"  # the per-session TMPDIR for shell commands
        self.temp_dir.mkdir()
        extra = [
            (root_path / d) if not Path(d).expanduser().is_absolute() else Path(d).expanduser()
            for d in self.settings.get("permissions.additionalDirectories", [])
        ]
        self.workspace = Workspace(
            root_path, [d for d in extra if d.is_dir()], internal_read_dirs=[self.results_dir]
        )
        self.approver = approver
        self.engine = PermissionEngine(self.settings, self.workspace, self.mode, session=self)

        from .tools import registry  # local: the registry imports every tool module

        self._tools: dict[str, Tool] = {t.name: t() for t in (tools or registry())}
        self._services: dict[Any, Any] = {}
        self._services_lock = threading.RLock()
        self._audit = None
        if audit:
            from .audit import AuditLog

            self._audit = AuditLog.open(None if audit is True else Path(audit))
        self._closed = False

    # -- settings and services ---------------------------------------------------------------
    def setting(self, dotted: str, default: T) -> T:
        return self.settings.get(dotted, default)

    def service(self, factory: Callable[["Session"], T]) -> T:
        with self._services_lock:
            if factory not in self._services:
                self._services[factory] = factory(self)
            return self._services[factory]

    # -- tools -------------------------------------------------------------------------------
    @property
    def tools(self) -> dict[str, Tool]:
        return dict(self._tools)

    def tool(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownToolError(
                f"Unknown tool {name!r}. Available tools: {', '.join(sorted(self._tools))}."
            ) from None

    def tool_specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self._tools.values()]

    def tasks(self) -> list[dict[str, Any]]:
        """The session's background shell tasks: id, command, status, output file."""
        from .shell.execution.tasks import TaskManager

        return [
            {"id": t.id, "command": t.command, "description": t.description,
             "status": t.status(), "status_text": t.status_text(), "output_path": str(t.output_path)}
            for t in self.service(TaskManager).tasks()
        ]

    # -- the pipeline ------------------------------------------------------------------------
    def call(
        self,
        name: str,
        input: Mapping[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        cancel_event: threading.Event | None = None,
    ) -> ToolResult:
        started = time.perf_counter()
        decision: Decision | None = None
        try:
            tool = self.tool(name)
        except UnknownToolError as e:
            result = ToolResult.error(str(e))
            self._record(name, input, None, result, started)
            return result
        ctx = ToolContext(self, tool.name, cancel_event or threading.Event(), progress)
        try:
            params = self._parse(tool, input)
            tool.validate(params, ctx)
            decision = self._permit(tool, params, input, ctx)
            if decision.behavior != "allow":
                result = ToolResult.error(decision.message(tool.name), decision=decision.to_dict())
            else:
                result = tool.run(params, ctx)
                result = budget.apply(tool, result, self.results_dir)
        except ToolError as e:
            result = ToolResult(text=e.message, data={"error": e.message, **e.data}, is_error=True)
        except PathError as e:
            result = ToolResult.error(f"{e} — give a path inside the workspace {self.workspace.root}.")
        except Cancelled:
            result = ToolResult.error(f"{tool.name} was cancelled before it finished.")
        except Exception as e:  # noqa: BLE001 — never hand a traceback to the model
            result = ToolResult.error(
                f"{tool.name} failed with an internal error: {type(e).__name__}: {e}. "
                "This is a bug in codebelt, not in your input; try another approach."
            )
        self._record(tool.name, input, decision, result, started)
        return result

    async def acall(
        self,
        name: str,
        input: Mapping[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Async `call`; cancelling the awaiting task cancels the tool (and kills commands)."""
        import asyncio  # here, not at the top: the CLI's start-up never needs it

        event = threading.Event()
        context = contextvars.copy_context()  # the caller's context variables reach the tool
        fut = asyncio.get_running_loop().run_in_executor(
            None, lambda: context.run(self.call, name, input, progress=progress, cancel_event=event)
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

        async def flush() -> None:
            if batch:
                outs = await asyncio.gather(*(self.acall(*calls[i]) for i in batch))
                for i, r in zip(batch, outs):
                    results[i] = r
                batch.clear()

        for i, (name, inp) in enumerate(calls):
            if self._is_concurrency_safe(name, inp):
                batch.append(i)
                continue
            await flush()
            results[i] = await self.acall(name, inp)
        await flush()
        return [r for r in results if r is not None]

    # -- pipeline steps ----------------------------------------------------------------------
    def _is_concurrency_safe(self, name: str, inp: Mapping[str, Any]) -> bool:
        try:
            tool = self.tool(name)
            return bool(tool.is_concurrency_safe(self._parse(tool, inp)))
        except Exception:
            return False

    def _parse(self, tool: Tool, input: Mapping[str, Any] | None) -> Any:
        if input is None:
            input = {}
        if not isinstance(input, Mapping):
            raise ToolError(
                f"Input to {tool.name} must be a JSON object, got {type(input).__name__}."
            )
        try:
            return tool.Input.model_validate(coerce_input(tool.Input, dict(input)))
        except ValidationError as e:
            raise ToolError(describe_validation_error(tool.name, e)) from None

    def _permit(self, tool: Tool, params: Any, raw: Any, ctx: ToolContext) -> Decision:
        requests = tool.permission_requests(params, ctx)
        decision = self.engine.decide(tool.name, requests)
        if decision.behavior == "ask":
            decision = self._ask(tool, raw, decision)
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

    def _ask(self, tool: Tool, raw: Any, decision: Decision) -> Decision:
        if self.approver is None:
            return decision.refused("no approver is attached to this session")
        request = ApprovalRequest(tool=tool.name, input=dict(raw or {}), decision=decision)
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
        )

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """End background tasks, flush the audit log and remove the session's temp files."""
        if self._closed:
            return
        self._closed = True
        with self._services_lock:
            services = list(self._services.values())
            self._services.clear()
        for s in services:
            close = getattr(s, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:
                    pass
        if self._audit is not None:
            self._audit.close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
