"""What name the first bytes a client sends through a tunnel are really for.

A CONNECT (or SOCKS5) tunnel is decided by the host it names; what travels inside is the
client's own. Servers that host many names — every CDN — route a connection by the name inside
it: the TLS ClientHello's server name (SNI), or a plain HTTP request's Host header. A client that
tunnels to an allowed name and then asks for another inside would reach any site on the same
CDN. So the first flight of the client is read (never changed, never decrypted: the ClientHello
is plaintext) and must name the host the tunnel was decided for:

- a TLS ClientHello: its server name must be the tunnel's host (none: the server's default);
  one carrying Encrypted Client Hello, whose real server name is hidden, is refused;
- a plain HTTP request: its Host header must be the tunnel's host;
- HTTP/2 with prior knowledge (its names are compressed): refused;
- anything else (ssh, a database protocol): no name to check.

A plain HTTP tunnel is read request by request (`http_framing`): every request's Host header is
checked, not only the first (keep-alive would otherwise carry a second request for another site).

What stays open: inside TLS, after the handshake, a Host header naming another site ("domain
fronting") is beyond sight without interception; CDNs have mostly stopped honouring it.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ..domains import InvalidHost, canonical_host

MAX_FLIGHT = 65_536
TLS_HANDSHAKE, CLIENT_HELLO = 22, 1
EXT_SERVER_NAME, EXT_ECH = 0, 0xFE0D
# An HTTP method is any token (RFC 9110): servers differ on letter case and on which methods they
# know, so anything that starts like a request is read as one — to the end of its head.
_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]"
_HTTP_START = re.compile(_TOKEN + rb"{1,32}[ \t]")
_MAYBE_HTTP = re.compile(_TOKEN + rb"{0,32}")
_REQUEST_LINE = re.compile(_TOKEN + rb"{1,32} [\x21-\x7e\x80-\xff]+ HTTP/1\.[01]")
H2_PREFACE = b"PRI * HTTP/2.0\r\n"


class Malformed(ValueError):
    pass


def _u16(data: bytes, at: int) -> int:
    if at + 2 > len(data):
        raise Malformed("truncated")
    return int.from_bytes(data[at:at + 2], "big")


def _client_hello_name(body: bytes) -> tuple[str | None, bool]:
    """(server name, whether Encrypted Client Hello is offered) of a ClientHello's body."""
    at = 2 + 32  # legacy version, random
    if at >= len(body):
        raise Malformed("truncated ClientHello")
    at += 1 + body[at]  # session id
    at += 2 + _u16(body, at)  # cipher suites
    if at >= len(body):
        raise Malformed("truncated ClientHello")
    at += 1 + body[at]  # compression methods
    if at == len(body):
        return None, False  # no extensions
    end = at + 2 + _u16(body, at)
    at += 2
    if end > len(body):
        raise Malformed("extensions overrun the ClientHello")
    name, ech = None, False
    while at + 4 <= end:
        kind, length = _u16(body, at), _u16(body, at + 2)
        value = body[at + 4:at + 4 + length]
        if len(value) != length:
            raise Malformed("truncated extension")
        if kind == EXT_ECH:
            ech = True
        elif kind == EXT_SERVER_NAME:
            if name is not None:
                raise Malformed("two server_name extensions")
            listed = value[2:2 + _u16(value, 0)]
            i = 0
            while i + 3 <= len(listed):
                name_type, name_len = listed[i], _u16(listed, i + 1)
                raw = listed[i + 3:i + 3 + name_len]
                if name_type == 0:
                    if name is not None:
                        raise Malformed("two host names in server_name")
                    try:
                        name = raw.decode("ascii")
                    except UnicodeDecodeError:
                        raise Malformed("a server name that is not ASCII") from None
                i += 3 + name_len
        at += 4 + length
    return name, ech


def tls_client_hello(data: bytes) -> tuple[bool, str | None, bool]:
    """(complete, server name, ECH offered) from the start of a TLS stream. Raises Malformed."""
    handshake = b""
    at = 0
    while at + 5 <= len(data):
        if data[at] != TLS_HANDSHAKE:
            raise Malformed("a record other than the handshake before the ClientHello ended")
        length = _u16(data, at + 3)
        fragment = data[at + 5:at + 5 + length]
        if len(fragment) < length:
            return False, None, False
        handshake += fragment
        at += 5 + length
        if len(handshake) >= 4:
            if handshake[0] != CLIENT_HELLO:
                raise Malformed("the first handshake message is not a ClientHello")
            size = int.from_bytes(handshake[1:4], "big")
            if len(handshake) >= 4 + size:
                name, ech = _client_hello_name(handshake[4:4 + size])
                return True, name, ech
    return False, None, False


_BARE_CR_OR_LF = re.compile(rb"\r(?!\n)|(?<!\r)\n")


