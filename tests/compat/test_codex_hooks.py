"""Hooks in the codex profile: hook scripts are written for Claude Code's tools, so Codex's tools
show themselves to hooks as Codex does — exec_command as `Bash` with {"command": …}, apply_patch
under its own name with the patch as `command`, selected by an `Edit` or `Write` matcher too —
and as codebelt adds where Codex runs no hook: write_stdin as `TaskInput` ({"task_id", "input"}),
view_image selected by `Read` with the path in `file_path`. Real hook scripts, run as commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"
PATCH = "*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch"


def group(command: str, matcher: str | None = None, **extra) -> dict:
    out: dict = {"hooks": [{"type": "command", "command": command, **extra}]}
    if matcher is not None:
        out["matcher"] = matcher
    return out


@pytest.fixture
def log(tmp_path, monkeypatch):
    path = tmp_path / "hooks.log"
    monkeypatch.setenv("HOOK_LOG", str(path))
    return path


def runs(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


def codex(make_session, hooks: dict):
    return make_session(profile="codex", sandbox="off", mode="bypassPermissions", settings={"hooks": hooks})


RECORD = f"bash {FIX}/record.sh"


def test_a_bash_policy_hook_blocks_exec_command(make_session, ws):
    (ws / "keep").mkdir()
    s = codex(make_session, {"PreToolUse": [group(f"{sys.executable} {FIX}/deny_rm.py", "Bash")]})
    r = s.call("exec_command", {"cmd": "rm -rf keep"})
    assert r.is_error and "rm -rf is blocked by policy" in r.text, r.text
    assert (ws / "keep").is_dir()
    assert "Process exited with code 0" in s.call("exec_command", {"cmd": "echo fine"}).text


def test_exec_command_is_shown_as_bash(make_session, log):
    s = codex(make_session, {"PreToolUse": [group(RECORD, "Bash")], "PostToolUse": [group(RECORD, "Bash")]})
    s.call("exec_command", {"cmd": "echo hi", "workdir": ".", "yield_time_ms": 5000})
    pre, post = runs(log)
    assert pre["tool_name"] == post["tool_name"] == "Bash"
    assert pre["tool_input"] == post["tool_input"] == {"command": "echo hi"}
    assert "echo hi" in json.dumps(post["tool_response"]) or post["tool_response"]


@pytest.mark.parametrize("matcher,tool,args,fires", [
    ("exec_command", "exec_command", {"cmd": "true"}, True),
    ("Bash", "update_plan", {"plan": [{"step": "s", "status": "pending"}]}, False),
    ("Edit", "apply_patch", {"input": PATCH.format(path="e.txt")}, True),
    ("Write", "apply_patch", {"input": PATCH.format(path="w.txt")}, True),
    ("ApplyPatch", "apply_patch", {"input": PATCH.format(path="a.txt")}, True),
    ("apply_patch", "apply_patch", {"input": PATCH.format(path="p.txt")}, True),
    ("Bash", "apply_patch", {"input": PATCH.format(path="b.txt")}, False),
    ("Edit|Write", "exec_command", {"cmd": "true"}, False),
    ("Read", "view_image", {"path": "missing.png"}, True),
    ("update_plan", "update_plan", {"plan": [{"step": "s", "status": "pending"}]}, True),
])
def test_matchers_name_the_claude_code_tool_or_the_codex_one(make_session, log, matcher, tool, args, fires):
    s = codex(make_session, {"PreToolUse": [group(RECORD, matcher)]})
    s.call(tool, args)
    assert bool(runs(log)) == fires


@pytest.mark.parametrize("rule,tool,args,fires", [
    ("Bash(git *)", "exec_command", {"cmd": "git status"}, True),
    ("Bash(git *)", "exec_command", {"cmd": "ls && git log -1"}, True),
    ("Bash(git *)", "exec_command", {"cmd": "ls"}, False),
    ("Edit(src/**)", "apply_patch", {"input": PATCH.format(path="src/new.py")}, True),
    ("Edit(src/**)", "apply_patch", {"input": PATCH.format(path="docs/new.md")}, False),
    ("Edit(src/**)", "apply_patch", {"input": "*** Begin Patch\n*** Frobnicate: x\n*** End Patch"}, True),  # unparsable
    ("Read(*.png)", "view_image", {"path": "x.png"}, True),
    ("Read(*.png)", "view_image", {"path": "x.jpg"}, False),
])
def test_if_conditions_judge_codex_calls(make_session, ws, log, rule, tool, args, fires):
    (ws / "src").mkdir()
    s = codex(make_session, {"PreToolUse": [group(RECORD, **{"if": rule})]})
    s.call(tool, args)
    assert bool(runs(log)) == fires


def test_apply_patch_is_shown_with_its_patch_as_command(make_session, log):
    s = codex(make_session, {"PreToolUse": [group(RECORD, "Edit")]})
    s.call("apply_patch", {"input": PATCH.format(path="n.txt")})
    (seen,) = runs(log)
    assert seen["tool_name"] == "apply_patch" and seen["tool_input"] == {"command": PATCH.format(path="n.txt")}


def test_a_rewrite_in_bash_shape_changes_the_exec_command(make_session, ws):
    rewrite = f"{sys.executable} {FIX}/rewrite.py '{json.dumps({'command': 'echo rewritten > out.txt'})}'"
    s = codex(make_session, {"PreToolUse": [group(rewrite, "Bash")]})
    r = s.call("exec_command", {"cmd": "echo original > out.txt", "yield_time_ms": 5000})
    assert "Process exited with code 0" in r.text, r.text
    assert (ws / "out.txt").read_text() == "rewritten\n"


def test_a_rewrite_of_a_patch_applies_the_hooks_patch(make_session, ws):
    rewrite = f"{sys.executable} {FIX}/rewrite.py '{json.dumps({'command': PATCH.format(path='hooked.txt')})}'"
    s = codex(make_session, {"PreToolUse": [group(rewrite, "Edit")]})
    s.call("apply_patch", {"input": PATCH.format(path="model.txt")})
    assert (ws / "hooked.txt").exists() and not (ws / "model.txt").exists()


def test_write_stdin_is_shown_as_task_input(make_session, ws, log, tmp_path):
    deny = tmp_path / "deny_input.py"
    deny.write_text("import json, sys\nd = json.load(sys.stdin)\n"
                    "if 'secret' in d['tool_input'].get('input', ''):\n"
                    "    print('no secrets into programs', file=sys.stderr); sys.exit(2)\n")
    s = codex(make_session, {"PreToolUse": [group(f"{sys.executable} {deny}", "TaskInput"), group(RECORD, "write_stdin")]})
    started = s.call("exec_command", {"cmd": "cat", "tty": True, "yield_time_ms": 300})
    sid = started.data["session_id"]
    assert sid is not None, started.text
    blocked = s.call("write_stdin", {"session_id": sid, "chars": "my secret\n"})
    assert blocked.is_error and "no secrets into programs" in blocked.text
    ok = s.call("write_stdin", {"session_id": sid, "chars": "hello\n", "yield_time_ms": 2000})
    assert "hello" in ok.text, ok.text
    seen = [r for r in runs(log) if r["hook_event_name"] == "PreToolUse"]
    assert [r["tool_name"] for r in seen] == ["TaskInput", "TaskInput"]
    assert seen[-1]["tool_input"] == {"task_id": str(sid), "input": "hello\n"}
    s.call("write_stdin", {"session_id": sid, "chars": "\u0004"})
