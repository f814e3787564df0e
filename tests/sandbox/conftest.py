"""Fixtures for the sandbox tests: one real backend per parameter, skipped only when it cannot work.

Commands run through the wrapper with subprocess directly (engine level), the way the Bash
runner spawns them: own session, stdin from /dev/null, stdout and stderr together.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codebelt.sandbox import Limits, Sandbox, SandboxConfig

BACKENDS = ("bwrap", "landlock")
SYSTEM_PYTHON = "/usr/bin/python3"  # inside the jail only system directories exist
_probe_cache: dict[str, str | None] = {}


def backend_unusable(backend: str) -> str | None:
    """Why `backend` cannot work on this machine (None when it works), probed once per run."""
    if backend not in _probe_cache:
        probe_root = Path(os.environ.get("TMPDIR", "/tmp"))
        sb = Sandbox(config=SandboxConfig((probe_root,), None, mode=backend))
        _probe_cache[backend] = None if sb.status.active else sb.status.reason
        sb.close()
    return _probe_cache[backend]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    why = backend_unusable(request.param)
    if why:
        pytest.skip(f"{request.param} cannot work on this machine: {why}")
    return request.param


@pytest.fixture
def tmpd(tmp_path: Path) -> Path:
    d = tmp_path / "session-tmp"
    d.mkdir()
    return d


@pytest.fixture
def make_sandbox(ws: Path, tmpd: Path):
    made: list[Sandbox] = []

    def factory(mode: str, network: bool = False, limits: Limits | None = None,
                roots: tuple[Path, ...] | None = None) -> Sandbox:
        cfg = SandboxConfig(
            roots or (ws.resolve(),), tmpd.resolve(), mode=mode, network=network,
            limits=limits or Limits(), name="codebelt-test",
        )
        sb = Sandbox(config=cfg)
        made.append(sb)
        return sb

    yield factory
    for sb in made:
        sb.close()


def run(sb: Sandbox, command: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run `bash -c command` through the sandbox's wrapper; output is stdout+stderr."""
    wrap = sb.wrapper()
    assert wrap is not None
    argv, env, preexec = wrap(["/bin/bash", "-c", command], cwd, dict(os.environ))
    return subprocess.run(
        argv, cwd=cwd, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
        start_new_session=True,
    )


@pytest.fixture(params=BACKENDS)
def jail(request, ws: Path, tmpd: Path):
    why = backend_unusable(request.param)
    if why:
        pytest.skip(f"{request.param} cannot work here: {why}")
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode=request.param, name="codebelt-test"))
    if sb.jail.backend != request.param:
        sb.close()
        pytest.skip(f"no {request.param} jail here: {sb.jail.reason}")
    yield sb
    sb.close()


def jailed(sb: Sandbox, command: str, cwd: Path, masked: list[Path] | None = None) -> subprocess.CompletedProcess:
    wrap = sb.jail_wrapper(masked or [])
    assert wrap is not None
    argv, env, preexec, *cleanup = wrap(["/bin/bash", "-c", command], cwd, dict(os.environ))
    try:
        return subprocess.run(argv, cwd=cwd, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
                              start_new_session=True)
    finally:
        for done in cleanup:
            done()


