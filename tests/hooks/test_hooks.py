"""Claude Code's hooks protocol, run for real: bash and Python hook scripts around every tool call,
every event, exit codes and JSON fields, matchers, `if`, trust, parallel runs, bad input."""

from __future__ import annotations

import http.server
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.audit import hook_runs
from codebelt.errors import SettingsError

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"
PY = sys.executable


def hook(command: str, matcher: str | None = None, **extra) -> dict:
    group = {"hooks": [{"type": "command", "command": command, **extra}]}
    if matcher is not None:
        group["matcher"] = matcher
    return group


@pytest.fixture
def log(tmp_path, monkeypatch):
    path = tmp_path / "hooks.log"
    monkeypatch.setenv("HOOK_LOG", str(path))
    return path


def runs(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


def make(ws, make_session, hooks: dict, **kw) -> Session:
    return make_session(settings={"hooks": hooks, **kw.pop("settings", {})}, **kw)


def test_every_event_gets_claude_codes_fields(ws, make_session, log):
    rec = f"bash {FIX}/record.sh"
    events = ["SessionStart", "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest",
              "Notification", "CwdChanged", "PostToolBatch", "SessionEnd"]
    s = make(ws, make_session, {e: [hook(rec)] for e in events}, approver=lambda r: True)
    (ws / "a.txt").write_text("x\n")
    (ws / "sub").mkdir()
    s.call("Read", {"file_path": "a.txt"})
    s.call("Read", {"file_path": "missing.txt"})
    s.call("Bash", {"command": "touch b.txt"})  # asks: PermissionRequest
    s.call("Bash", {"command": "cd sub"})  # CwdChanged
    s.call("Bash", {"command": "sleep 0.2", "run_in_background": True})
    import asyncio
    asyncio.run(s.call_many([("Glob", {"pattern": "*.txt"}), ("Read", {"file_path": "a.txt"})]))
    time.sleep(0.5)
    s.call("Read", {"file_path": "a.txt"})
    s.close()
    seen = runs(log)
    by_event = {r["hook_event_name"]: r for r in seen}
    assert set(events) <= set(by_event), sorted(by_event)
    for r in seen:
        assert r["session_id"] == s.id and r["transcript_path"] is None and r["cwd"] == str(s.workspace.root)
        assert r["permission_mode"] == "default"
    pre = by_event["PreToolUse"]
    assert pre["tool_name"] and "tool_input" in pre and pre["tool_use_id"].startswith("toolu_")
    post = [r for r in seen if r["hook_event_name"] == "PostToolUse" and r["tool_name"] == "Read"][0]
    assert post["tool_response"]["file"]["filePath"] == "a.txt"
    assert by_event["PostToolUseFailure"]["tool_input"] == {"file_path": "missing.txt"}
    assert by_event["CwdChanged"]["new_cwd"].endswith("/sub")
    assert by_event["Notification"]["notification_type"] == "task_end"
    assert len(by_event["PostToolBatch"]["tool_calls"]) == 2


def test_exit_2_blocks_a_call_with_stderr_as_the_reason(ws, make_session):
    s = make(ws, make_session, {"PreToolUse": [hook(f"{PY} {FIX}/deny_rm.py", "Bash")]}, mode="bypassPermissions")
    (ws / "keep").mkdir()
    r = s.call("Bash", {"command": "rm -rf keep"})
    assert r.is_error and "rm -rf is blocked by policy" in r.text and (ws / "keep").exists()
    assert not s.call("Bash", {"command": "echo fine"}).is_error


@pytest.mark.parametrize("decisions,command,expected", [
    (["deny"], "echo hi", "deny"),
    (["allow"], "touch x", "allow"),          # answers the question the call would ask
    (["ask"], "echo hi", "deny"),              # forced to ask; no approver here
    (["defer"], "echo hi", "allow"),           # the normal decision
    (["allow", "deny"], "echo hi", "deny"),   # deny > defer > ask > allow
    (["allow", "ask"], "touch x", "deny"),
    (["defer", "allow"], "touch x", "deny"),   # defer wins over allow: the normal decision (ask, nobody to ask)
])
def test_permission_decisions_and_their_precedence(ws, make_session, decisions, command, expected):
    hooks = {"PreToolUse": [hook(f"{PY} {FIX}/decide.py {d}") for d in decisions]}
    r = make(ws, make_session, hooks).call("Bash", {"command": command})
    assert r.is_error == (expected == "deny"), r.text


def test_a_hook_never_widens_access_past_a_deny(ws, make_session):
    s = make(ws, make_session, {"PreToolUse": [hook(f"{PY} {FIX}/decide.py allow")]},
             settings={"permissions": {"deny": ["Bash(curl *)", "Read(./secret.txt)"]}})
    (ws / "secret.txt").write_text("s\n")
    assert s.call("Bash", {"command": "curl http://x"}).is_error
    assert s.call("Read", {"file_path": "secret.txt"}).is_error
    assert s.call("Write", {"file_path": "/etc/codebelt-hook-test", "content": "x"}).is_error  # outside


def test_updated_input_is_validated_and_decided_again(ws, make_session):
    (ws / "a.txt").write_text("a\n")
    (ws / "secret.txt").write_text("s\n")
    good = json.dumps({"file_path": "a.txt"})
    s = make(ws, make_session, {"PreToolUse": [hook(f"{PY} {FIX}/rewrite.py '{good}'", "Read")]})
    r = s.call("Read", {"file_path": "other.txt"})
    assert not r.is_error and "a" in r.text  # the rewritten input ran
    bad = json.dumps({"file_path": 5, "bogus": 1})
    r = make(ws, make_session, {"PreToolUse": [hook(f"{PY} {FIX}/rewrite.py '{bad}'", "Read")]}).call(
        "Read", {"file_path": "a.txt"})
    assert r.is_error and "updatedInput that is not valid" in r.text
    secret = json.dumps({"file_path": "secret.txt"})
    r = make(ws, make_session, {"PreToolUse": [hook(f"{PY} {FIX}/rewrite.py '{secret}'", "Read")]},
             settings={"permissions": {"deny": ["Read(./secret.txt)"]}}).call("Read", {"file_path": "a.txt"})
    assert r.is_error and "Read(./secret.txt)" in r.text
    outside = json.dumps({"file_path": "/etc/passwd"})
    r = make(ws, make_session, {"PreToolUse": [hook(f"{PY} {FIX}/rewrite.py '{outside}'", "Read")]}).call(
        "Read", {"file_path": "a.txt"})
    assert r.is_error and "outside the workspace" in r.text


@pytest.mark.parametrize("stdout,check", [
    ('{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "remember the tests"}}',
     lambda r: "remember the tests" in r.text),
    ('{"decision": "block", "reason": "formatting failed"}', lambda r: "Hook feedback:\nformatting failed" in r.text),
    ('{"systemMessage": "formatted 1 file"}', lambda r: r.data["hookSystemMessages"] == ["formatted 1 file"]),
    ('{"continue": false, "stopReason": "enough"}', lambda r: r.data["hookStop"] == "enough"),
    ('{not json', lambda r: "invalid JSON" in r.data["hookErrors"][0] and not r.is_error),
    ("plain words", lambda r: not r.is_error and "plain words" not in r.text),
])
def test_post_tool_use_json(ws, make_session, stdout, check):
    (ws / "a.txt").write_text("a\n")
    cmd = "cat > /dev/null; printf '%s' " + json.dumps(stdout).replace("\\\"", '"').replace("'", "'\\''").join("''")
    cmd = f"cat > /dev/null; printf %s {json.dumps(stdout)}"
    r = make(ws, make_session, {"PostToolUse": [hook(cmd)]}).call("Read", {"file_path": "a.txt"})
    assert check(r), r.text + json.dumps(r.data)


def test_post_tool_use_exit_2_is_feedback(ws, make_session):
    (ws / "a.txt").write_text("a\n")
    r = make(ws, make_session, {"PostToolUse": [hook("cat >/dev/null; echo 'lint: 3 errors' >&2; exit 2")]}).call(
        "Read", {"file_path": "a.txt"})
    assert not r.is_error and "Hook feedback:\nlint: 3 errors" in r.text


def test_additional_context_is_capped(ws, make_session):
    (ws / "a.txt").write_text("a\n")
    big = "x" * 50_000
    out = json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": big}})
    script = ws.parent / "big.py"
    script.write_text(f"import sys; sys.stdin.read(); print({out!r})")
    r = make(ws, make_session, {"PostToolUse": [hook(f"{PY} {script}")]}).call("Read", {"file_path": "a.txt"})
    assert "cut at 10,000 characters" in r.text and len(r.text) < 12_000


@pytest.mark.parametrize("command,error", [
    ("cat >/dev/null; exit 1", "exited with 1"),
    ("cat >/dev/null; kill -9 $$", "signal 9"),
    ("sleep 30 & sleep 30", "timed out"),
    ("cat >/dev/null; head -c 5000000 /dev/zero | tr '\\0' x", None),
])
def test_bad_hooks_never_fail_the_call(ws, make_session, command, error):
    (ws / "a.txt").write_text("a\n")
    started = time.monotonic()
    r = make(ws, make_session, {"PreToolUse": [hook(command, timeout=1)]}).call("Read", {"file_path": "a.txt"})
    assert not r.is_error and time.monotonic() - started < 15
    if error:
        assert any(error in e for e in r.data.get("hookErrors", [])), r.data


def test_a_hung_hook_is_killed_with_its_group(ws, make_session, tmp_path):
    marker = tmp_path / "child.pid"
    cmd = f"sleep 60 & echo $! > {marker}; wait"
    (ws / "a.txt").write_text("a\n")
    make(ws, make_session, {"PreToolUse": [hook(cmd, timeout=1)]}).call("Read", {"file_path": "a.txt"})
    pid = int(marker.read_text())
    time.sleep(0.3)
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


# How a running call ends early: its caller cancels it, or the session closes under it.
@pytest.mark.parametrize("event,tool", [("PreToolUse", "Read"), ("PostToolUse", "Read")])
@pytest.mark.parametrize("ending", ["cancel", "close"])
def test_a_running_hook_is_killed_with_its_group_when_the_call_ends(ws, make_session, tmp_path, event, tool, ending):
    marker = tmp_path / "child.pid"
    (ws / "a.txt").write_text("a\n")
    session = make(ws, make_session, {event: [hook(f"sleep 600 & echo $! > {marker}; wait", timeout=600)]})
    cancel = threading.Event()
    results: list = []
    call = threading.Thread(target=lambda: results.append(
        session.call(tool, {"file_path": "a.txt"}, cancel_event=cancel)))
    call.start()
    deadline = time.monotonic() + 30
    while not (marker.exists() and marker.read_text().strip()):
        assert time.monotonic() < deadline, "the hook did not start"
        time.sleep(0.02)
    pid = int(marker.read_text())
    if ending == "cancel":
        cancel.set()
    else:
        session.close()
    call.join(30)  # generous: the hook's own timeout is 600 s
    assert not call.is_alive()
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)
    if event == "PreToolUse":  # the tool never ran
        assert results[0].is_error and "cancelled" in results[0].text, results[0].text


