"""Every code block in the README runs as written, in a fresh clone as the set-up commands leave
it: the repository's files, `.venv` holding the installed package, and nothing on PATH that the
set-up commands did not put there (they put nothing there: the README says `.venv/bin/…`).
Python blocks, the command-line and MCP blocks, the settings example, and the set-up commands
(CI runs them word for word; here the part after installing)."""

from __future__ import annotations

import json
import os
import re
import select
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
VENV = Path(sys.prefix)  # the environment `scripts/setup.sh` made, running these tests


def blocks(lang: str) -> list[str]:
    return [body for kind, body in BLOCKS if kind == lang]


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The repository's files as a clone has them (the working tree's, tracked files only), with
    `.venv` the environment that runs these tests."""
    if not (VENV / "bin" / "codebelt").exists():
        pytest.skip("the tests do not run from the environment scripts/setup.sh makes")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    dest = tmp_path_factory.mktemp("clone") / "codebelt"
    for rel in filter(None, listed.stdout.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    (dest / ".venv").symlink_to(VENV)
    return dest


def env() -> dict[str, str]:
    """The user's environment before the set-up commands: the venv neither on PATH nor active."""
    bin_dir = str(VENV / "bin")
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != bin_dir)
    out = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    out["PATH"] = path
    return out


def test_the_readme_has_the_blocks_this_test_runs():
    assert len(blocks("python")) == 3 and len(blocks("sh")) == 3 and len(blocks("json")) == 1


def test_the_venv_is_not_on_path_here(clone):
    # what makes the lines below a real check: bare names are not found after the set-up commands
    out = subprocess.run(["bash", "-c", "command -v codebelt apply_patch"], cwd=clone, env=env(),
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "", out.stdout


@pytest.mark.parametrize("code", blocks("python"), ids=["python-session", "python-adapters", "python-checkpoints"])
def test_python_blocks(clone, code):
    out = subprocess.run([".venv/bin/python", "-c", code], cwd=clone, env=env(), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]


def test_command_line_block(clone):
    block = next(b for b in blocks("sh") if "codebelt call Read" in b and "codebelt audit" in b)
    for line in block.strip().splitlines():
        out = subprocess.run(["bash", "-c", line], cwd=clone, env=env(), capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, (line, out.stdout[-1000:], out.stderr[-1000:])
    assert (clone / "hello.txt").read_text() == "hello\n"  # what the apply_patch line adds


def test_mcp_server_block_starts_each_server(clone):
    block = next(b for b in blocks("sh") if "codebelt serve" in b)
    for line in block.strip().splitlines():
        if "--http" in line:
            _serves_http(clone, line)
            continue
        proc = subprocess.Popen(["bash", "-c", line], cwd=clone, env=env(), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:  # stdio: answer an initialize request, then end at end of input
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "readme", "version": "1"}}}
            out, _ = proc.communicate(json.dumps(init).encode() + b"\n", timeout=30)
            assert b'"serverInfo"' in out, (line, out[-500:])
        finally:
            _stop(proc)


def _serves_http(clone: Path, line: str) -> None:
    """The line's server starts listening. Its port is fixed by the README, and other test runs on
    the machine run this same line: a port in use is waited for, not a failure."""
    deadline = time.monotonic() + 120
    while True:
        proc = subprocess.Popen(["bash", "-c", line], cwd=clone, env=env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        err = b""
        try:
            until = time.monotonic() + 30
            assert proc.stderr is not None
            while b"listening on" not in err and time.monotonic() < until:
                ready, _, _ = select.select([proc.stderr], [], [], max(0.0, until - time.monotonic()))
                chunk = proc.stderr.read1(4096) if ready else b""
                if ready and not chunk:
                    break  # it ended
                err += chunk
            if b"listening on" in err:
                return
        finally:
            _stop(proc)
        if b"address already in use" not in err.lower() or time.monotonic() > deadline:
            raise AssertionError((line, err[-500:]))
        time.sleep(1)


def _stop(proc: subprocess.Popen) -> None:
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


def test_set_up_commands_after_installing(clone):
    setup = next(b for b in blocks("sh") if "scripts/setup.sh" in b)
    first = next(line for line in setup.splitlines() if line.startswith("bash scripts/setup.sh &&"))
    after_install = first.split(" && ", 1)[1]
    out = subprocess.run(["bash", "-c", after_install], cwd=clone, env=env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "# codebelt" in out.stdout, out.stderr
