"""Replay every Codex compatibility case through codebelt's codex profile and compare with what
the real Codex returned (tests/fixtures/codex/goldens, recorded by scripts/codex/record.py).

Each case runs in a fresh workspace through a real Session(profile="codex") and the OpenAI
adapter in the Responses shape (function_call / custom_tool_call items in,
function_call_output / custom_tool_call_output items out), sandbox off as Codex was run.

Where the command ran on a terminal (`tty: true`), Codex returns the terminal's raw bytes and
codebelt renders them (docs/compat.md): the golden's output is rendered by the same terminal
emulator, session by session, before comparing — a rendering difference never hides a
content difference. A case passes when the rest matches byte for byte, or when it is listed
in tests/compat/codex_differences.json with a reason and codebelt's result is still the one
listed there.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from codebelt import Session
from codebelt.adapters import run_tool_calls
from codebelt.shell.execution.terminal import Terminal
from tests.compat import codex_harness as ch
from tests.compat import harness

CASES = ch.load_cases()
GOLDENS = {group: ch.load_goldens(group) for group in {c.group for c in CASES}}
DIFFERENCES = ch.load_differences()


# A call whose golden says the process ended waits for that end, not for its yield time: how
# fast a process starts on a loaded machine (python3 in under a second) is not what is compared.
# The call returns when the process ends, so on a quiet machine this changes nothing.
ENDED_WAIT_MS = 30_000


def _waits_for_the_end(tool: str, data, golden_call: dict | None):
    out = (golden_call or {}).get("output")
    text = out.get("text", "") if isinstance(out, dict) else ""
    if tool in ("exec_command", "write_stdin") and isinstance(data, dict) and "\nProcess exited with code " in text:
        return {**data, "yield_time_ms": max(data.get("yield_time_ms") or 0, ENDED_WAIT_MS)}
    return data


def run_case(case: ch.Case, tmp_path, golden: dict | None = None) -> dict:
    ws = tmp_path / "ws"
    ch.build_workspace(case.workspace, ws)
    ws_path = str(ws)
    before = harness.snapshot(ws)
    session = Session(ws, profile="codex", mode="bypassPermissions", sandbox="off", load_user_settings=False,
                      audit=False, settings={"lsp": {"autoDetect": False}, "intel": {"diagnostics": False}})
    seen_in = ch.Sessions()
    seen_out = ch.Sessions()
    calls = []
    try:
        for i, (tool, data) in enumerate(case.calls):
            data_sent = ch.substitute(data, ws_path, seen_in)
            if golden is not None and i < len(golden["calls"]):
                data_sent = _waits_for_the_end(tool, data_sent, golden["calls"][i])
            if tool in ch.CUSTOM_TOOLS:
                item = {"type": "custom_tool_call", "call_id": f"call_{i}", "name": tool, "input": data_sent}
            else:
                item = {"type": "function_call", "call_id": f"call_{i}", "name": tool, "arguments": json.dumps(data_sent)}
            out = run_tool_calls(session, [item])[0]
            if isinstance(out["output"], str):
                seen_in.learn(out["output"])
            calls.append({"tool": tool, "input": data, "output": ch.normalise_output(out["output"], ws_path, seen_out)})
    finally:
        session.close()
    files = harness.changes(ws, before)
    return {"calls": calls, "files": {k: ch.normalise_text(v, ws_path, seen_out) if isinstance(v, str) else v
                                      for k, v in files.items()}}


def rendered(golden: dict, case: ch.Case) -> dict:
    """The golden with the raw terminal output of tty sessions rendered as codebelt renders it."""
    terminals: dict[str, Terminal] = {}
    tty_sessions: set[str] = set()
    calls = []
    for call in golden["calls"]:
        call = dict(call)
        out = call.get("output")
        text = out.get("text") if isinstance(out, dict) else None
        data = call["input"] if isinstance(call["input"], dict) else {}
        key = None
        if call["tool"] == "exec_command" and data.get("tty") and text is not None:
            key = f"exec{len(calls)}"
            if "session ID $SESSION" in text:
                key = text.split("session ID ")[1].split("\n")[0]
            tty_sessions.add(key)
        elif call["tool"] == "write_stdin" and str(data.get("session_id")) in tty_sessions and text is not None:
            key = str(data["session_id"])
        if key is not None and "\nOutput:\n" in text:
            head, _, raw = text.partition("\nOutput:\n")
            term = terminals.setdefault(key, Terminal())
            term.feed(raw.encode("utf-8"))
            call["output"] = {"type": "text", "text": f"{head}\nOutput:\n{term.take().text}"}
        calls.append(call)
    return {**golden, "calls": calls}


_TOKENS = re.compile(r"^Original token count: \d+$", re.M)


def _path_free(output):
    # an output that shows the workspace's path has a token count that depends on how long
    # that path is (a temp directory of the run): compared without it
    if isinstance(output, dict) and "$WS" in output.get("text", ""):
        return {**output, "text": _TOKENS.sub("Original token count: $TOKENS", output["text"])}
    return output


def comparable(result: dict) -> dict:
    return {"calls": [{"tool": c["tool"], "output": _path_free(c.get("output"))} for c in result["calls"]],
            "files": result["files"]}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case, tmp_path):
    golden = GOLDENS[case.group].get(case.name)
    if golden is None or any("missing" in c for c in golden["calls"]):
        pytest.skip(f"{case.id}: not recorded (run scripts/codex/record.py --only '{case.id}')")
    ours = comparable(run_case(case, tmp_path, golden))
    theirs = comparable(rendered(golden, case))
    if ours == theirs:
        assert case.id not in DIFFERENCES, f"{case.id} matches Codex now: remove it from codex_differences.json"
        return
    listed = DIFFERENCES.get(case.id)
    assert listed is not None, (f"{case.id} differs from Codex and is not a listed difference:\n"
                                f"codebelt: {json.dumps(ours, ensure_ascii=False)}\n"
                                f"codex:    {json.dumps(theirs, ensure_ascii=False)}")
    assert listed.get("reason"), f"{case.id}: the listed difference needs a reason"
    assert ours == listed["codebelt"], (f"{case.id}: codebelt's result changed from the listed one:\n"
                                        f"now:    {json.dumps(ours, ensure_ascii=False)}\n"
                                        f"listed: {json.dumps(listed['codebelt'], ensure_ascii=False)}")


def test_enough_cases_were_recorded():
    recorded = sum(1 for c in CASES if c.name in GOLDENS[c.group])
    assert recorded >= 80


def test_the_profile_offers_codex_tool_definitions():
    tools = json.loads(ch.TOOLS_FILE.read_text())["tools"]
    session = Session(os.getcwd(), profile="codex", sandbox="off", load_user_settings=False, audit=False)
    try:
        from codebelt.adapters import openai_tools

        ours = {t["name"]: t for t in openai_tools(session, api="responses")}
    finally:
        session.close()
    for theirs in tools:
        mine = dict(ours[theirs["name"]])
        if theirs["type"] == "function":
            assert mine == theirs, theirs["name"]
        else:  # the freeform apply_patch: type, name, description and grammar
            assert mine == {k: theirs[k] for k in ("type", "name", "description", "format")}
