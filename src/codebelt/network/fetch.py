"""WebFetch's fetching: one GET, through the same Gate as the sandbox's proxy.

Every hop (the URL, then each redirect) is decided by the Gate — the domain lists, the question
about a new name, the limits, the audit record — and the connection goes to the addresses the
Gate checked, never to a second lookup. `http://` is upgraded to `https://` (as Claude Code
does): the request never travels in the clear, and a redirect back to http is upgraded too. A
redirect is followed only to a name the policy allows (at most `max_redirects`); one that is not
comes back as `Fetched.redirect_refused`, for the caller to show. The body is read to at most
`max_bytes` (decompressed size included), all within `max_seconds`.

This runs in codebelt's own process, outside any sandbox: which is why addresses and names that
lead to loopback or private addresses are refused unless listed (gate.py) — a page must not make
codebelt read the machine's own services.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
import zlib
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit, urlunsplit

from .gate import Asker, Gate, Ticket

MAX_URL = 2_000
REDIRECTS = (301, 302, 303, 307, 308)
USER_AGENT = "Mozilla/5.0 (compatible; codebelt-WebFetch/1.0)"
ACCEPT = "text/markdown, text/html;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.5"


class FetchError(Exception):
    """The URL was not fetched; the message says why (and which setting, when one decided)."""


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int = 10 << 20
    max_seconds: float = 60.0
    max_redirects: int = 10


@dataclass
class Fetched:
    url: str  # as asked (after the https upgrade)
    final_url: str
    status: int = 0
    reason: str = ""
    content_type: str = ""
    charset: str | None = None
    body: bytes = b""
    truncated: bool = False  # the body passed max_bytes and was cut
    redirects: list[str] = field(default_factory=list)
    redirect_refused: tuple[str, int, str] | None = None  # (location, status, why)
    duration_ms: float = 0.0


def normalize_url(url: str) -> str:
    """The URL to fetch: absolute http(s), no credentials, http upgraded to https."""
    text = url.strip()
    if len(text) > MAX_URL:
        raise FetchError(f"the URL is {len(text)} characters long; at most {MAX_URL} are fetched")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.netloc:
        raise FetchError(f"{text[:200]!r} is not an absolute http(s) URL")
    if parts.username is not None or parts.password is not None:
        raise FetchError("a URL with a user name or password is not fetched (credentials would leave with it)")
    try:
        host, port = parts.hostname, parts.port
    except ValueError as e:
        raise FetchError(f"{text[:200]!r}: {e}") from None
    if not host:
        raise FetchError(f"no host in {text[:200]!r}")
    netloc = parts.netloc.rsplit("@", 1)[-1]
    if scheme == "http":
        scheme = "https"
        if port == 80:
            netloc = netloc[: -len(":80")]
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def fetch(url: str, gate: Gate, *, asker: Asker | None = None, limits: FetchLimits | None = None,
          ssl_context: ssl.SSLContext | None = None, label: str | None = None) -> Fetched:
    """GET `url` (normalised) through `gate`, following allowed redirects. Raises FetchError."""
    limits = limits or FetchLimits()
    context = ssl_context or ssl.create_default_context()
    start = time.monotonic()
    deadline = start + limits.max_seconds
    current = normalize_url(url)
    result = Fetched(url=current, final_url=current)
    for hop in range(limits.max_redirects + 1):
        parts = urlsplit(current)
        host, port = parts.hostname or "", parts.port or 443
        ticket = gate.open(host, port, origin="WebFetch", label=label or url, protocol="fetch", asker=asker)
        if not ticket.allowed:
            if hop:
                result.redirect_refused = (current, result.status, ticket.verdict.reason)
                break
            raise FetchError(f"{ticket.verdict.reason}")
        try:
            location = _get(ticket, host, port, parts, context, deadline, limits, result)
        finally:
            ticket.close(None)
        result.final_url = current
        if location is None:
            break
        try:
            current = normalize_url(urljoin(current, location))
        except FetchError as e:
            result.redirect_refused = (location[:MAX_URL], result.status, str(e))
            break
        result.redirects.append(current)
    else:
        raise FetchError(f"more than {limits.max_redirects} redirects")
    result.duration_ms = (time.monotonic() - start) * 1000
    return result


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise FetchError("the fetch took longer than its time limit")
    return left


class _Cutoff:
    """Shuts a connection down at the fetch's deadline, whatever it is waiting in. A socket
    timeout bounds one read only: a server sending a byte of its handshake or headers now and
    then would keep TLS and http.client reading far past the limit."""

    def __init__(self, sock: socket.socket, deadline: float):
        self.sock = sock  # then the TLS socket wrapping it (same descriptor)
        self.fired = False
        self._done = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:  # never after cancel(): the descriptor may be closed and reused by then
            if self._done:
                return
            self.fired = True
            try:
                # the plain socket's shutdown, also for a TLS socket (whose own would first
                # tear down its TLS state under the reader's feet)
                socket.socket.shutdown(self.sock, socket.SHUT_RDWR)
            except OSError:
                pass

    def check(self) -> None:
        if self.fired:
            raise FetchError("the fetch took longer than its time limit")

    def cancel(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()


def _get(ticket: Ticket, host: str, port: int, parts, context: ssl.SSLContext, deadline: float,
         limits: FetchLimits, result: Fetched) -> str | None:
    """One request on a connection to the ticket's addresses; the redirect location, if any."""
    sock = _connect(ticket, port, deadline)
    cutoff = _Cutoff(sock, deadline)
    try:
        return _exchange(ticket, sock, host, port, parts, context, deadline, limits, result, cutoff)
    except FetchError:
        cutoff.check()  # a read the cutoff ended: say so, not what the read made of it
        raise
    except (OSError, ValueError) as e:  # wrapping a socket the cutoff already shut down
        cutoff.check()
        raise FetchError(f"fetching from {host}:{port} failed: {e}") from None
    finally:
        cutoff.cancel()
        sock.close()


