"""Running the bridge: stdio, or streamable HTTP with bearer-token auth and Host/Origin checks."""

from __future__ import annotations

import contextlib
import errno
import hmac
import ipaddress
import logging
import signal
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from .bridge import Bridge

log = logging.getLogger("codebelt.mcp")

MCP_PATH = "/mcp"
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
# Library defaults; `codebelt serve` passes its own (--max-sessions, --session-idle-timeout).
DEFAULT_MAX_SESSIONS = 64
DEFAULT_IDLE_S = 900.0


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_patterns(host: str) -> list[str]:
    h = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return [h, f"{h}:*"]


def security_settings(host: str, extra_hosts: list[str] | None = None) -> Any:
    """DNS-rebinding protection: the Host header must name this server, and a browser's Origin
    must be this server. A page on another site (or a rebound DNS name) is refused (421/403).

    A wildcard bind (0.0.0.0, ::) cannot know the names it is reached by, so it checks only the
    names given in `extra_hosts`, if any; its bearer token is what keeps other sites out.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    names: list[str] = []
    if is_loopback(host):
        names += ["127.0.0.1", "localhost", "::1"]
    elif host not in WILDCARD_HOSTS:
        names.append(host)
    names += extra_hosts or []
    if not names:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts: list[str] = []
    origins: list[str] = []
    for name in names:
        for pattern in _host_patterns(name):
            hosts.append(pattern)
            origins += [f"http://{pattern}", f"https://{pattern}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class StaticTokenVerifier:
    """The SDK's TokenVerifier hook for one shared secret, compared in constant time."""

    def __init__(self, token: str):
        if not token:
            raise ValueError("the bearer token must not be empty")
        self._token = token.encode()

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token="codebelt", client_id="codebelt", scopes=[])
        return None


def http_app(
    bridge: "Bridge",
    host: str,
    port: int,
    token: str | None = None,
    *,
    allowed_hosts: list[str] | None = None,
    max_sessions: int | None = None,
    session_idle_timeout: float | None = None,
) -> "Starlette":
    """The streamable HTTP ASGI app at /mcp. With `token`, every request needs
    `Authorization: Bearer <token>` (else 401). A non-loopback `host` requires a token.
    At most `max_sessions` MCP sessions are open at once (another gets 503), and a session
    with no request for `session_idle_timeout` seconds is ended (its id then answers 404)."""
    if not is_loopback(host) and not token:
        raise ValueError(
            f"serving on {host} (not a loopback address) requires a bearer token: "
            "pass --token or set CODEBELT_TOKEN"
        )
    kwargs: dict[str, Any] = {}
    if token:
        from mcp.server.auth.settings import AuthSettings

        url = f"http://{_host_patterns(host)[0]}:{port}"
        kwargs["token_verifier"] = StaticTokenVerifier(token)
        # The SDK wires its bearer middleware from AuthSettings; codebelt issues no OAuth tokens,
        # so the issuer is this server itself and no OAuth routes are mounted.
        kwargs["auth"] = AuthSettings(issuer_url=url, resource_server_url=None)
    return bridge.server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=security_settings(host, allowed_hosts),
        host=host,
        max_sessions=max_sessions or DEFAULT_MAX_SESSIONS,
        session_idle_timeout=session_idle_timeout or DEFAULT_IDLE_S,
        **kwargs,
    )


async def serve_stdio(bridge: "Bridge") -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await bridge.server.run(read_stream, write_stream, bridge.server.create_initialization_options())


async def serve_http(
    bridge: "Bridge",
    host: str,
    port: int,
    token: str | None = None,
    *,
    allowed_hosts: list[str] | None = None,
    ready: Any = None,
    max_sessions: int | None = None,
    session_idle_timeout: float | None = None,
    stop_on_signals: bool = True,
) -> None:
    """Serve until cancelled, or (`stop_on_signals`, on the main thread) until SIGTERM or SIGINT:
    then stop accepting, end every MCP session (their Sessions close: tasks killed, temp files
    removed) and return normally; a second signal skips the wait for open connections.
    `ready(port)` is called once the socket listens (port 0 → real port)."""
    import anyio
    import uvicorn

    app = http_app(bridge, host, port, token, allowed_hosts=allowed_hosts, max_sessions=max_sessions,
                   session_idle_timeout=session_idle_timeout)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", access_log=False,
        # Clients holding a stream open keep their connection until the sessions end, which
        # happens after this wait: it is short, and the notice of its end is not shown.
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )
    server = _Server(config)
    logging.getLogger("uvicorn.error").addFilter(_quiet_shutdown)
    sock = listening_socket(host, port)

    async def announce() -> None:
        while not server.started:
            await anyio.sleep(0.02)
        sockets = [s for srv in server.servers for s in srv.sockets]
        ready(sockets[0].getsockname()[1] if sockets else port)

    async def stop_on(signals: Any) -> None:
        async for _ in signals:
            if server.should_exit:
                server.force_exit = True
            server.should_exit = True

    async with anyio.create_task_group() as tg:
        if ready is not None:
            tg.start_soon(announce)
        if stop_on_signals and threading.current_thread() is threading.main_thread():
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                tg.start_soon(stop_on, signals)
                await server.serve(sockets=[sock])
        else:
            await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()


GRACEFUL_SECONDS = 3


def listening_socket(host: str, port: int) -> "socket.socket":
    """The server's socket, bound before anything is served, so that an address in use or not of
    this machine is one sentence (ServeError), not a traceback from inside the web server."""
    import socket

    from ..errors import ServeError

    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                          flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as e:
        raise ServeError(f"cannot listen on {host}:{port}: {getattr(e, 'strerror', None) or e}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(addr)
        sock.listen(128)
        sock.set_inheritable(False)
    except OSError as e:
        sock.close()
        hint = "; another program (or another codebelt) is listening there: pick another port" \
            if e.errno == errno.EADDRINUSE else ""
        raise ServeError(f"cannot listen on {host}:{port}: {e.strerror or e}{hint}") from None
    return sock


def _quiet_shutdown(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Cancel %s running task")


def _server_class() -> type:
    import uvicorn

    class QuietServer(uvicorn.Server):
        """uvicorn's server without its own signal handling, which re-raises the signal once
        it has shut down (a traceback and exit 1 under `codebelt serve`): serve_http decides
        what a signal means."""

        @contextlib.contextmanager
        def capture_signals(self):  # type: ignore[override]
            yield

    return QuietServer


def _Server(config: Any) -> Any:
    return _server_class()(config)
