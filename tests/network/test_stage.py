"""The stage that runs inside the sandbox before the command: it hands a listener out, writes the
port into the proxy variables, and leaves the command nothing of its own — not even the channel
when handing out failed (a command must not inherit a way to send codebelt descriptors)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from codebelt.network.environment import stage_command

REPORT = "import os, sys; print(os.environ['HTTP_PROXY'], os.path.exists('/proc/self/fd/' + sys.argv[1]))"


def run_stage(fd: int) -> str:
    argv = stage_command(fd, ["HTTP_PROXY"], [sys.executable, "-c", REPORT, str(fd)])
    env = {"HTTP_PROXY": "http://127.0.0.1:@CODEBELT_PROXY_PORT@", "PATH": os.environ["PATH"]}
    done = subprocess.run(argv, pass_fds=(fd,), env=env, capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr


def test_the_listener_goes_out_and_the_channel_does_not_stay():
    ours, theirs = socket.socketpair()
    try:
        out = run_stage(theirs.fileno())
        message, ancillary, _flags, _addr = ours.recvmsg(16, socket.CMSG_SPACE(4))
        assert message == b"L" and ancillary, out
        listener = socket.socket(fileno=int.from_bytes(ancillary[0][2][:4], sys.byteorder))
        port = listener.getsockname()[1]
        listener.close()
        assert out.strip() == f"http://127.0.0.1:{port} False", out
    finally:
        ours.close()
        theirs.close()


def test_when_handing_out_fails_the_command_runs_without_network_or_channel():
    """The channel is not a socket (a pipe): the stage says why, points the variables at a port
    where nothing listens, and closes the descriptor before the command starts."""
    read, write = os.pipe()
    try:
        out = run_stage(read)
        assert "no network proxy in this sandbox" in out and "http://127.0.0.1:9 False" in out, out
    finally:
        os.close(read)
        os.close(write)
