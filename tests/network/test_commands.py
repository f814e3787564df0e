"""Sandboxed commands (bwrap) reach allowed names through the proxy and nothing else: by name,
by every spelling of an address, by a program that ignores the proxy, by DNS or UDP. Each case
is checked where it matters — on the local server, which records every request it served, and
in the audit log."""

from __future__ import annotations

import os
import shlex
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import PYTHON, connections, start_server

ALLOW = {"allowedDomains": ["allowed.test", "*.allowed.test"], "deniedDomains": ["sub.allowed.test"]}


@pytest.fixture
def http_server():
    server, stop = start_server({"/hello": b"hello over http\n"})
    yield server
    stop()


@pytest.fixture
def https_server(pki):
    server, stop = start_server({"/hello": b"hello over https\n"}, pki=pki)
    yield server
    stop()


def bash(s, command: str, **kw):
    return s.call("Bash", {"command": command, **kw})


CURL = "curl -sS --max-time 10"


@pytest.mark.parametrize("how", ["http", "https", "socks5h"])
def test_an_allowed_name_is_reached_and_recorded(how, session_with, http_server, https_server, pki, tmp_path):
    s = session_with(ALLOW)
    if how == "http":
        r = bash(s, f"{CURL} {http_server.url('allowed.test', '/hello')}")
        server, word = http_server, "hello over http"
    elif how == "https":
        r = bash(s, f"{CURL} --cacert {pki.ca} {https_server.url('allowed.test', '/hello')}")
        server, word = https_server, "hello over https"
    else:
        r = bash(s, f'{CURL} -x "$ALL_PROXY" {http_server.url("allowed.test", "/hello")}')
        server, word = http_server, "hello over http"
    assert word in r.text and not r.is_error, r.text
    assert server.requests and server.requests[-1][1] == "/hello"
    rows = connections(tmp_path, s)
    assert rows and rows[-1]["host"] == "allowed.test" and rows[-1]["decision"] == "allowed"
    assert rows[-1]["protocol"] == {"http": "http", "https": "connect", "socks5h": "socks5"}[how]
    assert rows[-1]["bytes_up"] > 0 and rows[-1]["bytes_down"] > len(word) and rows[-1]["address"] == "127.0.0.1"
    assert rows[-1]["label"].startswith("curl")


@pytest.mark.parametrize("host,setting", [
    ("denied.test", "sandbox.network.allowedDomains"),  # on no list
    ("sub.allowed.test", "sandbox.network.deniedDomains"),  # a denial wins over *.allowed.test
    ("other.test", "sandbox.network.allowedDomains"),
])
@pytest.mark.parametrize("how", ["http", "https", "socks5h"])
def test_a_name_not_allowed_is_refused_and_explained(host, setting, how, session_with, http_server, https_server,
                                                      pki, tmp_path):
    s = session_with(ALLOW)
    if how == "https":
        server, command = https_server, f"{CURL} --cacert {pki.ca} {https_server.url(host, '/hello')}"
    elif how == "http":
        server, command = http_server, f"{CURL} {http_server.url(host, '/hello')}"
    else:
        server, command = http_server, f'{CURL} -x "$ALL_PROXY" {http_server.url(host, "/hello")}'
    r = bash(s, command)
    assert "hello" not in r.text.replace(f"{host}", "")
    assert server.requests == []
    note = r.data["sandboxNote"]
    assert host in note and setting in note, note
    if how == "http":  # the program itself printed the proxy's answer
        assert f"codebelt's sandbox refused a connection to {host}" in r.text
    rows = connections(tmp_path, s)
    assert rows[-1]["host"] == host and rows[-1]["decision"] == "denied" and setting in rows[-1]["reason"]


@pytest.mark.parametrize("spelling", ["ALLOWED.TEST", "allowed.test.", "Allowed.Test."])
def test_other_spellings_of_an_allowed_name_are_that_name(spelling, session_with, https_server, pki, tmp_path):
    s = session_with(ALLOW)
    r = bash(s, f"{CURL} --cacert {pki.ca} https://{spelling}:{https_server.port}/hello")
    assert "hello over https" in r.text, r.text
    assert connections(tmp_path, s)[-1]["host"] == "allowed.test"


