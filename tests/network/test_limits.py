"""Per-session limits of the proxy, enforced on real commands: connections, bytes, a
connection's lifetime — and what the command and the audit log are told."""

from __future__ import annotations

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
