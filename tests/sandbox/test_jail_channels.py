"""Channels from the read-only jail to processes outside it, per backend: each case sets up a
host-side receiver (a process, a socket, a pipe reader, a queue, a keyring entry, a terminal),
runs a jailed program that tries to reach it, and checks on the host that nothing arrived — or,
for what the host holds, that nothing of it came back out."""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import threading
import time
import tty
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from .conftest import SYSTEM_PYTHON, jailed

pytestmark = pytest.mark.skipif(not os.path.exists(SYSTEM_PYTHON), reason=f"{SYSTEM_PYTHON} is needed inside the jail")

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def py(code: str) -> str:
    """A jailed Python one-liner (system Python: codebelt's may not be visible in the jail)."""
    return f"timeout 5 {SYSTEM_PYTHON} -c {code!r}; echo exit=$?"


@dataclass
class Channel:
    """`open_(ws, token)` sets up the receiver and returns (command for the jail, what the
    receiver got afterwards, cleanup)."""

    open_: Callable[[Path, str], tuple[str, Callable[[], bytes], Callable[[], None]]]


def _proc_of_others(ws: Path, token: str):
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 60", f"arg-{token}"], env={"SECRET": f"env-{token}"})
    pattern = f"{token[:4]}[{token[4]}]{token[5:]}"  # matches the token without containing it
    command = (f"cat /proc/{proc.pid}/cmdline /proc/{proc.pid}/environ; "
               f"grep -a '{pattern}' /proc/[0-9]*/cmdline /proc/[0-9]*/environ; ls /proc/{proc.pid}/")

    def stop() -> None:
        proc.kill()
        proc.wait()

    return command, lambda: b"", stop


def _netlink(protocol: int):
    def open_(ws: Path, token: str):
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, protocol)
        sock.bind((0, 0))
        sock.settimeout(0.2)
        port = sock.getsockname()[0]
        code = (f"import socket; s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, {protocol}); "
                f"s.sendto(b'{token}', ({port}, 0)); print('sent')")

        def got() -> bytes:
            try:
                return sock.recv(4096)
            except OSError:
                return b""

        return py(code), got, sock.close

    return open_


def _fifo(ws: Path, token: str):
    path = ws / "pipe"
    os.mkfifo(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a reader waiting on the host
    got = bytearray()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                got.extend(os.read(fd, 4096))
            except BlockingIOError:
                pass
            time.sleep(0.02)

    t = threading.Thread(target=read, daemon=True)
    t.start()

    def close() -> None:
        stop.set()
        t.join(2)
        os.close(fd)

    command = f"echo {token} > pipe; echo {token} >> {path}; {SYSTEM_PYTHON} -c \"open('pipe', 'w').write('{token}')\""
    return command, lambda: (time.sleep(0.3), bytes(got))[1], close


def _sysv_queue(ws: Path, token: str):
    key = int(token[:6], 16) | 0x10000000
    qid = libc.msgget(key, 0o1666)  # IPC_CREAT | rw for everyone
    assert qid >= 0, os.strerror(ctypes.get_errno())
    code = ("import ctypes; c = ctypes.CDLL(None, use_errno=True); "
            f"q = c.msgget({key}, 0o666); buf = ctypes.create_string_buffer(b'\\x01' + bytes(7) + b'{token}'); "
            f"print('msgget', q, c.msgsnd(q, buf, {len(token)}, 0))")

    def got() -> bytes:
        buf = ctypes.create_string_buffer(8 + 64)
        n = libc.msgrcv(qid, buf, 64, 0, 0o4000)  # IPC_NOWAIT
        return buf.raw[8:8 + n] if n > 0 else b""

    return py(code), got, lambda: libc.msgctl(qid, 0, None)  # IPC_RMID


class _MqAttr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]