# Every way to write an address of this machine; none is a name on the list.
ADDRESSES = ["127.0.0.1", "2130706433", "0x7f000001", "0x7f.1", "0177.0.0.1", "127.1", "127.0.0.1.", "0.0.0.0",
             "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::]", "localhost", "LOCALHOST.", "localhost.test"]
PROBE = Path(__file__).with_name("probe.py")


def probe(s, *targets: str) -> dict[tuple[str, str], str]:
    """{(way, target): answer} from probe.py run in the sandbox (CONNECT, plain HTTP, SOCKS5)."""
    r = bash(s, f"{PYTHON} {PROBE} " + " ".join(shlex.quote(t) for t in targets))
    out = {}
    for line in r.text.splitlines():
        way, target, answer = (line.split(" ", 2) + ["", ""])[:3]
        if way in ("connect", "http", "socks"):
            out[(way, target)] = answer
    assert len(out) == 3 * len(targets), r.text
    return out


@pytest.mark.parametrize("allowed", [ALLOW["allowedDomains"], ["*"]], ids=["list", "star"])
def test_addresses_are_not_a_way_around_names(allowed, session_with, http_server, tmp_path):
    """Through CONNECT, a plain-HTTP proxy request and SOCKS5 (an address, or a name the proxy
    looks up): refused (403 / reply 2), and the server on 127.0.0.1 never sees a request — with
    an explicit list and with `*`."""
    s = session_with({"allowedDomains": allowed})
    targets = [f"{a}:{http_server.port}" for a in ADDRESSES]
    answers = probe(s, *targets)
    for t in targets:
        assert answers[("connect", t)].startswith("HTTP/1.1 403"), (t, answers[("connect", t)])
        assert answers[("http", t)].startswith("HTTP/1.1 403"), (t, answers[("http", t)])
        assert answers[("socks", t)] == "2", (t, answers[("socks", t)])
    assert http_server.requests == []
    rows = connections(tmp_path, s)
    assert len(rows) == 3 * len(targets) and all(row["decision"] == "denied" for row in rows)


def test_a_listed_address_is_reached(session_with, http_server):
    """Addresses are not forbidden, only unlisted: the user may list one (any spelling of it)."""
    s = session_with({"allowedDomains": ["127.0.0.1"]})
    answers = probe(s, f"0x7f.1:{http_server.port}")
    assert answers[("connect", f"0x7f.1:{http_server.port}")].startswith("HTTP/1.1 200"), answers
    assert answers[("socks", f"0x7f.1:{http_server.port}")] == "0", answers


def test_a_wildcard_name_leading_to_loopback_is_refused(session_with, http_server, tmp_path):
    """`*.allowed.test` (or `*`) must not reach this machine because a lookup says 127.0.0.1: only
    a name listed exactly may lead to a loopback or private address."""
    s = session_with({"allowedDomains": ["*.test"]})
    r = bash(s, f"{CURL} {http_server.url('allowed.test', '/hello')}")
    assert "hello over http" not in r.text and http_server.requests == []
    assert "not a public address" in r.data["sandboxNote"], r.text
    s2 = session_with({"allowedDomains": ["allowed.test"]})
    r = bash(s2, f"{CURL} {http_server.url('allowed.test', '/hello')}")
    assert "hello over http" in r.text


def test_socks_bind_and_udp_associate_are_not_relayed(session_with, tmp_path):
    s = session_with(ALLOW)
    code = textwrap.dedent("""
        import os, socket, struct
        host, port = os.environ["ALL_PROXY"].rsplit("/", 1)[-1].rsplit(":", 1)
        for cmd in (2, 3):
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(b"\\x05\\x01\\x00"); s.recv(2)
            name = b"allowed.test"
            s.sendall(bytes([5, cmd, 0, 3, len(name)]) + name + struct.pack(">H", 53))
            print("reply", cmd, s.recv(10)[1])
    """)
    r = bash(s, f"{PYTHON} -c '{code}'")
    assert "reply 2 7" in r.text and "reply 3 7" in r.text, r.text
    assert any("not relayed" in row["reason"] for row in connections(tmp_path, s))