def http_host(data: bytes) -> tuple[bool, list[tuple[str, str]]]:
    """(complete, the names a plain HTTP request's head routes by, each with where it is: its
    Host header without the port, and the host of an absolute request target, which a server
    prefers to the header).
    A head whose lines a server could split differently (a bare CR or LF, a NUL) is Malformed."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False, []
    head = data[:end]
    if b"\x00" in head or _BARE_CR_OR_LF.search(head):
        raise Malformed("a line not ended by CRLF, or a NUL, in the request head")
    request_line, *lines = head.split(b"\r\n")
    if not _REQUEST_LINE.fullmatch(request_line):  # two spaces, a tab, HTTP/0.9: servers read these apart
        raise Malformed("a request line that is not `METHOD target HTTP/1.x`")
    parts = request_line.split(b" ")
    method, target = parts[0], parts[1].decode("latin-1")
    names: list[tuple[str, str]] = []
    if "://" in target:
        try:
            name = urlsplit(target).hostname
        except ValueError:
            name = None
        if not name:
            raise Malformed(f"a request target {target[:80]!r} without a host")
        names.append(("the HTTP request's URL", name))
    elif method == b"CONNECT":
        names.append(("the HTTP CONNECT target", target.rsplit(":", 1)[0].strip("[]")))
    elif not (target.startswith("/") or target == "*"):
        raise Malformed(f"a request target {target[:80]!r} that is neither a path nor a URL")
    host = None
    for line in lines:
        key, _, value = line.partition(b":")
        if key.strip().lower() == b"host":
            if host is not None:
                raise Malformed("two Host headers")
            host = value.strip().decode("latin-1")
    if host and host.startswith("["):
        host = host[1:host.find("]")] if "]" in host else host
    elif host and host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    if host:
        names.append(("the HTTP Host header", host))
    return True, names


def http_framing(head: bytes) -> tuple[int, bool]:
    """(body length, whether the request asks to switch protocols) of a plain HTTP request's
    complete head, so that the next request on the connection can be found and checked too.
    Raises Malformed for a body whose end only a chunked parser would find, or an ambiguous one."""
    lengths, upgrade = set(), False
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        key = key.strip().lower()
        if key == b"transfer-encoding":
            raise Malformed("a request body with Transfer-Encoding (send it over https)")
        if key == b"content-length":
            lengths.add(value.strip())
        if key == b"upgrade" or (key == b"connection" and b"upgrade" in value.lower()):
            upgrade = True
    if len(lengths) > 1 or any(not v.isdigit() for v in lengths):
        raise Malformed("a request with an unclear Content-Length")
    method = head.split(b" ", 1)[0]
    return (int(next(iter(lengths))) if lengths else 0), upgrade or method == b"CONNECT"


def kind_of(data: bytes) -> str:
    """tls, h2, http, other — or "more" while the bytes so far could still start an HTTP request
    (a client choosing how to split its writes must not pass a request as "other")."""
    if data[:1] == bytes([TLS_HANDSHAKE]):
        return "tls"
    data = data.lstrip(b"\r\n")  # servers skip empty lines before a request
    if data.startswith(H2_PREFACE[: len(data)]) and len(data) >= 3:
        return "h2"
    if _HTTP_START.match(data):
        return "http"
    if _MAYBE_HTTP.fullmatch(data):
        return "more"
    return "other"


def check(data: bytes, host: str) -> tuple[bool, str | None]:
    """Whether the client's first bytes so far decide (done) and, when they refuse the tunnel,
    why. `host` is the tunnel's canonical host."""
    kind = kind_of(data)
    try:
        if kind == "tls":
            done, name, ech = tls_client_hello(data)
            if not done:
                return (len(data) >= MAX_FLIGHT, "a TLS ClientHello longer than 64 kB" if len(data) >= MAX_FLIGHT else None)
            if ech:
                return True, "the TLS ClientHello hides its server name (Encrypted Client Hello)"
            return True, _differs(name, host, "the TLS server name (SNI)")
        if kind == "h2":
            if len(data) < len(H2_PREFACE):
                return False, None
            return True, "HTTP/2 with prior knowledge: its names cannot be checked"
        if kind == "more":
            return (len(data) >= MAX_FLIGHT, "a request start longer than 64 kB" if len(data) >= MAX_FLIGHT else None)
        if kind == "http":
            done, names = http_host(data.lstrip(b"\r\n"))
            if not done:
                return (len(data) >= MAX_FLIGHT, "an HTTP request head longer than 64 kB" if len(data) >= MAX_FLIGHT else None)
            for what, name in names:
                why = _differs(name, host, what)
                if why is not None:
                    return True, why
            return True, None
    except Malformed as e:
        return True, f"a malformed {kind.upper()} start ({e})"
    return True, None


def _differs(name: str | None, host: str, what: str) -> str | None:
    if not name:
        return None
    try:
        canonical = canonical_host(name)
    except InvalidHost:
        return f"{what} {name[:100]!r} is not a host name"
    if canonical != host:
        return f"{what} names {canonical}, not {host}, the host the tunnel was opened for"
    return None
