"""The MCP Inspector CLI (the official TypeScript client) against `codebelt serve` over stdio.

The Inspector is installed with npm into a cache directory on first use
(~/.cache/codebelt-test/inspector-<version>, or $CODEBELT_INSPECTOR_DIR). 0.15.0 is the newest
release whose engines allow the Node 20 this project is tested on (0.16+ need Node >= 22.7.5).
The test skips, saying why, only when npm cannot install it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .helpers import CODEBELT

pytestmark = pytest.mark.timeout(300)

INSPECTOR_VERSION = "0.15.0"
PACKAGE = f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}"


def inspector_dir() -> Path:
    default = Path.home() / ".cache" / "codebelt-test" / f"inspector-{INSPECTOR_VERSION}"
    return Path(os.environ.get("CODEBELT_INSPECTOR_DIR", default))


@pytest.fixture(scope="module")
def inspector() -> Path:
    prefix = inspector_dir()
    binary = prefix / "node_modules" / ".bin" / "mcp-inspector"
    if binary.exists():
        return binary
    npm, node = shutil.which("npm"), shutil.which("node")
    if not npm or not node:
        pytest.skip("the MCP Inspector test needs node and npm, which are not installed")
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        r = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), PACKAGE],
            capture_output=True, text=True, timeout=240,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm could not install {PACKAGE} within 240 s")
    if r.returncode != 0 or not binary.exists():
        pytest.skip(f"npm could not install {PACKAGE}: {r.stderr.strip()[-500:]}")
    return binary


def run_inspector(inspector: Path, project, *method_args: str) -> dict:
    r = subprocess.run(
        [str(inspector), "--cli", CODEBELT, *project.serve_args(), *method_args],
        capture_output=True, text=True, timeout=120, cwd=project.root,
        env={**os.environ, **project.env()},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def test_inspector_lists_tools(inspector, project):
    from codebelt import Session

    with Session(project.root, audit=False, load_user_settings=False) as s:
        names = set(s.tools)
    out = run_inspector(inspector, project, "--method", "tools/list")
    listed = {t["name"]: t for t in out["tools"]}
    assert set(listed) == names
    grep = listed["Grep"]
    assert grep["inputSchema"]["type"] == "object" and "pattern" in grep["inputSchema"]["properties"]
    assert grep["annotations"]["readOnlyHint"] is True
    for name in ("LSP", "RepoMap"):  # the code-intelligence tools, listed with their annotations
        assert listed[name]["annotations"]["readOnlyHint"] is True, listed[name]
        assert "operation" in listed["LSP"]["inputSchema"]["properties"]


def test_inspector_calls_a_tool(inspector, project):
    out = run_inspector(
        inspector, project, "--method", "tools/call", "--tool-name", "Grep",
        "--tool-arg", "pattern=needle", "--tool-arg", "output_mode=content",
    )
    assert out["isError"] is False
    assert "src/app.py" in out["content"][0]["text"]
    assert out["structuredContent"]["mode"] == "content"