def test_a_program_that_ignores_the_proxy_has_no_network(session_with, http_server):
    s = session_with(ALLOW)
    direct = (f"{PYTHON} -c \"import socket; socket.create_connection(('127.0.0.1', {http_server.port}), timeout=5); "
              "print('connected')\"")
    r = bash(s, direct)
    assert "connected" not in r.text and r.data["exitCode"] != 0
    r = bash(s, f"{CURL} --noproxy '*' {http_server.url('allowed.test', '/hello')}")
    assert "hello" not in r.text and r.data["exitCode"] != 0
    assert "proxy" in r.data.get("sandboxNote", ""), r.text
    assert http_server.requests == []


def test_dns_and_udp_stay_blocked(session_with, tmp_path):
    from tests.sandbox.netprobe import Listeners, client, reached

    s = session_with(ALLOW)
    r = bash(s, f"{PYTHON} -c \"import socket; print(socket.getaddrinfo('allowed.test', 443))\"")
    assert "127.0.0.1" not in r.text and r.data["exitCode"] != 0, r.text
    r = bash(s, "getent hosts pypi.org; echo exit=$?")
    assert "exit=2" in r.text or "exit=1" in r.text, r.text
    sock_dir = tmp_path / "sockets"
    sock_dir.mkdir()
    listeners = Listeners(sock_dir)
    try:
        bash(s, client(sys.executable, "udp", listeners))
        bash(s, client(sys.executable, "tcp", listeners))
        time.sleep(0.3)
        assert not reached(listeners, "udp") and not reached(listeners, "tcp")
    finally:
        listeners.close()


def test_the_proxy_environment(session_with):
    s = session_with(ALLOW)
    # written to a file first: a read-only command would run in the jail, which has no network at all
    r = bash(s, 'env > "$TMPDIR/env" && grep -iE "proxy|GIT_CONFIG" "$TMPDIR/env"')
    env = dict(line.split("=", 1) for line in r.text.splitlines() if "=" in line)
    http = env["HTTP_PROXY"]
    assert http.startswith("http://127.0.0.1:") and "@" not in http
    for name in ("HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy", "npm_config_https_proxy",
                 "PIP_PROXY", "CARGO_HTTP_PROXY"):
        assert env[name] == http, name
    assert env["ALL_PROXY"] == env["all_proxy"] == http.replace("http://", "socks5h://")
    assert env["NO_PROXY"] == "localhost,127.0.0.1,::1"
    n = int(env["GIT_CONFIG_COUNT"]) - 1
    assert env[f"GIT_CONFIG_KEY_{n}"] == "http.proxy" and env[f"GIT_CONFIG_VALUE_{n}"] == http


def test_nothing_is_left_listening(session_with, http_server):
    """A listener exists while its command runs, and none after it ended; closing the session
    stops the proxy's thread and closes every socket it had."""
    import threading

    def sockets() -> int:
        count = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
            except OSError:
                pass
        return count

    before = sockets()
    s = session_with(ALLOW)
    from codebelt.tools._services import network

    r = bash(s, f"{CURL} {http_server.url('allowed.test', '/hello')}")
    assert "hello over http" in r.text
    service = s._services.peek(network)
    assert service is not None and service.listening() == 0
    r = bash(s, "sleep 30 && touch done", run_in_background=True)  # not read-only: runs with the proxy
    task = r.data["backgroundTaskId"]
    deadline = time.monotonic() + 10
    while service.listening() != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert service.listening() == 1
    s.call("KillShell", {"shell_id": task})
    deadline = time.monotonic() + 10
    while service.listening() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert service.listening() == 0
    s.close()
    assert not any(t.name.startswith("codebelt-proxy") and t.is_alive() for t in threading.enumerate())
    deadline = time.monotonic() + 5
    while sockets() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sockets() <= before


def test_network_false_starts_no_proxy(session_with, http_server):
    from codebelt.tools._services import network

    s = session_with(False)
    r = bash(s, f"{CURL} {http_server.url('allowed.test', '/hello')}")
    assert "hello" not in r.text and s._services.peek(network) is None
    assert "sandbox.network: true" in r.data["sandboxNote"]


