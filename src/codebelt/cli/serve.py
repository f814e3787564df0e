"""`codebelt serve [--http HOST:PORT] [--token T]`: the MCP server, stdio by default."""

from __future__ import annotations

import argparse
import os
import sys

from . import UsageError
from .common import make_session

TOKEN_ENV = "CODEBELT_TOKEN"
# Every MCP session an HTTP client opens holds memory until it ends; clients that never say
# goodbye must not grow the server without bound.
DEFAULT_MAX_SESSIONS = 64
DEFAULT_IDLE_S = 900.0
# How long leaving waits for the session to close (commands killed after their grace period,
# language servers stopped, the sandbox's cgroup cleared) before the process goes regardless.
CLOSE_BOUND_S = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http", metavar="HOST:PORT", default=None,
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
        "(HOST defaults to 127.0.0.1; a non-loopback HOST requires a token)",
    )
    parser.add_argument(
        "--token", default=None,
        help=f"bearer token HTTP clients must send (default: ${TOKEN_ENV})",
    )
    parser.add_argument(
        "--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS, metavar="N",
        help=f"HTTP: most MCP sessions open at once; another client gets 503 until one ends or expires "
        f"(default {DEFAULT_MAX_SESSIONS})",
    )
    parser.add_argument(
        "--session-idle-timeout", type=float, default=DEFAULT_IDLE_S, metavar="SECONDS",
        help=f"HTTP: an MCP session with no request for this long is ended (default {DEFAULT_IDLE_S:g})",
    )
    parser.add_argument(
        "--allow-host", action="append", default=None, metavar="NAME",
        help="another Host name clients use to reach the HTTP server (repeatable)",
    )


def parse_http(value: str) -> tuple[str, int]:
    """"8765", ":8765", "127.0.0.1:8765", "[::1]:8765" → (host, port)."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise UsageError(f"--http expects HOST:PORT, got {value!r}") from None
    if not 0 <= number <= 65535:
        raise UsageError(f"--http port {number} is out of range (0-65535)")
    return host, number


def _end_on_signals(session) -> None:
    """Over stdio, the SDK reads stdin in a thread that a signal cannot interrupt, so unwinding
    would wait for input that never comes. SIGTERM (how services are stopped) and SIGINT close
    the session (commands killed, temp directory removed, audit flushed) and leave at once,
    with status 0: stopping was asked for, nothing failed."""
    import signal

    def handler(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not cut the cleanup short
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _leave(session)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _leave(session) -> None:
    """Close the session (its calls cancelled, what they started stopped), bounded, and end the
    process with status 0. Not a normal return: interpreter exit joins every worker thread, and
    one still inside a call that ignores its cancellation would keep the server alive with
    nobody to serve."""
    import threading

    closer = threading.Thread(target=session.close, name="codebelt-serve-close", daemon=True)
    try:
        closer.start()
        closer.join(CLOSE_BOUND_S)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(0)


def run(args: argparse.Namespace) -> int:
    from ..mcp.transport import is_loopback

    token = args.token or os.environ.get(TOKEN_ENV) or None
    address = parse_http(args.http) if args.http else None
    if args.max_sessions < 1:
        raise UsageError(f"--max-sessions must be at least 1, got {args.max_sessions}")
    if not (0 < args.session_idle_timeout < float("inf")):
        raise UsageError(f"--session-idle-timeout must be a positive number of seconds, got {args.session_idle_timeout}")
    if address and not is_loopback(address[0]) and not token:
        raise UsageError(
            f"serving on {address[0]} (not a loopback address) requires a bearer token: "
            f"pass --token or set {TOKEN_ENV}"
        )
    # The MCP client answers `ask` decisions (elicitation), never the terminal: stdin is the protocol.
    # What of the settings was ignored goes to the server's log (mcp.server.announce).
    session = make_session(args, interactive=False, announce=False, long_lived=True)
    try:
        from ..mcp import server as mcp_server

        if address is None:
            _end_on_signals(session)
            mcp_server.run_stdio(session)
            # stdin reached its end: the client is gone (closed the pipe, or died), and so is
            # anyone to serve
            import signal

            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            _leave(session)
        else:
            host, port = address

            def ready(actual: int) -> None:
                shown = f"[{host}]" if ":" in host else host
                sys.stderr.write(f"codebelt MCP server listening on http://{shown}:{actual}/mcp\n")
                sys.stderr.flush()

            # Every MCP client session gets a Session of its own (its tasks, reads, cwd and
            # approvals are nobody else's); the first serves what has no MCP session.
            mcp_server.run_http(session, host, port, token, allowed_hosts=args.allow_host, ready=ready,
                                max_sessions=args.max_sessions, session_idle_timeout=args.session_idle_timeout,
                                session_factory=lambda: make_session(args, interactive=False, announce=False, long_lived=True))
    except KeyboardInterrupt:
        pass
    finally:
        import signal

        # Stopping was asked for: the sessions close whatever else arrives meanwhile.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        session.close()
    return 0
