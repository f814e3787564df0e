"""Network on/off per backend, against a loopback server this test starts."""

from __future__ import annotations

import shutil
import socket
import sys
import threading

import pytest

from codebelt.sandbox import denial

from .conftest import run


@pytest.fixture
def server():
    """A loopback TCP server answering every connection with an HTTP 200 'pong'."""
    sock = socket.create_server(("127.0.0.1", 0))
    sock.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\npong")
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield sock.getsockname()[1]
    stop.set()
    t.join(2)
    sock.close()


def python_client(port: int) -> str:
    code = (
        "import socket; s = socket.create_connection(('127.0.0.1', %d), timeout=5); "
        "s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); print(s.recv(100).decode().split()[-1])" % port
    )
    return f"{sys.executable} -c \"{code}\""


CLIENTS = {
    "python": python_client,
    "curl": lambda port: f"curl -sS --max-time 5 http://127.0.0.1:{port}/",
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
def test_loopback_connection(client, network, backend, make_sandbox, server, ws):
    if client == "curl" and shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    sb = make_sandbox(backend, network=network)
    proc = run(sb, CLIENTS[client](server), ws)
    if network:
        assert proc.returncode == 0, proc.stdout
        assert proc.stdout.strip().endswith("pong")
    else:
        assert proc.returncode != 0 and "pong" not in proc.stdout, proc.stdout
        # and the failure is explained as the sandbox's doing, naming the setting
        message = denial.explain(proc.stdout, proc.returncode, backend=backend, network=False,
                                 temp_dir=None)
        assert message and "sandbox.network: true" in message, proc.stdout


def test_bwrap_network_off_has_no_interfaces_but_loopback(make_sandbox, ws):
    from .conftest import backend_unusable

    if backend_unusable("bwrap"):
        pytest.skip(f"bwrap cannot work here: {backend_unusable('bwrap')}")
    sb = make_sandbox("bwrap", network=False)
    proc = run(sb, "cat /proc/net/dev", ws)
    names = {line.split(":")[0].strip() for line in proc.stdout.splitlines() if ":" in line}
    assert names == {"lo"}, proc.stdout


@pytest.mark.parametrize("kind", ["tcp", "mptcp", "udp", "unix", "abstract"])
def test_network_off_reaches_no_host_socket(kind, backend, make_sandbox, ws, tmp_path):
    """Network off means off for every family: a datagram, an MPTCP stream, a Unix socket with a
    path (docker.sock, ssh-agent) and an abstract one — checked by the listeners on the host."""
    import time

    from .netprobe import Listeners, client, reached

    sock_dir = tmp_path / "sockets"  # outside the workspace, readable (the write sandbox reads all)
    sock_dir.mkdir()
    listeners = Listeners(sock_dir)
    try:
        sb = make_sandbox(backend, network=False)
        proc = run(sb, client(sys.executable, kind, listeners), ws)
        time.sleep(0.3)
        assert not reached(listeners, kind), proc.stdout
    finally:
        listeners.close()


def test_unix_sockets_inside_the_sandbox_need_the_setting(backend, make_sandbox, ws):
    """With the network off a command cannot even make a Unix socket (it could connect to the
    host's through the filesystem); socketpair, which has no address, still works."""
    sb = make_sandbox(backend, network=False)
    (ws / "probe.py").write_text(
        "import socket\n"
        "try:\n    socket.socket(socket.AF_UNIX)\n    print('made')\n"
        "except PermissionError:\n    print('refused')\n"
        "a, b = socket.socketpair()\na.send(b'x')\nprint(b.recv(1))\n"
    )
    proc = run(sb, f"{sys.executable} probe.py", ws)
    assert "refused" in proc.stdout and "b'x'" in proc.stdout, proc.stdout
