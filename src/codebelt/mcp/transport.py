"""Running the bridge: stdio, or streamable HTTP with bearer-token auth and Host/Origin checks."""

from __future__ import annotations

import hmac
import ipaddress
import logging
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
) -> None:
    """Serve until cancelled. `ready(port)` is called once the socket listens (port 0 → real port)."""
    import uvicorn

    app = http_app(bridge, host, port, token, allowed_hosts=allowed_hosts, max_sessions=max_sessions,
                   session_idle_timeout=session_idle_timeout)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", access_log=False
    )
    server = uvicorn.Server(config)
    if ready is not None:
        import anyio

        async def announce() -> None:
            while not server.started:
                await anyio.sleep(0.02)
            sockets = [s for srv in server.servers for s in srv.sockets]
            ready(sockets[0].getsockname()[1] if sockets else port)

        async with anyio.create_task_group() as tg:
            tg.start_soon(announce)
            await server.serve()
            tg.cancel_scope.cancel()
    else:
        await server.serve()
