"""Waiting for a benchmark's child exactly: woken by the kernel when it exits (a pidfd), not by
polling. `subprocess.run(timeout=…)` and `Popen.wait(timeout=…)` look with WNOHANG and sleep
1, 2, 4 … up to 50 ms between looks, so a child that ends just after a look is seen late: ~1 ms
for a short command, up to 50 ms for one of ~100 ms (`cp` of 50 MB, `find` of a big tree) — a
baseline timed slower than it is. Every wait here is still bounded: past its timeout the child
is killed and `subprocess.TimeoutExpired` raised, as `subprocess.run` does.

Import it from a benchmark run as a script (`benchmarks/` is then first on sys.path):
`from exact import run`.
"""

from __future__ import annotations

import math
import os
import select
import subprocess
import time


def _expire(proc: subprocess.Popen, timeout: float) -> subprocess.TimeoutExpired:
    proc.kill()
    proc.wait()
    return subprocess.TimeoutExpired(proc.args, timeout)


def wait(proc: subprocess.Popen, timeout: float) -> int:
    """The child's exit code, the moment it exits; killed after `timeout` seconds."""
    if proc.returncode is not None:
        return proc.returncode
    pidfd = os.pidfd_open(proc.pid)  # not yet reaped (we are its only waiter): still this child
    try:
        if not select.select([pidfd], [], [], timeout)[0]:
            raise _expire(proc, timeout)
    finally:
        os.close(pidfd)
    return proc.wait()  # a zombie by now: reaped without blocking


def communicate(proc: subprocess.Popen, timeout: float) -> tuple[bytes | None, bytes | None]:
    """Read the child's stdout and stderr pipes (those that are pipes) to their end and wait for
    its exit, each seen as it happens; the child is killed after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    pipes = {f.fileno(): [] for f in (proc.stdout, proc.stderr) if f is not None}
    chunks = dict(pipes)
    pidfd = os.pidfd_open(proc.pid)
    poller = select.poll()
    for fd in (*pipes, pidfd):
        poller.register(fd, select.POLLIN)
    exited = False
    try:
        while pipes or not exited:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _expire(proc, timeout)
            for fd, _ in poller.poll(math.ceil(left * 1000)):
                if fd == pidfd:
                    exited = True
                    poller.unregister(fd)
                    continue
                data = os.read(fd, 1 << 16)
                if data:
                    pipes[fd].append(data)
                else:  # end of the pipe: every writer closed it
                    poller.unregister(fd)
                    del pipes[fd]
    finally:
        os.close(pidfd)
    proc.wait()  # a zombie by now: reaped without blocking
    out = [b"".join(chunks[f.fileno()]) if f is not None else None for f in (proc.stdout, proc.stderr)]
    for f in (proc.stdout, proc.stderr):
        if f is not None:
            f.close()
    return out[0], out[1]


def run(argv: list[str], *, timeout: float, check: bool = False, capture_output: bool = False,
        text: bool = False, **popen) -> subprocess.CompletedProcess:
    """`subprocess.run` with an exact wait: same arguments (no `input`), output as bytes, or as
    str with `text=True`."""
    if capture_output:
        popen.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc = subprocess.Popen(argv, **popen)
    if proc.stdout is None and proc.stderr is None:
        out, err = None, None
        wait(proc, timeout)
    else:
        out, err = communicate(proc, timeout)
    if text:
        out, err = (b.decode() if b is not None else None for b in (out, err))
    if check and proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, argv, out, err)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
