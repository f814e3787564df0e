"""The generic bridge: every tool of a Session served over MCP by one list handler and one call
handler on the SDK's low-level `Server` (which takes raw JSON Schemas, unlike `MCPServer`).

tools/list → each tool with its input and output schema, description and annotations taken from
the tool's own flags. tools/call → the Session pipeline in a worker thread, under a per-call
scope that routes `ask` decisions to this request's client (approval.py), reports progress on
this request and turns a client cancellation into the tool's cancel event.

Which Session: with a `session_factory`, every MCP session of a client (streamable HTTP, one
`mcp-session-id`) gets a Session of its own on its first call — its own background tasks, read
records, working directory, approvals and audit id — closed (tasks killed, temp files removed)
when that MCP session ends: the client's DELETE, the idle timeout, or the server stopping. What
has no MCP session (stdio, whose one client owns the process; the 2026-07-28 protocol, which has
no sessions) is served by the Session the bridge was built with.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from .approval import (
    APPROVAL_KEY,
    APPROVAL_SCHEMA,
    CallScope,
    ElicitationApprover,
    current_call,
    decode_state,
    encode_state,
    question_digest,
)
from .instructions import instructions_for

if TYPE_CHECKING:
    from ..session import Session
    from ..tool import Tool, ToolResult

log = logging.getLogger("codebelt.mcp")

# How long a cancelled call may take to stop (Bash: SIGTERM, grace, SIGKILL) before the
# handler gives up waiting for it. The tool keeps its cancel event either way.
CANCEL_GRACE_SECONDS = 15.0


def tool_annotations(tool: "Tool") -> types.ToolAnnotations:
    read_only = bool(tool.read_only)
    return types.ToolAnnotations(
        read_only_hint=read_only,
        # Only meaningful for tools that write; a read-only tool destroys nothing.
        destructive_hint=False if read_only else bool(tool.destructive),
        idempotent_hint=True if read_only else bool(tool.idempotent),
        open_world_hint=bool(tool.open_world),
    )


def mcp_tool(tool: "Tool") -> types.Tool:
    output_schema = tool.output_schema()
    if output_schema is not None and output_schema.get("type") != "object":
        output_schema = None  # protocol versions up to 2025-11-25 only allow object roots
    return types.Tool(
        name=tool.name,
        # a freeform tool (Codex's apply_patch) is a function here: the text goes in `input`
        description=getattr(tool, "function_description", None) or tool.description,
        input_schema=tool.input_schema(),
        output_schema=output_schema,
        annotations=tool_annotations(tool),
    )


# Where a client's own Session is kept on its MCP connection.
_CLIENT_KEY = "codebelt.client"
CLOSE_WAIT_SECONDS = 30.0  # how long Bridge.close waits for client sessions still closing


class _Client:
    """One MCP client session's codebelt Session, and where its task notifications go."""

    def __init__(self, session: "Session"):
        self.session = session
        self.peer: tuple[Any, asyncio.AbstractEventLoop] | None = None


