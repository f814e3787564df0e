"""The MCP server entry point for library users: build the SDK server for a Session and run it.

    from codebelt import Session
    from codebelt.mcp.server import create_server, run_stdio, run_http

    with Session(root=".") as s:
        run_stdio(s)                                  # blocks; `codebelt serve` does this
        # run_http(s, "127.0.0.1", 8765, token=None,  # streamable HTTP at /mcp; a Session per client:
        #          session_factory=lambda: Session(root="."))

`create_server(s)` returns the `codebelt.mcp.Bridge`; `.server` is the SDK's low-level Server,
for embedding in your own transport or ASGI app. 
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..session import Session
    from .bridge import Bridge


def announce(session: "Session") -> None:
    """Say in the server's log (stderr, which MCP clients keep as the server's log) what of the
    settings was ignored, and how to trust the workspace whose own settings were narrowed."""
    import logging

    log = logging.getLogger("codebelt.mcp")
    for warning in session.settings.warnings:
        log.warning("codebelt: warning: %s", warning)


def create_server(session: "Session", **kwargs: Any) -> "Bridge":
    from .bridge import Bridge

    return Bridge(session, **kwargs)


def run_stdio(session: "Session") -> None:
    import anyio

    from .transport import serve_stdio

    announce(session)
    bridge = create_server(session)
    try:
        anyio.run(serve_stdio, bridge)
    finally:
        bridge.close()


def run_http(
    session: "Session",
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    *,
    allowed_hosts: list[str] | None = None,
    ready: Any = None,
    max_sessions: int | None = None,
    session_idle_timeout: float | None = None,
    session_factory: "Callable[[], Session] | None" = None,
) -> None:
    """Serve streamable HTTP until SIGTERM or SIGINT (then every client's Session is closed and
    this returns). With `session_factory`, each MCP client session gets a Session of its own
    (its own tasks, read records, working directory, approvals), closed when it ends; without
    one, every client shares `session`."""
    import functools

    import anyio

    from .transport import serve_http

    announce(session)
    bridge = create_server(session, session_factory=session_factory)
    try:
        anyio.run(functools.partial(serve_http, bridge, host, port, token, allowed_hosts=allowed_hosts, ready=ready,
                                    max_sessions=max_sessions, session_idle_timeout=session_idle_timeout))
    finally:
        bridge.close()
