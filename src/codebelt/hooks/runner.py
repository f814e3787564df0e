"""Running one hook: a command (`bash -c`, its own process group, JSON on stdin, output capped,
the group killed at its timeout), an http endpoint (POST the same JSON; loopback or https only),
or a Python callable registered by a library user. A command hook also ends, its group killed,
when the call it runs for is cancelled (the client went away, the session closed)."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..humanize import duration
from .config import HookSpec

MAX_OUTPUT = 1 << 20  # bytes of stdout / stderr kept per hook; the rest is read and dropped
KILL_GRACE_S = 2.0
BASH = next((p for p in ("/bin/bash", "/usr/bin/bash") if os.access(p, os.X_OK)), "bash")


@dataclass
class HookRun:
    spec: HookSpec
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_ms: float = 0.0
    timed_out: bool = False
    signal: int | None = None
    error: str | None = None  # could not run at all, or failed (non-blocking)
    json: dict[str, Any] | None = None  # what a callable returned, or stdout parsed


def _drain(stream, keep: list[bytes]) -> None:
    total = 0
    while True:
        chunk = stream.read(65536)
        if not chunk:
            return
        if total < MAX_OUTPUT:
            keep.append(chunk[: MAX_OUTPUT - total])
        total += len(chunk)


def run_command(spec: HookSpec, payload: bytes, project_dir: Path,
                cancel: threading.Event | None = None) -> HookRun:
    started = time.monotonic()
    run = HookRun(spec)
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project_dir), "CODEBELT_PROJECT_DIR": str(project_dir)}
    try:
        proc = subprocess.Popen([BASH, "-c", spec.command or ""], cwd=project_dir, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        run.error = f"could not start: {e}"
        return run
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [threading.Thread(target=_drain, args=(proc.stdout, out), daemon=True),
               threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True)]
    for r in readers:
        r.start()
    try:
        proc.stdin.write(payload)
    except (BrokenPipeError, OSError):
        pass  # a hook that does not read its input
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
    ended = _wait(proc, spec.timeout, cancel)
    if ended != "exited":
        run.timed_out = ended == "timed out"
        _kill_group(proc)
    for r in readers:
        r.join(timeout=KILL_GRACE_S)
    rc = proc.returncode
    run.exit_code = rc if rc is not None and rc >= 0 else None
    run.signal = -rc if rc is not None and rc < 0 else None
    run.stdout = b"".join(out).decode("utf-8", "replace")
    run.stderr = b"".join(err).decode("utf-8", "replace")
    if run.timed_out:
        run.error = f"timed out after {duration(spec.timeout)} and was killed"
    elif ended == "cancelled":
        run.error = "killed: the call was cancelled"
    elif run.signal:
        run.error = f"ended by signal {run.signal}"
    run.duration_ms = (time.monotonic() - started) * 1000
    return run


CANCEL_POLL_S = 0.05


def _wait(proc: subprocess.Popen, timeout: float, cancel: threading.Event | None) -> str:
    """"exited", "timed out" or "cancelled", whichever comes first."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        try:
            proc.wait(timeout=max(0.0, remaining if cancel is None else min(remaining, CANCEL_POLL_S)))
            return "exited"
        except subprocess.TimeoutExpired:
            if cancel is not None and cancel.is_set():
                return "cancelled"
            if remaining <= 0:
                return "timed out"


def _kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            return
        try:
            proc.wait(timeout=KILL_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def url_allowed(url: str) -> str | None:
    """None when the hook may be POSTed to (https, or http to a loopback host), else why not."""
    u = urlparse(url)
    if u.scheme == "https" and u.hostname:
        return None
    if u.scheme != "http" or not u.hostname:
        return f"{url}: http hooks must be https, or http to a loopback address"
    if u.hostname == "localhost":
        return None
    try:
        if ipaddress.ip_address(u.hostname).is_loopback:
            return None
    except ValueError:
        pass
    return f"{url}: plain http is allowed only to a loopback address (127.0.0.1, ::1, localhost)"


def run_http(spec: HookSpec, payload: bytes) -> HookRun:
    started = time.monotonic()
    run = HookRun(spec)
    refused = url_allowed(spec.url or "")
    if refused:
        run.error = refused
        return run
    headers = {"Content-Type": "application/json", **dict(spec.headers)}
    req = urllib.request.Request(spec.url or "", data=payload, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=spec.timeout) as resp:  # noqa: S310 - scheme checked above
            body = resp.read(MAX_OUTPUT + 1)[:MAX_OUTPUT]
            run.exit_code = 0
            run.stdout = body.decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        run.exit_code = 1
        run.error = f"HTTP {e.code}"
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        run.error = f"could not reach {spec.url}: {getattr(e, 'reason', e)}"
    run.duration_ms = (time.monotonic() - started) * 1000
    return run


def run_python(spec: HookSpec, payload: dict[str, Any]) -> HookRun:
    started = time.monotonic()
    run = HookRun(spec)
    try:
        result = spec.function(dict(payload)) if spec.function else None
        run.exit_code = 0
        if isinstance(result, dict):
            run.json = result
    except Exception as e:  # noqa: BLE001 - a failing hook is a non-blocking error
        run.error = f"{type(e).__name__}: {e}"
    run.duration_ms = (time.monotonic() - started) * 1000
    return run


def run_hook(spec: HookSpec, payload: dict[str, Any], project_dir: Path,
             cancel: threading.Event | None = None) -> HookRun:
    if spec.type == "python":
        return run_python(spec, payload)
    data = json.dumps(payload, ensure_ascii=False, default=str).encode()
    if spec.type == "http":
        return run_http(spec, data)
    return run_command(spec, data, project_dir, cancel)