def test_under_landlock_domain_filtering_is_not_available(ws, tmp_path, names, http_server):
    """No network namespace under Landlock: nothing could hold a command to the proxy, so the
    network stays off, and the status and the result say why."""
    from codebelt import Session
    from tests.sandbox.conftest import backend_unusable

    if backend_unusable("landlock"):
        pytest.skip(f"Landlock cannot work here: {backend_unusable('landlock')}")
    with Session(ws, sandbox="landlock", load_user_settings=False, audit=False,
                 settings={"permissions": {"allow": ["Bash(*)"]}, "sandbox": {"network": ALLOW}}) as s:
        assert "domain filtering" in s.sandbox().status.reason and "network off" in s.sandbox().status.reason
        r = bash(s, f"{CURL} --noproxy '*' http://127.0.0.1:{http_server.port}/hello")
        assert "hello" not in r.text and http_server.requests == []
        assert "needs bubblewrap's network namespace" in r.data["sandboxNote"], r.text


def test_codebelt_audit_lists_the_connections(session_with, http_server, tmp_path, capsys):
    import json

    from codebelt.cli import main

    s = session_with(ALLOW)
    bash(s, f"{CURL} {http_server.url('allowed.test', '/hello')}; {CURL} {http_server.url('denied.test', '/hello')}")
    connections(tmp_path, s)  # flushed
    assert main(["audit", "--network", "--db", str(tmp_path / "audit.db")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and "allowed" in out[0] and "allowed.test:" in out[0] and "denied.test:" in out[1]
    assert main(["audit", "--network", "--errors", "--json", "--db", str(tmp_path / "audit.db")]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["host"] for r in rows] == ["denied.test"] and rows[0]["session_id"] == s.id


@pytest.mark.parametrize("how", ["connect", "socks5h"])
def test_a_tunnel_carries_only_the_name_it_was_opened_for(how, session_with, https_server, pki, tmp_path):
    """curl --connect-to opens the tunnel to an allowed name and sends another name inside it
    (TLS server name): the way to reach any site sharing a CDN with an allowed one. Refused."""
    s = session_with(ALLOW)
    port = https_server.port
    proxy = '-x "$ALL_PROXY"' if how == "socks5h" else ""
    r = bash(s, f"{CURL} {proxy} --cacert {pki.ca} --connect-to other.test:{port}:allowed.test:{port} "
                f"https://other.test:{port}/hello")
    assert "hello over https" not in r.text and https_server.requests == []
    assert r.data is not None, (r.text, r.is_error)
    assert "the TLS server name (SNI) names other.test" in r.data["sandboxNote"], r.text
    row = connections(tmp_path, s)[-1]
    assert row["host"] == "allowed.test" and row["decision"] == "denied" and "other.test" in row["reason"]


def test_plain_http_carries_only_the_name_it_was_sent_to(session_with, http_server):
    s = session_with(ALLOW)
    # inside a CONNECT tunnel: refused
    r = bash(s, f'{CURL} -p -H "Host: other.test" {http_server.url("allowed.test", "/hello")}')
    assert "hello over http" not in r.text and http_server.requests == []
    assert "the HTTP Host header names other.test" in r.data["sandboxNote"], r.text
    # through the forwarding proxy: the request goes out with the URL's own Host
    r = bash(s, f'{CURL} -H "Host: other.test" {http_server.url("allowed.test", "/hello")}')
    assert "hello over http" in r.text
    assert http_server.requests == [(f"allowed.test:{http_server.port}", "/hello")]


SMUGGLE = textwrap.dedent("""
    import os, socket, sys
    host, port = os.environ["HTTP_PROXY"].rsplit("/", 1)[-1].rsplit(":", 1)
    target = sys.argv[1]
    requests = {
        "pipelined": (f"GET http://{target}/hello HTTP/1.1\\r\\nHost: {target}\\r\\nContent-Length: 0\\r\\n\\r\\n"
                      f"GET /second HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n"),
        "bare-lf": f"GET http://{target}/hello HTTP/1.1\\r\\nX-A: 1\\nHost: other.test\\r\\n\\r\\n",
        "chunked": f"POST http://{target}/hello HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n",
    }
    for name, raw in requests.items():
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(raw.encode())
        answer = b""
        while True:
            data = s.recv(65536)
            if not data:
                break
            answer += data
        print(name, answer.split(b"\\r\\n")[0].decode(), answer.count(b"hello over http"))
""")


@pytest.fixture
def raw_server():
    """A server that answers the first request head, then keeps reading for a moment: it records
    every byte it was sent, pipelined ones included (which http.server would not read)."""
    import socket
    import threading

    sock = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []
    stop = threading.Event()

    def serve():
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.5)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\nhello over http")
                    while True:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    pass
                received.append(data)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield sock.getsockname()[1], received
    stop.set()
    t.join(2)
    sock.close()


def test_a_forwarded_request_carries_nothing_for_another_host(session_with, raw_server, tmp_path):
    """Behind a forwarded plain-HTTP request, a second one pipelined for another host is never
    sent on (a server hosting many names would answer it); headers split by a bare LF, and chunked
    bodies (whose end the proxy would have to parse), are refused."""
    port, received = raw_server
    s = session_with(ALLOW)
    (tmp_path / "smuggle.py").write_text(SMUGGLE)
    r = bash(s, f"{PYTHON} {tmp_path / 'smuggle.py'} allowed.test:{port}")
    assert "pipelined HTTP/1.1 200 OK 1" in r.text, r.text
    assert "bare-lf HTTP/1.1 400" in r.text and "chunked HTTP/1.1 501" in r.text, r.text
    assert len(received) == 1 and received[0].startswith(b"GET /hello HTTP/1.1\r\nHost: allowed.test:")
    assert b"/second" not in received[0] and b"other.test" not in received[0]


TUNNEL = textwrap.dedent("""
    import os, socket, sys, time
    host, port = os.environ["HTTP_PROXY"].rsplit("/", 1)[-1].rsplit(":", 1)
    target = sys.argv[1]
    body = b"GET /inside HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n"
    flights = {
        "same": (b"GET /hello HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n"
                 b"GET /again HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n"),
        "other": (b"GET /hello HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n"
                  b"GET /second HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n"),
        "body": (b"POST /hello HTTP/1.1\\r\\nHost: allowed.test\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body)) + body,
        "url": b"GET http://other.test/hello HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n",
        # the request line in two writes, the first too long to look like a request's start
        "split": (b"GET /hello" + b"a" * 40, b" HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n"),
        "crlf": (b"\\r\\n", b"GET /hello HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n"),
    }
    for name, flight in flights.items():
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(f"CONNECT {target} HTTP/1.1\\r\\n\\r\\n".encode())
        s.recv(200)
        for part in (flight if isinstance(flight, tuple) else (flight,)):
            s.sendall(part)
            time.sleep(0.3)
        answer = b""
        while True:
            data = s.recv(65536)
            if not data:
                break
            answer += data
        print(name, answer.count(b"hello over http"), flush=True)
""")


def test_every_request_in_a_plain_http_tunnel_is_checked(session_with, raw_server, tmp_path):
    """A CONNECT tunnel carrying plain HTTP is read request by request: a second request on the
    same connection for another site never reaches the server, nor does one whose URL names
    another host than its Host header; requests for the tunnel's own host, and a body that merely
    looks like a request, go through whole."""
    port, received = raw_server
    s = session_with(ALLOW)
    (tmp_path / "tunnel.py").write_text(TUNNEL)
    r = bash(s, f"{PYTHON} {tmp_path / 'tunnel.py'} allowed.test:{port}")
    assert "same 1" in r.text and "other 1" in r.text and "body 1" in r.text and "url 0" in r.text, r.text
    assert "split 0" in r.text and "crlf 0" in r.text, r.text
    same, other, body, url, split, crlf = received
    assert url == split == b"" and crlf in (b"", b"\r\n")  # connected, and nothing of a request sent
    assert b"GET /hello " in same and b"GET /again " in same
    assert b"GET /hello " in other and b"/second" not in other and b"other.test" not in other
    assert body.endswith(b"GET /inside HTTP/1.1\r\nHost: other.test\r\n\r\n")
    reasons = [row["reason"] for row in connections(tmp_path, s) if row["decision"] == "denied"]
    assert any("the HTTP Host header names other.test" in why for why in reasons), reasons
    assert any("the HTTP request's URL names other.test" in why for why in reasons), reasons
