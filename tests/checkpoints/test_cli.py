"""`codebelt checkpoints`, `rewind`, `undo` and `audit` as a person runs them: each a process of
its own, after `codebelt call` processes changed the workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent / "codebelt"


def cli(ws: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), *args, "--root", str(ws)], cwd=ws, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "CODEBELT_AUDIT_DB": str(ws.parent / "audit.db")})


def test_rewind_from_the_command_line(ws):
    (ws / "a.txt").write_text("hello\n")
    r = cli(ws, "call", "Bash", json.dumps({"command": "sed -i s/hello/bye/ a.txt && mkdir d && echo x > d/x"}),
            "--mode", "bypassPermissions")
    assert r.returncode == 0, r.stderr
    listed = json.loads(cli(ws, "checkpoints", "--json").stdout)
    assert [(c["tool"], sorted(c["paths"])) for c in listed] == [("Bash", ["a.txt", "d", "d/x"])]
    cid = str(listed[0]["id"])

    preview = cli(ws, "rewind", cid, "--dry-run")
    assert preview.returncode == 0
    assert "-bye\n+hello" in preview.stdout and "Would restore 3 path(s)" in preview.stdout
    assert (ws / "a.txt").read_text() == "bye\n"

    done = cli(ws, "rewind", cid)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (ws / "a.txt").read_text() == "hello\n" and not (ws / "d").exists()

    redo = cli(ws, "undo")
    assert redo.returncode == 0
    assert (ws / "a.txt").read_text() == "bye\n" and (ws / "d" / "x").exists()

    audit = cli(ws, "audit", "--tail", "5")
    assert f"checkpoint {cid}" in audit.stdout


def test_rewind_that_leaves_a_path_exits_1(ws):
    (ws / "a.txt").write_text("one\n")
    cli(ws, "call", "Bash", json.dumps({"command": "echo two > a.txt"}), "--mode", "bypassPermissions")
    cid = str(json.loads(cli(ws, "checkpoints", "--json").stdout)[0]["id"])
    (ws / "a.txt").write_text("the person's\n")
    r = cli(ws, "rewind", cid)
    assert r.returncode == 1 and "a.txt: changed since checkpoint" in r.stdout
    assert (ws / "a.txt").read_text() == "the person's\n"
    assert cli(ws, "rewind", cid, "--force").returncode == 0
    assert (ws / "a.txt").read_text() == "one\n"


def test_unknown_checkpoint_is_a_usage_error(ws):
    r = cli(ws, "rewind", "12345")
    assert r.returncode == 2 and "No checkpoint 12345" in r.stderr
