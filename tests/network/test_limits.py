"""Per-session limits of the proxy, enforced on real commands: connections, bytes, a
connection's lifetime — and what the command and the audit log are told."""

from __future__ import annotations

import os
import time

import pytest

from codebelt.network import Gate, Limits, NetworkPolicy, Resolver

from .conftest import connections, start_server

BIG = 3 << 20


def slow(handler):
    """Sends a little every 0.2 s for up to 10 s."""
    handler.send_response(200)
    handler.send_header("Content-Length", str(50 * 1000))
    handler.end_headers()
    for _ in range(50):
        try:
            handler.wfile.write(b"x" * 1000)
            handler.wfile.flush()
        except OSError:
            return
        time.sleep(0.2)


@pytest.fixture
def server():
    srv, stop = start_server({"/hello": b"hello\n", "/big": b"y" * BIG, "/slow": slow})
    yield srv
    stop()


def test_connections_past_the_limit_are_refused(session_with, server, tmp_path):
    s = session_with({"allowedDomains": ["allowed.test"], "maxConnections": 3})
    r = s.call("Bash", {"command": "; ".join([f"curl -sS --max-time 10 {server.url('allowed.test', '/hello')}"] * 5)})
    assert r.text.count("hello\n") == 3, r.text
    assert "sandbox.network.maxConnections" in r.data["sandboxNote"]
    rows = connections(tmp_path, s)
    assert [row["decision"] for row in rows] == ["allowed"] * 3 + ["denied"] * 2


def test_bytes_past_the_limit_stop_the_connection(session_with, server, tmp_path):
    s = session_with({"allowedDomains": ["allowed.test"], "maxMB": 1})
    r = s.call("Bash", {"command": f"curl -sS --max-time 20 -o $TMPDIR/big {server.url('allowed.test', '/big')}; "
                                   "wc -c < $TMPDIR/big"})
    assert int([w for w in r.text.split() if w.isdigit()][-1]) < BIG, r.text
    rows = connections(tmp_path, s)
    assert "sandbox.network.maxMB" in rows[-1]["error"]
    r = s.call("Bash", {"command": f"curl -sS --max-time 10 {server.url('allowed.test', '/hello')}"})
    assert "hello" not in r.text and "sandbox.network.maxMB" in r.data["sandboxNote"]


def test_a_connection_open_too_long_is_closed(session_with, server, tmp_path):
    s = session_with({"allowedDomains": ["allowed.test"], "maxConnectionSeconds": 1})
    r = s.call("Bash", {"command": f"curl -sS --max-time 30 -o $TMPDIR/slow {server.url('allowed.test', '/slow')}; "
                                   "wc -c < $TMPDIR/slow"})
    assert int([w for w in r.text.split() if w.isdigit()][-1]) < 50 * 1000, r.text
    assert "sandbox.network.maxConnectionSeconds" in connections(tmp_path, s)[-1]["error"]


def test_connections_open_at_once_are_bounded():
    import ipaddress

    resolver = Resolver({"allowed.test": [ipaddress.ip_address("127.0.0.1")]})
    gate = Gate(NetworkPolicy.from_lists(["allowed.test"], limits=Limits(max_concurrent=2)), resolver)
    try:
        first, second = (gate.open("allowed.test", 80, origin="t") for _ in range(2))
        third = gate.open("allowed.test", 80, origin="t")
        assert first.allowed and second.allowed and not third.allowed
        assert "open at once" in third.verdict.reason
        first.close()
        assert gate.open("allowed.test", 80, origin="t").allowed
    finally:
        gate.close()


def test_a_connection_is_recorded_before_it_stops_counting_as_open():
    """So that 'no connection open' means 'every connection recorded': the audit rows of a
    command's connections are complete once none is open (the relay records one a moment after
    the command that opened it has ended)."""
    import ipaddress

    resolver = Resolver({"allowed.test": [ipaddress.ip_address("127.0.0.1")]})
    open_when_recorded = []
    gate = Gate(NetworkPolicy.from_lists(["allowed.test"]), resolver,
                on_record=lambda record: open_when_recorded.append((record.decision, gate.open_now)))
    try:
        gate.open("allowed.test", 80, origin="t").close()
        gate.open("denied.test", 80, origin="t").close()
        assert open_when_recorded == [("allowed", 1), ("denied", 1)] and gate.open_now == 0
    finally:
        gate.close()


@pytest.mark.parametrize("start", [b"", b"\x05", b"\x05\x01\x00\x05\x01", b"\x05\x01\x00\x05\x01\x00\x03\x20abc",
                                   b"CONNECT allowed.test:443 HTTP/1.1\r\n"])
def test_a_request_left_half_way_is_cut_off(start):
    """A client that starts a request (SOCKS5 or HTTP) and stops gets its connection closed after
    the header time, without any decision: stalled requests hold no connection open."""
    import array
    import socket

    from codebelt.network import Proxy

    gate = Gate(NetworkPolicy.from_lists(["allowed.test"], limits=Limits(header_timeout_seconds=1)), Resolver({}))
    proxy = Proxy(gate)
    att = proxy.attach("Bash", "test", None)
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        # what the stage does inside the sandbox: hand the listener over
        channel = socket.socket(fileno=os.dup(att.child_fd))
        channel.sendmsg([b"L"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [listener.fileno()]))])
        channel.close()
        with socket.create_connection(listener.getsockname(), timeout=20) as client:
            client.sendall(start)
            received = b""
            while True:
                data = client.recv(100)
                if not data:
                    break
                received += data
        assert received in (b"", b"\x05\x00"), received
        assert gate.connections == 0  # nothing was decided
    finally:
        listener.close()
        att.close()
        proxy.close()
        gate.close()
