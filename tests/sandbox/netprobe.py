"""Host-side listeners for every socket family a sandboxed command might reach, and the client
one-liners that try them. Each listener records what reached it, so a test checks on the host
that nothing did (a client that only *reports* failure proves less)."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from pathlib import Path


class Listeners:
    """TCP, UDP, a Unix path socket (in `sock_dir`) and an abstract Unix socket, all recording."""

    def __init__(self, sock_dir: Path):
        self.received: dict[str, list[bytes]] = {k: [] for k in ("tcp", "udp", "unix", "abstract")}
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix_path = str(sock_dir / "host.sock")
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(self.unix_path)
        self.unix.listen()
        self.abstract_name = f"codebelt-test-{uuid.uuid4().hex[:8]}"
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + self.abstract_name)
        self.abstract.listen()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept, args=(k, s), daemon=True)
                         for k, s in (("tcp", self.tcp), ("unix", self.unix), ("abstract", self.abstract))]
        self._threads.append(threading.Thread(target=self._datagrams, daemon=True))
        for t in self._threads:
            t.start()

    def _accept(self, kind: str, sock: socket.socket) -> None:
        sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    self.received[kind].append(conn.recv(100) or b"<connected>")
                except OSError:
                    self.received[kind].append(b"<connected>")

    def _datagrams(self) -> None:
        self.udp.settimeout(0.2)
        while not self._stop.is_set():
            try:
                data, _ = self.udp.recvfrom(100)
                self.received["udp"].append(data)
            except OSError:
                continue

    @property
    def tcp_port(self) -> int:
        return self.tcp.getsockname()[1]

    @property
    def udp_port(self) -> int:
        return self.udp.getsockname()[1]

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(2)
        for s in (self.tcp, self.udp, self.unix, self.abstract):
            s.close()
        if os.path.exists(self.unix_path):
            os.unlink(self.unix_path)


def client(python: str, kind: str, L: Listeners) -> str:
    """A command that tries to send b'hi' to the listener of `kind`; prints 'sent' on success."""
    targets = {
        "tcp": f"s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.settimeout(3); s.connect(('127.0.0.1', {L.tcp_port})); s.sendall(b'hi')",
        "mptcp": f"s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.settimeout(3); s.connect(('127.0.0.1', {L.tcp_port})); s.sendall(b'hi')",
        "udp": f"s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'hi', ('127.0.0.1', {L.udp_port}))",
        "unix": f"s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(3); s.connect({L.unix_path!r}); s.sendall(b'hi')",
        "abstract": f"s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(3); s.connect('\\0{L.abstract_name}'); s.sendall(b'hi')",
    }
    code = f"import socket, time; {targets[kind]}; time.sleep(0.3); print('sent')"
    return f'{python} -c "{code}"'


def reached(L: Listeners, kind: str) -> bool:
    return bool(L.received["tcp" if kind == "mptcp" else kind])
