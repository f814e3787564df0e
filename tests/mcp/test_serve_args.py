"""`codebelt serve --http` address parsing and the loopback test that decides whether a token is needed."""

from __future__ import annotations

import pytest

from codebelt.cli import UsageError
from codebelt.cli.serve import parse_http
from codebelt.mcp.transport import is_loopback, security_settings

ADDRESSES = [
    ("8765", ("127.0.0.1", 8765)),
    (":8765", ("127.0.0.1", 8765)),
    ("127.0.0.1:0", ("127.0.0.1", 0)),
    ("localhost:9000", ("localhost", 9000)),
    ("[::1]:8765", ("::1", 8765)),
    ("0.0.0.0:80", ("0.0.0.0", 80)),
    ("10.1.2.3:8080", ("10.1.2.3", 8080)),
]


@pytest.mark.parametrize("value,expected", ADDRESSES)
def test_parse_http(value, expected):
    assert parse_http(value) == expected


@pytest.mark.parametrize("value", ["host:port", "127.0.0.1:70000", "127.0.0.1:"])
def test_parse_http_refuses(value):
    with pytest.raises(UsageError):
        parse_http(value)


LOOPBACK = [("127.0.0.1", True), ("127.5.5.5", True), ("localhost", True), ("::1", True),
            ("[::1]", True), ("0.0.0.0", False), ("::", False), ("10.0.0.1", False), ("example.com", False)]


@pytest.mark.parametrize("host,expected", LOOPBACK)
def test_is_loopback(host, expected):
    assert is_loopback(host) is expected


def test_security_settings_name_the_server():
    loop = security_settings("127.0.0.1")
    assert loop.enable_dns_rebinding_protection and "localhost:*" in loop.allowed_hosts
    assert "http://127.0.0.1:*" in loop.allowed_origins
    lan = security_settings("10.0.0.5", ["box.lan"])
    assert {"10.0.0.5:*", "box.lan:*"} <= set(lan.allowed_hosts) and "localhost:*" not in lan.allowed_hosts
    assert not security_settings("0.0.0.0").enable_dns_rebinding_protection


def _codebelt() -> str:
    import sys
    from pathlib import Path

    return str(Path(sys.executable).parent / "codebelt")


@pytest.mark.parametrize("kind", ["in use", "not this machine's"])
def test_an_address_that_cannot_be_listened_on_is_one_sentence(tmp_path, kind):
    """No traceback from inside the web server: the address, the reason, exit status 2."""
    import socket
    import subprocess

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    address = f"127.0.0.1:{taken.getsockname()[1]}" if kind == "in use" else "192.0.2.1:8765"
    try:
        env = {"CODEBELT_TOKEN": "t", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        p = subprocess.run([_codebelt(), "serve", "--root", str(tmp_path), "--http", address],
                           capture_output=True, text=True, timeout=60, env=env)
    finally:
        taken.close()
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert f"cannot listen on {address}" in p.stderr, p.stderr