def _exchange(ticket: Ticket, sock: socket.socket, host: str, port: int, parts, context: ssl.SSLContext,
              deadline: float, limits: FetchLimits, result: Fetched, cutoff: _Cutoff) -> str | None:
    tls = context.wrap_socket(sock, server_hostname=ticket.verdict.host, do_handshake_on_connect=False)
    cutoff.sock = tls  # before the handshake, which a slow server can stretch as well
    try:
        tls.do_handshake()
    except (ssl.SSLError, OSError) as e:
        tls.close()
        ticket.record.error = f"TLS: {e}"
        raise FetchError(f"TLS with {host}:{port} failed: {e}") from None
    conn = http.client.HTTPConnection(host, port, timeout=_remaining(deadline))
    conn.sock = tls  # the checked connection: http.client never looks the name up itself
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    try:
        conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        name = f"[{ticket.verdict.host}]" if ":" in ticket.verdict.host else ticket.verdict.host
        conn.putheader("Host", name if port == 443 else f"{name}:{port}")
        conn.putheader("User-Agent", USER_AGENT)
        conn.putheader("Accept", ACCEPT)
        conn.putheader("Accept-Encoding", "gzip, deflate")
        conn.putheader("Connection", "close")
        conn.endheaders()
        response = conn.getresponse()
        result.status, result.reason = response.status, response.reason
        if response.status in REDIRECTS and response.getheader("Location"):
            ticket.add(down=256)
            return response.getheader("Location")
        result.content_type = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        result.charset = _charset(response.getheader("Content-Type") or "")
        result.body, result.truncated = _read_body(response, ticket, deadline, limits,
                                                   (response.getheader("Content-Encoding") or "").lower().strip())
        cutoff.check()  # a body the cutoff ended looks complete to the reader
        return None
    except (OSError, http.client.HTTPException) as e:
        ticket.record.error = f"{type(e).__name__}: {e}"
        raise FetchError(f"fetching from {host}:{port} failed: {type(e).__name__}: {e}") from None
    finally:
        conn.close()


def _connect(ticket: Ticket, port: int, deadline: float) -> socket.socket:
    errors = []
    for address in ticket.addresses:
        family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(min(_remaining(deadline), ticket.gate.policy.limits.connect_timeout_seconds))
        try:
            sock.connect((str(address), port))
        except OSError as e:
            sock.close()
            errors.append(f"{address}: {e.strerror or e}")
            continue
        ticket.connected(str(address))
        sock.settimeout(_remaining(deadline) + 1)  # a backstop: the cutoff (_Cutoff) ends it at the deadline
        return sock
    ticket.record.error = "; ".join(errors)
    raise FetchError(f"could not connect to {ticket.verdict.host}:{port} ({'; '.join(errors) or 'no address'})")


def _read_body(response: http.client.HTTPResponse, ticket: Ticket, deadline: float, limits: FetchLimits,
               encoding: str) -> tuple[bytes, bool]:
    """At most max_bytes of the (decoded) body; True when there was more."""
    decoder = None
    if encoding == "gzip":
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        decoder = zlib.decompressobj()
    chunks: list[bytes] = []
    size = 0
    while size <= limits.max_bytes:
        _remaining(deadline)
        raw = response.read1(65_536)  # what has arrived: read() would wait for the whole chunk
        if not raw:
            break
        if not ticket.add(down=len(raw)):
            raise FetchError("the session passed its network byte limit (sandbox.network.maxMB)")
        data = decoder.decompress(raw, limits.max_bytes + 1 - size) if decoder else raw
        chunks.append(data)
        size += len(data)
        if decoder is not None and decoder.unconsumed_tail:
            size = limits.max_bytes + 1  # more decompressed data than the limit
    body = b"".join(chunks)
    return body[: limits.max_bytes], size > limits.max_bytes


def _charset(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset" and value:
            return value.strip().strip('"').lower()
    return None
