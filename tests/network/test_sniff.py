"""The first bytes a client sends through a tunnel must name the tunnel's host: TLS server
names (from real ClientHellos and built ones), HTTP Host headers, what is refused as hiding one."""

from __future__ import annotations

import ssl
import struct

import pytest

from codebelt.network.sniff import check, tls_client_hello


def real_client_hello(server_name: str | None) -> bytes:
    """The ClientHello Python's own TLS client sends (what curl's OpenSSL sends is alike)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=server_name)
    if server_name is None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        obj = ctx.wrap_bio(incoming, outgoing)
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return outgoing.read()


def ext(kind: int, body: bytes) -> bytes:
    return struct.pack(">HH", kind, len(body)) + body


def sni(*names: bytes) -> bytes:
    entries = b"".join(b"\x00" + struct.pack(">H", len(n)) + n for n in names)
    return ext(0, struct.pack(">H", len(entries)) + entries)


def built_client_hello(*extensions: bytes, records: int = 1) -> bytes:
    exts = b"".join(extensions)
    body = b"\x03\x03" + b"\x11" * 32 + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00" + struct.pack(">H", len(exts)) + exts
    handshake = b"\x01" + len(body).to_bytes(3, "big") + body
    size = -(-len(handshake) // records)
    chunks = [handshake[i:i + size] for i in range(0, len(handshake), size)]
    return b"".join(b"\x16\x03\x01" + struct.pack(">H", len(c)) + c for c in chunks)


def test_real_client_hellos_name_their_server():
    assert tls_client_hello(real_client_hello("allowed.test")) == (True, "allowed.test", False)
    assert tls_client_hello(real_client_hello(None))[:2] == (True, None)


# (first bytes, the tunnel's host, refused because …, or None when allowed)
CASES = [
    (built_client_hello(sni(b"allowed.test")), "allowed.test", None),
    (built_client_hello(sni(b"ALLOWED.TEST.")), "allowed.test", None),
    (built_client_hello(sni(b"allowed.test"), records=3), "allowed.test", None),  # split over records
    (built_client_hello(sni(b"other.test")), "allowed.test", "names other.test"),
    (built_client_hello(sni(b"other.test"), records=4), "allowed.test", "names other.test"),
    (built_client_hello(), "allowed.test", None),  # no server name: the server's default
    (built_client_hello(sni(b"allowed.test"), ext(0xFE0D, b"\x00" * 8)), "allowed.test", "Encrypted Client Hello"),
    (built_client_hello(sni(b"allowed.test"), sni(b"other.test")), "allowed.test", "malformed"),
    (built_client_hello(sni(b"allowed.test", b"other.test")), "allowed.test", "malformed"),
    (built_client_hello(sni("bücher.test".encode())), "allowed.test", "malformed"),
    (b"\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00", "allowed.test", "malformed"),  # not a ClientHello
    (b"GET / HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n", "allowed.test", None),
    (b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n", "allowed.test", "names other.test"),
    (b"GET / HTTP/1.1\r\nHost: allowed.test\r\nHost: other.test\r\n\r\n", "allowed.test", "malformed"),
    (b"GET / HTTP/1.0\r\n\r\n", "allowed.test", None),
    # a server reads these heads as naming other.test: a bare LF or CR ends a line for many, and
    # an absolute request target wins over the Host header (RFC 9112 3.2.2)
    (b"GET / HTTP/1.1\nHost: other.test\r\n\r\n", "allowed.test", "malformed"),
    (b"GET / HTTP/1.1\r\nX-A: 1\nHost: other.test\r\n\r\n", "allowed.test", "malformed"),
    (b"GET / HTTP/1.1\r\nX-A: 1\rHost: other.test\r\n\r\n", "allowed.test", "malformed"),
    (b"GET / HTTP/1.1\r\nHost: allowed.test\x00other.test\r\n\r\n", "allowed.test", "malformed"),
    (b"GET http://other.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test", "names other.test"),
    (b"GET HTTP://Other.Test:80/x HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test", "names other.test"),
    (b"GET //other.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test", None),  # a path
    (b"GET http://allowed.test:8080/x HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test", None),
    (b"OPTIONS * HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test", None),
    (b"GET other.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test", "request target"),
    # what a server still reads as a request: empty lines first, a method in any case or unknown
    (b"\r\n\r\nGET / HTTP/1.1\r\nHost: other.test\r\n\r\n", "allowed.test", "names other.test"),
    (b"\nGET / HTTP/1.1\r\nHost: other.test\r\n\r\n", "allowed.test", "names other.test"),
    (b"get / HTTP/1.1\r\nHost: other.test\r\n\r\n", "allowed.test", "names other.test"),
    (b"Q+ / HTTP/1.1\r\nHost: other.test\r\n\r\n", "allowed.test", "names other.test"),
    (b"GET  / HTTP/1.1\r\nHost: other.test\r\n\r\n", "allowed.test", "malformed"),
    (b"GET\t/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test", "malformed"),
    (b"GET /x\r\n\r\n", "allowed.test", "malformed"),
    (b"get / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test", None),
    (b"*2\r\n$4\r\nAUTH\r\n", "allowed.test", None),  # RESP (Redis): not HTTP
    (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "allowed.test", "HTTP/2 with prior knowledge"),
    (b"SSH-2.0-OpenSSH_9.2\r\n", "allowed.test", None),
]


@pytest.mark.parametrize("data,host,refused", CASES)
def test_the_first_flight_names_the_tunnel_host(data, host, refused):
    done, why = check(data, host)
    assert done
    if refused is None:
        assert why is None
    else:
        assert why is not None and refused in why, why


def test_an_incomplete_start_waits_for_more():
    hello = built_client_hello(sni(b"other.test"), records=2)
    for cut in (1, 5, 20, len(hello) - 1):
        assert check(hello[:cut], "allowed.test") == (False, None)
    assert check(b"GET / HTTP/1.1\r\nHost: x", "allowed.test") == (False, None)
    # a request line sent in pieces is still a request: nothing passes before its head is read
    for start in (b"G", b"GET", b"GET /" + b"a" * 40, b"\r\n", b"\r\nGE", b"get /x HTTP/1.1\r\n"):
        assert check(start, "allowed.test") == (False, None), start