@pytest.mark.parametrize("matcher,tool,fires", [
    (None, "Read", True), ("", "Read", True), ("*", "Glob", True), ("Read", "Read", True),
    ("Read", "Glob", False), ("Edit|Read", "Read", True), ("Edit|Write", "Read", False),
    ("Re.*", "Read", True), ("^G", "Read", False), ("Read", "ReadX", False),
])
def test_matchers(ws, make_session, log, matcher, tool, fires):
    (ws / "a.txt").write_text("a\n")
    s = make(ws, make_session, {"PreToolUse": [hook(f"bash {FIX}/record.sh", matcher)]})
    s.call(tool, {"file_path": "a.txt"} if tool.startswith("Read") else {"pattern": "*"})
    assert bool(runs(log)) == fires


@pytest.mark.parametrize("rule,command,fires", [
    ("Bash(git *)", "git status", True), ("Bash(git *)", "ls && git status", True),
    ("Bash(git *)", "ls", False), ("Bash(git *)", "for i in 1; do ls; done", True),  # unparsable: fail safe
    ("Edit(src/**)", None, True), ("Edit(docs/**)", None, False),
])
def test_if_conditions(ws, make_session, log, rule, command, fires):
    (ws / "src").mkdir()
    s = make(ws, make_session, {"PreToolUse": [{"hooks": [{"type": "command", "command": f"bash {FIX}/record.sh",
                                                           "if": rule}]}]}, mode="bypassPermissions")
    if command is None:
        s.call("Write", {"file_path": "src/new.py", "content": "x\n"})
    else:
        s.call("Bash", {"command": command})
    assert bool(runs(log)) == fires


