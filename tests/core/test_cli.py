"""The command line: exit codes and output for call, tools and audit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "codebelt.cli"]


def run(args, cwd, stdin=None, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run(CLI + args, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60, env=env)


@pytest.fixture
def env(tmp_path):
    return {"CODEBELT_AUDIT_DB": str(tmp_path / "audit.db"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}


# (argv, stdin, exit code, text expected in stdout+stderr)
CASES = [
    (["call", "Nope", "{}"], None, 2, "unknown tool 'Nope'"),
    (["call", "Nope", "{bad"], None, 2, "not valid JSON"),
    (["call", "Nope", "[1]"], None, 2, "must be a JSON object"),
    (["call"], None, 2, "usage"),
    (["frobnicate"], None, 2, "invalid choice"),
    (["call", "Nope", "-"], "{\"x\": 1}", 2, "unknown tool"),
    (["call", "Nope", "{}", "--mode", "yolo"], None, 2, "invalid choice"),
    (["tools", "--root", "/definitely/missing"], None, 2, "not a directory"),
]


@pytest.mark.parametrize("argv,stdin,code,text", CASES)
def test_cli_usage_errors(ws, env, argv, stdin, code, text):
    p = run(argv, ws, stdin, env)
    assert p.returncode == code, p.stderr
    assert text in p.stdout + p.stderr
    assert "Traceback" not in p.stderr


def test_tools_json_lists_every_registered_tool(ws, env):
    p = run(["tools", "--format", "json"], ws, env_extra=env)
    assert p.returncode == 0, p.stderr
    specs = json.loads(p.stdout)
    from codebelt.tools import registry

    assert sorted(s["name"] for s in specs) == sorted(t.name for t in registry())
    for s in specs:
        assert s["input_schema"]["type"] == "object" and s["description"]


def test_bad_settings_file_is_a_usage_error(ws, env):
    (ws / ".codebelt").mkdir()
    (ws / ".codebelt/settings.json").write_text("{oops")
    p = run(["tools"], ws, env_extra=env)
    assert p.returncode == 2 and "not valid JSON" in p.stderr