class Bridge:
    """Serves a Session over MCP (one per client session with `session_factory`). Build the SDK
    server with `.server`."""

    def __init__(self, session: "Session", *, name: str = "codebelt", max_workers: int = 32,
                 session_factory: "Callable[[], Session] | None" = None):
        from .. import __version__

        self.session = session
        self._factory = session_factory
        self._clients: set[_Client] = set()
        self._clients_lock = threading.Lock()
        self._client_created = asyncio.Lock()  # one Session per connection, however many calls race
        self._closers: list[threading.Thread] = []
        self._tools: dict[str, Tool] = session.tools
        self._listing = [mcp_tool(t) for t in self._tools.values()]
        self._schemas = {t.name: t.input_schema for t in self._listing}
        self._output_schemas = {t.name: t.output_schema for t in self._listing if t.output_schema}
        self._validators: dict[str, Any] = {}
        # Our own pool: one thread per running call, so a call waiting for the user's answer
        # never holds up the event loop or the default executor.
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="codebelt-mcp"
        )
        # While it serves MCP, the Session's `ask` decisions go to the client of each call.
        _ask_clients(session)
        self.server: Server[Any] = Server(
            name,
            version=__version__,
            title="codebelt",
            description="Read, search, edit and run commands in a workspace, with permission checks.",
            instructions=instructions_for(str(session.workspace.root)),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=self._schemas.get,
        )
        self._install_request_state_seal(name)
        # The client that called last hears when a background task ends (a log notification);
        # it also sees it in its next tool result.
        self._shared = _Client(session)
        session.on_task_end(functools.partial(self._task_ended, self._shared))

    def _task_ended(self, client: _Client, info: dict[str, Any]) -> None:
        peer = client.peer
        if peer is None:
            return
        mcp_session, loop = peer
        note = types.LoggingMessageNotification(params=types.LoggingMessageNotificationParams(
            level="info", logger="codebelt.tasks",
            data={"event": "task_end", **info,
                  "message": f"Background task {info['id']} ({info['command'][:80]}) {info['status_text']}."},
        ))

        async def send() -> None:
            try:
                await mcp_session.send_notification(note)
            except Exception as e:  # no channel for unsolicited messages: the next result says it
                log.debug("task notification not sent: %s", e)

        if loop.is_closed():
            return
        coro = send()
        try:
            asyncio.run_coroutine_threadsafe(coro, loop)
        except RuntimeError:  # the loop ended meanwhile: nothing to send, nothing left pending
            coro.close()

    def _install_request_state_seal(self, name: str) -> None:
        """Seal the `request_state` we hand the client (2026-07-28 retries) with the SDK's boundary."""
        from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

        self.server.middleware.append(
            RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=name)
        )

    def close(self) -> None:
        """Stop serving: running calls are abandoned to their cancel events, client sessions
        close (their tasks killed, their temp files removed)."""
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._clients_lock:
            clients, self._clients = list(self._clients), set()
        for client in clients:
            self._start_closing(client)
        deadline = time.monotonic() + CLOSE_WAIT_SECONDS
        for thread in list(self._closers):
            thread.join(max(0.0, deadline - time.monotonic()))

    # -- a Session per client session ----------------------------------------------------------
    async def _client_for(self, ctx: Any) -> _Client:
        """The calling client's own Session, made on its first call; the shared one when there
        is no factory or no MCP session to tie one to."""
        # The SDK's per-client Connection (its `state` and `exit_stack` are the documented place
        # for per-connection data and cleanup); the low-level handler context reaches it only
        # through its ServerSession.
        connection = getattr(ctx.session, "_connection", None)
        if self._factory is None or connection is None or getattr(connection, "session_id", None) is None:
            return self._shared
        client = connection.state.get(_CLIENT_KEY)
        if client is not None:
            return client
        async with self._client_created:
            client = connection.state.get(_CLIENT_KEY)
            if client is None:
                loop = asyncio.get_running_loop()
                session = await loop.run_in_executor(self._executor, self._factory)
                _ask_clients(session)
                client = _Client(session)
                session.on_task_end(functools.partial(self._task_ended, client))
                with self._clients_lock:
                    self._clients.add(client)
                connection.state[_CLIENT_KEY] = client
                connection.exit_stack.push_async_callback(self._retire, client)
        return client

    async def _retire(self, client: _Client) -> None:
        """The client's MCP session ended: close its Session. In a thread of its own (killing
        its commands takes a grace period), so the SDK's bounded cleanup is never held up."""
        with self._clients_lock:
            if client not in self._clients:
                return
            self._clients.discard(client)
        self._start_closing(client)

    def _start_closing(self, client: _Client) -> None:
        thread = threading.Thread(target=client.session.close, name="codebelt-mcp-close", daemon=True)
        self._closers = [t for t in self._closers if t.is_alive()] + [thread]
        thread.start()

    # -- tools/list --------------------------------------------------------------------------
    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(self._listing))

    # -- tools/call --------------------------------------------------------------------------
    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        name = params.name
        if name not in self._tools:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool {name!r}. Available tools: {', '.join(sorted(self._tools))}.",
            )
        loop = asyncio.get_running_loop()
        client = await self._client_for(ctx)
        client.peer = (ctx.session, loop)
        cancel_event = threading.Event()
        scope = CallScope(
            ctx=ctx,
            loop=loop,
            cancel_event=cancel_event,
            input_responses=params.input_responses,
            asked_digest=decode_state(params.request_state),
        )
        progress = _ProgressRelay(ctx, loop)
        run_ctx = contextvars.copy_context()
        run_ctx.run(current_call.set, scope)
        work = functools.partial(
            client.session.call,
            name,
            params.arguments or {},
            progress=progress,
            cancel_event=cancel_event,
        )
        future = loop.run_in_executor(self._executor, run_ctx.run, work)
        try:
            result = await asyncio.shield(future)
        except BaseException:
            # Client cancellation (notifications/cancelled) or shutdown: stop the tool (Bash
            # kills its process group) and wait for it, shielded, so nothing outlives the call.
            cancel_event.set()
            with anyio.CancelScope(shield=True):
                with anyio.move_on_after(CANCEL_GRACE_SECONDS):
                    try:
                        await asyncio.shield(future)
                    except Exception:
                        pass
            raise
        await progress.flush()
        if scope.pending_message is not None:
            return _input_required(scope.pending_message)
        return self._to_mcp(name, result)

    def _to_mcp(self, name: str, result: "ToolResult") -> types.CallToolResult:
        content: list[Any] = [types.TextContent(text=result.text)] if result.text else []
        content += [types.ImageContent(data=i.data, mime_type=i.mime_type) for i in result.images]
        # MCP has no document block a client hands to its model: the document's text stands in
        content += [types.TextContent(text=d.text) for d in result.documents]
        structured = None
        if not result.is_error and name in self._output_schemas:
            structured = result.data if result.data is not None else {}
            self._check_structured(name, structured)
        return types.CallToolResult(content=content, structured_content=structured, is_error=result.is_error)

    def _check_structured(self, name: str, data: Any) -> None:
        """Log (never hide) structured output that does not match the declared outputSchema."""
        validator = self._validators.get(name)
        if validator is None:
            from jsonschema import validators

            schema = self._output_schemas[name]
            validator = self._validators[name] = validators.validator_for(schema)(schema)
        error = next(iter(validator.iter_errors(data)), None)
        if error is not None:
            log.warning("%s: structured output does not match its outputSchema: %s", name, error.message)