def _posix_queue(ws: Path, token: str):
    name = f"/codebelt-{token[:12]}".encode()
    attr = _MqAttr(0, 4, 64, 0)
    mq = libc.mq_open(name, os.O_CREAT | os.O_RDWR | os.O_NONBLOCK, 0o666, ctypes.byref(attr))
    assert mq >= 0, os.strerror(ctypes.get_errno())
    code = ("import ctypes, os; c = ctypes.CDLL(None, use_errno=True); "
            f"q = c.mq_open({name!r}, os.O_WRONLY); print('mq', q, c.mq_send(q, b'{token}', {len(token)}, 0))")

    def got() -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = libc.mq_receive(mq, buf, 64, None)
        return buf.raw[:n] if n > 0 else b""

    def close() -> None:
        os.close(mq)
        libc.mq_unlink(name)

    return py(code), got, close


def _keyring(ws: Path, token: str):
    desc = f"codebelt-test-{token[:8]}".encode()
    key = libc.syscall(248, b"user", desc, token.encode(), len(token), ctypes.c_int(-4))  # add_key to @u
    if key < 0:
        pytest.skip(f"no user keyring here: {os.strerror(ctypes.get_errno())}")
    code = ("import ctypes; c = ctypes.CDLL(None, use_errno=True); c.syscall.restype = ctypes.c_long; "
            f"k = c.syscall(250, 10, -4, b'user', {desc!r}, 0); "  # KEYCTL_SEARCH in @u
            f"b = ctypes.create_string_buffer(64); n = c.syscall(250, 11, ctypes.c_long({key}), b, 64); "
            "print('key', k, n, b.raw[:max(n, 0)])")
    return py(code), lambda: b"", lambda: libc.syscall(250, 3, ctypes.c_long(key))  # KEYCTL_REVOKE


def _terminal(ws: Path, token: str):
    master, slave = os.openpty()
    tty.setraw(slave)  # no echo: what the master reads back is only what was written to the terminal
    name = os.ttyname(slave)
    os.write(master, f"typed-{token}\n".encode())  # what the user types: a jailed reader must not get it
    os.set_blocking(master, False)
    command = f"timeout 2 head -c 20 {name}; echo {token} > {name}"

    def got() -> bytes:
        try:
            return os.read(master, 4096)
        except BlockingIOError:
            return b""

    def close() -> None:
        os.close(master)
        os.close(slave)

    return command, got, close


CHANNELS = {
    "other-process-cmdline-environ": Channel(_proc_of_others),
    "netlink-usersock": Channel(_netlink(2)),
    "netlink-sock-diag": Channel(_netlink(4)),
    "netlink-generic": Channel(_netlink(16)),
    "fifo-in-workspace": Channel(_fifo),
    "sysv-message-queue": Channel(_sysv_queue),
    "posix-message-queue": Channel(_posix_queue),
    "user-keyring": Channel(_keyring),
    "host-terminal": Channel(_terminal),
}


@pytest.mark.parametrize("name", sorted(CHANNELS))
def test_no_channel_out_of_the_jail(name, jail, ws):
    token = uuid.uuid4().hex
    command, received, close = CHANNELS[name].open_(ws, token)
    try:
        proc = jailed(jail, command, ws)
        got = received()
    finally:
        close()
    assert token.encode() not in got, (got, proc.stdout)
    assert token[:8] not in proc.stdout, proc.stdout  # nothing of what the host holds came back


def test_the_channels_reach_their_receivers_outside_the_jail(ws):
    """The same clients, unjailed, do reach the receivers: the table tests channels that exist."""
    for name in ("netlink-usersock", "fifo-in-workspace", "sysv-message-queue", "posix-message-queue"):
        token = uuid.uuid4().hex
        command, received, close = CHANNELS[name].open_(ws, token)
        try:
            subprocess.run(["/bin/bash", "-c", command], cwd=ws, capture_output=True, timeout=30)
            assert token.encode() in received(), name
        finally:
            close()
            if (ws / "pipe").exists():
                (ws / "pipe").unlink()
