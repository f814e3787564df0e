"""Every code block in the README runs as written: Python blocks, the command-line and MCP
blocks (in a scratch workspace, the installed `codebelt` on PATH), the settings example, and
the set-up commands (CI runs them word for word; here the part after installing)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w+)\n(.*?)```", README, re.S)]
BIN = Path(sys.executable).parent


def blocks(lang: str) -> list[str]:
    return [body for kind, body in BLOCKS if kind == lang]


@pytest.fixture
def scratch(tmp_path):
    ws = tmp_path / "project"
    (ws / "src").mkdir(parents=True)
    shutil.copy(ROOT / "README.md", ws / "README.md")
    (ws / "a.py").write_text("def main():\n    pass\n")
    (ws / "src" / "app.py").write_text("".join(f"x{i} = {i}  # TODO {i}\n" for i in range(200)))
    (ws / "change.patch").write_text("*** Begin Patch\n*** Add File: added.txt\n+hello\n*** End Patch\n")
    return ws


def env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_the_readme_has_the_blocks_this_test_runs():
    assert len(blocks("python")) == 3 and len(blocks("sh")) == 3 and len(blocks("json")) == 1


@pytest.mark.parametrize("code", blocks("python"), ids=["python-session", "python-adapters", "python-checkpoints"])
def test_python_blocks(scratch, code):
    out = subprocess.run([sys.executable, "-c", code], cwd=scratch, env=env(), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]


def test_command_line_block(scratch):
    block = next(b for b in blocks("sh") if "codebelt call Read" in b and "src/app.py" in b)
    for line in block.strip().splitlines():
        out = subprocess.run(["bash", "-c", line], cwd=scratch, env=env(), capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, (line, out.stdout[-1000:], out.stderr[-1000:])
    assert (scratch / "added.txt").read_text() == "hello\n"  # apply_patch < change.patch


def test_mcp_server_block_starts_each_server(scratch):
    block = next(b for b in blocks("sh") if "codebelt serve" in b)
    for line in block.strip().splitlines():
        proc = subprocess.Popen(["bash", "-c", line], cwd=scratch, env=env(),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            if "--http" in line:
                deadline = time.monotonic() + 30
                err = b""
                while b"listening on" not in err and time.monotonic() < deadline and proc.poll() is None:
                    err += proc.stderr.read1(4096) if proc.stderr else b""
                assert b"listening on" in err, (line, err[-500:])
            else:  # stdio: answer an initialize request, then end at end of input
                init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "readme", "version": "1"}}}
                out, _ = proc.communicate(json.dumps(init).encode() + b"\n", timeout=30)
                assert b'"serverInfo"' in out, (line, out[-500:])
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=15)


def test_settings_example_is_valid(tmp_path):
    from codebelt.settings import load_settings

    (tmp_path / "user.json").write_text(blocks("json")[0])
    s = load_settings(tmp_path, settings_file=tmp_path / "user.json", load_user=False)
    assert s.sandbox.auto_allow_bash is True and any(r.text == "Edit(src/**)" for r in s.rules)
    # from an untrusted repository's own file, what widens access is dropped (with a warning),
    # what narrows kept; trusted, all of it is taken
    (tmp_path / ".codebelt").mkdir()
    (tmp_path / ".codebelt" / "settings.json").write_text(blocks("json")[0])
    s = load_settings(tmp_path, load_user=False)
    assert s.sandbox.auto_allow_bash is None and not any(r.behavior == "allow" for r in s.rules)
    assert any(r.text == "Read(./.env)" for r in s.rules) and s.trust_notice()
    s = load_settings(tmp_path, load_user=False, trust_workspace=True)
    assert s.sandbox.auto_allow_bash is True and any(r.text == "Edit(src/**)" for r in s.rules)


def test_set_up_commands():
    setup = next(b for b in blocks("sh") if "scripts/setup.sh" in b)
    commands = [line for line in setup.splitlines() if line and not line.startswith("#")]
    assert commands == [
        """bash scripts/setup.sh && .venv/bin/codebelt call Read '{"file_path": "README.md", "limit": 5}'""",
        "bash scripts/setup.sh --test && .venv/bin/python -m pytest -q -p no:cacheprovider",
    ]
    assert commands[1] in (ROOT / ".ci" / "run").read_text()  # what CI runs, word for word
    after_install = commands[0].split(" && ", 1)[1].replace(".venv/bin/", f"{BIN}/")
    out = subprocess.run(["bash", "-c", after_install], cwd=ROOT, env=env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "# codebelt" in out.stdout, out.stderr
