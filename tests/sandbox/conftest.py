"""Fixtures for the sandbox tests: one real backend per parameter, skipped only when it cannot work.

Commands run through the wrapper with subprocess directly (engine level), the way the Bash
runner spawns them: own session, stdin from /dev/null, stdout and stderr together.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import uuid
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


def sandbox_name() -> str:
    """A sandbox name of its own: the session cgroups are named after it (and the process), and
    closing a sandbox kills everything in its cgroup — a sandbox of an earlier test in the same
    worker, closed late (collected), would kill this test's processes in a shared one."""
    return f"codebelt-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def make_sandbox(ws: Path, tmpd: Path):
    made: list[Sandbox] = []

    def factory(mode: str, network: bool = False, limits: Limits | None = None,
                roots: tuple[Path, ...] | None = None) -> Sandbox:
        cfg = SandboxConfig(
            roots or (ws.resolve(),), tmpd.resolve(), mode=mode, network=network,
            limits=limits or Limits(), name=sandbox_name(),
        )
        sb = Sandbox(config=cfg)
        made.append(sb)
        return sb

    yield factory
    for sb in made:
        sb.close()


def run(sb: Sandbox, command: str, cwd: Path, timeout: float = 30,
        one_shot: bool = False) -> subprocess.CompletedProcess:
    """Run `bash -c command` through the sandbox's wrapper, the way the Bash runner does (in the
    session's resident sandbox when the wrapper offers one, unless `one_shot`); output is
    stdout+stderr."""
    wrap = sb.wrapper()
    assert wrap is not None
    return spawn(wrap(["/bin/bash", "-c", command], cwd, dict(os.environ)), cwd, timeout, one_shot)


def spawn(wrapped, cwd: Path, timeout: float = 60, one_shot: bool = False) -> subprocess.CompletedProcess:
    """Start what a write sandbox's wrapper returned the way the Bash runner does: through the
    resident sandbox's launch when there is one (unless `one_shot`), else the argv spawned."""
    argv, env, preexec = wrapped[:3]
    launch = None if one_shot else getattr(wrapped, "launch", None)
    if argv[0].endswith("bwrap") and Sandbox.resident_sandbox == "now" and not one_shot and len(wrapped) == 3:
        assert launch is not None, "the resident write sandbox did not start: the table would test one-shot only"
    if launch is not None:
        return _launched(launch, argv, timeout)
    return subprocess.run(
        argv, cwd=cwd, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
        start_new_session=True,
    )


# The write sandbox three ways: bwrap started by the session's resident sandbox (what the Bash
# runner uses), bwrap built for the one command (the PTY path, the proxy, the fallback), Landlock.
WRITE_SANDBOXES = ("bwrap", "bwrap-one-shot", "landlock")


def write_sandbox(name: str, monkeypatch) -> str:
    """The backend of a WRITE_SANDBOXES entry (skipped where it cannot work). For every Sandbox
    made during the test (a Session's too): bwrap's resident started by the first command, which
    waits for it (not in the background: every command of the test then starts in it), or for the
    one-shot entry, one bwrap per command."""
    backend = name.removesuffix("-one-shot")
    why = backend_unusable(backend)
    if why:
        pytest.skip(f"{backend} cannot work on this machine: {why}")
    monkeypatch.setattr(Sandbox, "resident_sandbox", False if name.endswith("-one-shot") else "now")
    return backend


def _launched(launch, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    with tempfile.TemporaryFile() as out:
        proc = launch({1: out.fileno(), 2: out.fileno()})
        assert proc is not None, "the resident did not take the command"
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        out.seek(0)
        return subprocess.CompletedProcess(argv, code, out.read().decode(errors="replace"))


# bwrap's jail twice: started by the session's resident jail (what the Bash runner uses), and
# built for the one command (what runs where no resident can, and what other callers spawn)
JAILS = [*BACKENDS[:1], "bwrap-one-shot", *BACKENDS[1:]] if "bwrap" in BACKENDS else list(BACKENDS)


@pytest.fixture(params=JAILS)
def jail(request, ws: Path, tmpd: Path):
    backend = request.param.removesuffix("-one-shot")
    why = backend_unusable(backend)
    if why:
        pytest.skip(f"{backend} cannot work here: {why}")
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode=backend, name=sandbox_name()))
    if sb.jail.backend != backend:
        sb.close()
        pytest.skip(f"no {backend} jail here: {sb.jail.reason}")
    sb.one_shot = request.param.endswith("-one-shot")
    yield sb
    sb.close()


def jailed(sb: Sandbox, command: str, cwd: Path, masked: list[Path] | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess:
    """Run `command` in the jail the way the Bash runner does: through the resident jail when the
    wrapper offers one (unless the fixture asked for the one-shot jail), else spawned."""
    wrap = sb.jail_wrapper(masked or [])
    assert wrap is not None
    wrapped = wrap(["/bin/bash", "-c", command], cwd, dict(os.environ))
    argv, env, preexec, *rest = wrapped
    cleanup = rest[0] if rest else None
    launch = None if getattr(sb, "one_shot", False) else getattr(wrapped, "launch", None)
    try:
        if launch is not None:
            return _launched(launch, argv, timeout)
        return subprocess.run(argv, cwd=cwd, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                              start_new_session=True)
    finally:
        if cleanup is not None:
            cleanup()


def host_processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains `marker` (a process a command left behind)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


def resident_jail(ws: Path, tmpd: Path, path: str, monkeypatch) -> Sandbox:
    """A session whose resident jail runs, on the request path `path` ("native": the compiled
    one, "python": resident.py's), after its first command; skips where it cannot."""
    from codebelt.sandbox import native

    why = backend_unusable("bwrap")
    if why:
        pytest.skip(f"bwrap cannot work here: {why}")
    if path == "native" and not native.available():
        pytest.skip("the compiled request path is not built here")
    monkeypatch.setenv("CODEBELT_RESIDENT_NATIVE", "1" if path == "native" else "0")
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode="bwrap", name=sandbox_name()))
    if sb.jail.backend != "bwrap" or not sb._stage_abi:
        sb.close()
        pytest.skip(f"no bwrap jail with its Landlock layer here: {sb.jail.reason}")
    r = jailed(sb, "true", ws)
    if sb._resident is None:
        sb.close()
        pytest.skip(f"no resident jail here: {sb._resident_failed}")
    assert r.returncode == 0, r.stdout
    return sb
