"""Run inside the sandbox: speak to the proxy directly, the three ways a client can, for each
target given (`host:port`), and print one line per try:
    connect <target> <HTTP status line>
    http <target> <HTTP status line>
    socks <target> <reply code>
A client that forges its own requests is what an attacker is: no client library in between."""

import os
import socket
import struct
import sys


def proxy() -> tuple[str, int]:
    host, port = os.environ["HTTP_PROXY"].rsplit("/", 1)[-1].rsplit(":", 1)
    return host, int(port)


def status(data: bytes) -> str:
    return data.split(b"\r\n")[0].decode("latin-1") or "<nothing>"


def connect(target: str) -> str:
    with socket.create_connection(proxy(), timeout=10) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        return status(s.recv(300))


def forward(target: str) -> str:
    with socket.create_connection(proxy(), timeout=10) as s:
        s.sendall(f"GET http://{target}/hello HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        return status(s.recv(300))


def socks(target: str) -> str:
    host, port = target.rsplit(":", 1)
    host = host.strip("[]")
    with socket.create_connection(proxy(), timeout=10) as s:
        s.sendall(b"\x05\x01\x00")
        s.recv(2)
        try:
            packed = socket.inet_pton(socket.AF_INET, host)
            address = b"\x01" + packed
        except OSError:
            try:
                address = b"\x04" + socket.inet_pton(socket.AF_INET6, host)
            except OSError:
                address = b"\x03" + bytes([len(host)]) + host.encode()
        s.sendall(b"\x05\x01\x00" + address + struct.pack(">H", int(port)))
        reply = s.recv(10)
        return str(reply[1]) if len(reply) > 1 else "<nothing>"


for target in sys.argv[1:]:
    for name, how in (("connect", connect), ("http", forward), ("socks", socks)):
        try:
            print(name, target, how(target), flush=True)
        except OSError as e:
            print(name, target, f"error {e}", flush=True)