def _ask_clients(session: "Session") -> None:
    """While a Session serves MCP, its `ask` decisions go to the client of each call."""
    previous = session.approver
    if isinstance(previous, ElicitationApprover):
        previous = previous.fallback
    session.approver = ElicitationApprover(fallback=previous)


def _input_required(message: str) -> types.InputRequiredResult:
    question = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=APPROVAL_SCHEMA)
    )
    return types.InputRequiredResult(
        input_requests={APPROVAL_KEY: question},
        request_state=encode_state(question_digest(message)),
    )


class _ProgressRelay:
    """The tool's progress callback (worker thread) → MCP progress notifications (event loop).

    `report_progress` is a no-op unless the client sent a progressToken with the call. The
    notifications are sent in order and flushed before the result, so none arrives after it.
    """

    def __init__(self, ctx: Any, loop: asyncio.AbstractEventLoop):
        self._ctx = ctx
        self._loop = loop
        self._count = 0
        self._lock = threading.Lock()
        self._last: concurrent.futures.Future[Any] | None = None

    def __call__(self, message: str, data: dict[str, Any]) -> None:
        with self._lock:
            self._count += 1
            count, previous = self._count, self._last
            self._last = asyncio.run_coroutine_threadsafe(self._send(previous, count, message), self._loop)

    async def _send(self, previous: concurrent.futures.Future[Any] | None, count: int, message: str) -> None:
        if previous is not None:  # keep notifications in order
            try:
                await asyncio.wrap_future(previous)
            except Exception:
                pass
        try:
            await self._ctx.session.report_progress(float(count), None, message)
        except Exception as e:  # a lost progress notification never fails the call
            log.debug("progress notification failed: %s", e)

    async def flush(self) -> None:
        with self._lock:
            last = self._last
        if last is not None:
            try:
                await asyncio.wrap_future(last)
            except Exception:
                pass