def test_parallel_and_identical_commands_once(ws, make_session, tmp_path):
    stamp = tmp_path / "stamps"
    slow = f"cat >/dev/null; date +%s.%N >> {stamp}; sleep 1; date +%s.%N >> {stamp}"
    other = slow + " # second"
    (ws / "a.txt").write_text("a\n")
    s = make(ws, make_session, {"PreToolUse": [hook(slow), hook(slow), hook(other)]})
    s.call("Read", {"file_path": "a.txt"})
    times = [float(x) for x in stamp.read_text().split()]
    assert len(times) == 4  # the duplicate ran once
    starts, ends = sorted(times)[:2], sorted(times)[2:]
    assert max(starts) < min(ends)  # the two distinct hooks overlapped


def test_workspace_hooks_need_trust(ws, make_session, log, tmp_path, monkeypatch):
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [hook(f"bash {FIX}/record.sh")]}}))
    (ws / "a.txt").write_text("a\n")
    s = make_session()
    s.call("Read", {"file_path": "a.txt"})
    assert runs(log) == [] and any("not trusted" in w and "hooks (.claude/settings.json)" in w
                                   for w in s.settings.warnings)
    make_session(trust_workspace=True).call("Read", {"file_path": "a.txt"})
    assert len(runs(log)) == 1
    make_session(trust_workspace_hooks=True).call("Read", {"file_path": "a.txt"})  # the older name
    assert len(runs(log)) == 2
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    (tmp_path / "cfg" / "codebelt").mkdir(parents=True)
    (tmp_path / "cfg" / "codebelt" / "settings.json").write_text(json.dumps({"trustedWorkspaces": [str(ws)]}))
    make_session(load_user_settings=True).call("Read", {"file_path": "a.txt"})
    assert len(runs(log)) == 3


