"""Local servers and names for the network tests: everything on 127.0.0.1, nothing else.

`allowed.test`, `denied.test` and the other `.test` names lead to 127.0.0.1 through the
proxy's name table (CODEBELT_NETWORK_RESOLVE), so the policy decides by name while every byte
stays on this machine. HTTPS servers use a certificate of a throw-away CA made here; clients in
the sandbox are told to trust that CA (curl --cacert, pip --cert, npm --cafile, GIT_SSL_CAINFO).
"""

from __future__ import annotations

import http.server
import os
import shutil
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

NAMES = ("allowed.test", "denied.test", "other.test", "new.test", "new2.test", "sub.allowed.test", "localhost.test")
PYTHON = sys.executable


@dataclass
class Pki:
    ca: Path
    cert: Path
    key: Path


@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> Pki:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("pki")
    run = lambda *a: subprocess.run(a, cwd=d, check=True, capture_output=True)  # noqa: E731
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "3",
        "-subj", "/CN=codebelt test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=allowed.test")
    sans = ",".join(f"DNS:{n}" for n in (*NAMES, "*.allowed.test"))
    (d / "ext.cnf").write_text(f"subjectAltName={sans}\nbasicConstraints=CA:FALSE\n")
    run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "3", "-extfile", "ext.cnf")
    for p in d.iterdir():
        p.chmod(0o644)
    return Pki(d / "ca.pem", d / "server.pem", d / "server.key")


@dataclass
class Server:
    """A threaded HTTP(S) server on 127.0.0.1 with routes; it records every request it served."""

    port: int
    scheme: str
    requests: list[tuple[str, str]] = field(default_factory=list)  # (Host header, path)

    def url(self, host: str, path: str = "/") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"


Route = Callable[[http.server.BaseHTTPRequestHandler], Any] | bytes | tuple[bytes, str]


def start_server(routes: dict[str, Route], pki: Pki | None = None, static: Path | None = None):
    holder: dict[str, Server] = {}

    class Handler(http.server.SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(static) if static else None, **kw)

        def do_GET(self):  # noqa: N802
            holder["s"].requests.append((self.headers.get("Host", ""), self.path))
            route = routes.get(self.path.split("?")[0])
            if route is None and static is not None:
                return super().do_GET()
            if route is None:
                return self._send(404, b"not found\n")
            if isinstance(route, bytes):
                return self._send(200, route)
            if isinstance(route, tuple):
                return self._send(200, *route)
            return route(self)

        def _send(self, code: int, body: bytes, ctype: str = "text/plain") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    class Quiet(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):  # a client the proxy cut off: expected here
            pass

    srv = Quiet(("127.0.0.1", 0), Handler)
    if pki is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(pki.cert, pki.key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    server = Server(srv.server_address[1], "https" if pki else "http")
    holder["s"] = server
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()

    def stop() -> None:
        srv.shutdown()
        srv.server_close()
        thread.join(5)

    return server, stop


@pytest.fixture
def names(monkeypatch):
    """Every test name leads to 127.0.0.1, for the proxy (commands never look names up)."""
    monkeypatch.setenv("CODEBELT_NETWORK_RESOLVE", ",".join(f"{n}=127.0.0.1" for n in NAMES))


def bwrap_unusable() -> str | None:
    from tests.sandbox.conftest import backend_unusable

    return backend_unusable("bwrap")


@pytest.fixture
def bwrap():
    why = bwrap_unusable()
    if why:
        pytest.skip(f"domain filtering needs bwrap, which cannot work here: {why}")


@pytest.fixture
def ws(tmp_path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def session_with(ws, tmp_path, names, bwrap):
    """Sessions whose Bash commands run under bwrap with the given `sandbox.network`."""
    from codebelt import Session

    made = []

    def make(network: Any, approver=None, **settings: Any):
        s = Session(ws, sandbox="bwrap", load_user_settings=False, audit=tmp_path / "audit.db", approver=approver,
                    settings={"permissions": {"allow": ["Bash(*)"]}, "sandbox": {"network": network}, **settings})
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def connections(tmp_path: Path, session) -> list[dict[str, Any]]:
    """The audit log's connection rows of a session (flushed first). An allowed connection is
    recorded when the proxy has relayed its last byte, which may come just after the command
    that opened it has ended: its rows are read once no connection of the session is open."""
    from codebelt import audit
    from codebelt.tools._services import network

    service = session._services.peek(network)
    deadline = time.monotonic() + 30
    while service is not None and service.gate.open_now and time.monotonic() < deadline:
        time.sleep(0.01)
    if session._audit is not None:
        session._audit.flush()
    return audit.connections(tmp_path / "audit.db", session_id=session.id)


def env_without_proxies() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
