"""Real servers and real clients: `codebelt serve` subprocesses, the `mcp` SDK's own Client.

A module-scoped project (workspace + an outside directory + a settings file) and a module-scoped
HTTP server; stdio servers are spawned per connection, as real stdio clients do.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import time
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import pytest

CODEBELT = str(Path(sys.executable).with_name("codebelt"))
TRANSPORTS = ("stdio", "http")
# "legacy": the initialize handshake (protocol 2025-11-25, what today's clients speak);
# "auto": the SDK client's default, which negotiates 2026-07-28 with this server.
ERAS = ("legacy", "auto")
COMBOS = [pytest.param(t, e, id=f"{t}-{e}") for t in TRANSPORTS for e in ERAS]
CONCURRENT_FILES = 96  # three times the server's 32 workers: calls queue, and each answer must stay its own

# Commands the tests run through Bash; everything else keeps the default policy.
SETTINGS = {"permissions": {"allow": ["Bash(sleep *)", "Bash(python3 *)", "Bash(echo *)"]}}


def png_bytes(width: int = 8, height: int = 6) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 60)).save(buf, format="PNG")
    return buf.getvalue()


@dataclass
class Project:
    root: Path
    outside: Path
    settings: Path
    state: Path

    def env(self) -> dict[str, str]:
        """Isolated config/state dirs for a server process: no settings from this machine."""
        return {
            "XDG_CONFIG_HOME": str(self.state / "config"),
            "XDG_STATE_HOME": str(self.state / "state"),
            "CODEBELT_AUDIT_DB": str(self.state / "audit.db"),
            "PYTHONUNBUFFERED": "1",
        }

    def serve_args(self, *extra: str, mode: str = "acceptEdits") -> list[str]:
        return [
            "serve", "--root", str(self.root), "--settings", str(self.settings),
            "--mode", mode, "--sandbox", "off", *extra,
        ]


def make_project(base: Path) -> Project:
    root = base / "ws"
    (root / "src").mkdir(parents=True)
    (root / "conc").mkdir()
    (root / "notes.txt").write_text("first line\nsecond line\nthird line\n")
    (root / "src" / "app.py").write_text("def main():\n    return 'needle'\n")
    (root / "pic.png").write_bytes(png_bytes())
    for i in range(CONCURRENT_FILES):
        (root / "conc" / f"f{i:03d}.txt").write_text(f"header\ntoken-{i:03d}-end\nfooter\n")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret line\n")
    settings = base / "settings.json"
    settings.write_text(json.dumps(SETTINGS))
    state = base / "state"
    state.mkdir()
    return Project(root, outside, settings, state)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return make_project(tmp_path_factory.mktemp("mcp"))


@contextmanager
def http_server(project: Project, *extra: str, bind: str = "127.0.0.1:0", mode: str = "acceptEdits",
                env: dict[str, str] | None = None) -> Iterator[str]:
    """`codebelt serve --http` in a subprocess; yields its URL once it listens."""
    log = project.state / f"http-{time.monotonic_ns()}.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [CODEBELT, *project.serve_args("--http", bind, *extra, mode=mode)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            env={**os.environ, **project.env(), **(env or {})}, start_new_session=True,
        )
    try:
        url = None
        deadline = time.monotonic() + 30
        while url is None and time.monotonic() < deadline:
            for line in log.read_text(errors="replace").splitlines():
                if "listening on " in line:
                    url = line.split("listening on ", 1)[1].strip()
            if proc.poll() is not None:
                raise RuntimeError(f"codebelt serve exited {proc.returncode}: {log.read_text()}")
            time.sleep(0.05)
        if url is None:
            raise RuntimeError(f"codebelt serve did not start: {log.read_text()}")
        yield url.replace("://0.0.0.0:", "://127.0.0.1:")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def http_url(project: Project) -> Iterator[str]:
    with http_server(project) as url:
        yield url


@asynccontextmanager
async def connect(
    transport: str,
    era: str,
    project: Project,
    http_url: str | None = None,
    *,
    token: str | None = None,
    **client_kwargs: Any,
) -> AsyncIterator[Any]:
    """An SDK `Client` connected to codebelt over `transport`, negotiating `era`."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    if transport == "stdio":
        server: Any = StdioServerParameters(command=CODEBELT, args=project.serve_args(), env=project.env())
    else:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        assert http_url is not None
        headers = {"Authorization": f"Bearer {token}"} if token else None
        server = streamable_http_client(http_url, http_client=create_mcp_http_client(headers=headers))
    async with Client(server, mode=era, **client_kwargs) as client:
        yield client


def processes_with(marker: str) -> list[int]:
    """PIDs whose command line contains `marker` (read from /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            pids.append(int(entry))
    return pids


def is_png(data_b64: str) -> bool:
    return base64.b64decode(data_b64).startswith(b"\x89PNG\r\n\x1a\n")