def test_a_workspace_cannot_switch_off_the_users_hooks(ws, make_session, log):
    (ws / ".codebelt").mkdir()
    (ws / ".codebelt" / "settings.json").write_text(json.dumps({"disableAllHooks": True}))
    (ws / "a.txt").write_text("a\n")
    s = make(ws, make_session, {"PreToolUse": [hook(f"bash {FIX}/record.sh")]})
    s.call("Read", {"file_path": "a.txt"})
    assert len(runs(log)) == 1 and any("disableAllHooks" in w for w in s.settings.warnings)
    off = make(ws, make_session, {"PreToolUse": [hook(f"bash {FIX}/record.sh")]}, settings={"disableAllHooks": True})
    off.call("Read", {"file_path": "a.txt"})
    assert len(runs(log)) == 1


def test_python_hooks_and_audit(ws, make_session, audit_db):
    (ws / "a.txt").write_text("a\n")
    s = make_session()
    seen = []

    def policy(payload):
        seen.append(payload["tool_name"])
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "no reading today"}}

    s.add_hook("PreToolUse", policy, matcher="Read")
    r = s.call("Read", {"file_path": "a.txt"})
    assert r.is_error and "no reading today" in r.text and seen == ["Read"]
    s.close()
    rows = hook_runs(audit_db, s.id)
    assert rows and rows[0]["event"] == "PreToolUse" and rows[0]["hook"] == "policy" and rows[0]["decision"] == "deny"


def test_http_hooks_loopback_or_https_only(ws, make_session):
    got = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            body = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                       "permissionDecisionReason": "http says no"}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (ws / "a.txt").write_text("a\n")
        url = f"http://127.0.0.1:{server.server_port}/hook"
        r = make(ws, make_session, {"PreToolUse": [{"hooks": [{"type": "http", "url": url}]}]}).call(
            "Read", {"file_path": "a.txt"})
        assert r.is_error and "http says no" in r.text and got[0]["tool_name"] == "Read"
        far = make(ws, make_session, {"PreToolUse": [{"hooks": [{"type": "http", "url": "http://example.com/h"}]}]}).call(
            "Read", {"file_path": "a.txt"})
        assert not far.is_error and "loopback" in far.data["hookErrors"][0]
    finally:
        server.shutdown()


@pytest.mark.parametrize("hooks,message", [
    ({"PreToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "x"}]}]}, "hooks.PreToolUse[0].matcher"),
    ({"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}, "hooks.PreToolUse[0].hooks[0].timeout"),
    ({"PreToolUse": [{"hooks": [{"type": "command"}]}]}, "needs a non-empty `command`"),
    ({"PreToolUse": [{"hooks": [{"type": "shell", "command": "x"}]}]}, "hooks.PreToolUse[0].hooks[0].type"),
    ({"BeforeEverything": []}, "hooks.BeforeEverything"),
    ({"PreToolUse": {"matcher": "x"}}, "hooks.PreToolUse"),
])
def test_malformed_hooks_blocks_name_file_and_key(ws, hooks, message):
    (ws / ".codebelt").mkdir()
    (ws / ".codebelt" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    with pytest.raises(SettingsError) as e:
        Session(ws, audit=False, load_user_settings=False, trust_workspace=True)
    assert ".codebelt/settings.json" in str(e.value) and message in str(e.value)


def test_no_hook_configured_costs_nothing_visible(ws, make_session):
    s = make_session()
    assert not any(s._hooks.has(e) for e in ("PreToolUse", "PostToolUse", "SessionStart"))


def test_codebelt_config_shows_hooks_and_untrusted_ones(ws, capsys):
    from codebelt.cli import main

    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [hook("echo hi", "Bash")]}}))
    assert main(["config", "--root", str(ws), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["hooks"][0]["runs"] is False and any("not trusted" in w for w in report["warnings"])
    assert report["hooks"][0]["command"] == "echo hi"
    for flag in ("--trust-workspace", "--trust-workspace-hooks"):
        assert main(["config", "--root", str(ws), "--json", flag]) == 0
        assert json.loads(capsys.readouterr().out)["hooks"][0]["runs"] is True
