"""The Session pipeline: validation, coercion, errors, budget, batching, cancellation, audit."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.errors import SettingsError

from .tools_for_tests import ALL, Sleep


@pytest.fixture
def s(make_session):
    return make_session(tools=ALL)


# (tool, input, is_error, substring of the text)
CASES = [
    ("Echo", {"text": "hi"}, False, "hi"),
    ("Echo", {"text": "ab", "times": "3"}, False, "ababab"),          # "3" → 3
    ("Echo", {"text": "ab", "times": "2.0"}, False, "abab"),          # "2.0" → 2
    ("Echo", {"text": "ab", "times": 2.0}, False, "abab"),            # 2.0 → 2
    ("Echo", {"text": "x", "loud": "true"}, False, "X"),               # "true" → True
    ("Echo", {"text": "x", "loud": "false"}, False, "x"),
    ("Echo", {"text": "x", "limit": None}, False, "x"),                # null for optional
    ("Echo", {"text": "x", "tags": '["a","b"]'}, False, "x"),          # JSON text for a list
    ("Echo", {}, True, "Echo failed due to the following issue:\nThe required parameter `text` is missing"),
    ("Echo", {"text": "x", "bogus": 1}, True, "An unexpected parameter `bogus` was provided"),
    ("Echo", {"text": "x", "times": "many"}, True, "`times`"),
    ("Echo", {"text": "x", "loud": "perhaps"}, True, "`loud`"),
    ("Echo", ["not", "a", "dict"], True, "must be a JSON object"),
    ("Nope", {}, True, "<tool_use_error>Error: No such tool available: Nope</tool_use_error>"),
    ("Fail", {"how": "tool_error"}, True, "the thing failed; try the other thing"),
    ("Fail", {"how": "crash"}, True, "internal error: KeyError"),
    ("Fail", {"how": "nope"}, True, '"how"'),
]


@pytest.mark.parametrize("tool,inp,is_error,expected", CASES)
def test_call_cases(s, tool, inp, is_error, expected):
    r = s.call(tool, inp)
    assert r.is_error is is_error, r.text
    assert expected in r.text
    assert "Traceback" not in r.text


def test_coerced_list_reaches_the_tool(s):
    r = s.call("Echo", {"text": "x", "tags": '["a","b"]'})
    assert r.data["tags"] == ["a", "b"]


def test_tool_error_data_is_kept(s):
    r = s.call("Fail", {"how": "tool_error"})
    assert r.data["hint"] == "other"


def test_large_result_is_evicted_with_head_and_tail(s):
    r = s.call("Fail", {"how": "huge"})
    assert not r.is_error
    assert "Tool result too large" in r.text and "Read it with Read using offset and limit" in r.text
    assert "line 0" in r.text and "line 4999" in r.text and "lines omitted" in r.text
    saved = r.data["outputPath"]
    assert r.data["truncated"] is True
    assert open(saved).read().splitlines()[2500] == "line 2500"
    # The results directory is readable without rules, even though it is outside the workspace.
    assert s.engine.decide_path(__import__("codebelt.permissions.requests", fromlist=["x"]).PathRequest("read", __import__("pathlib").Path(saved))).behavior == "allow"


def test_results_kept_under_a_results_root_outlive_the_session(tmp_path):
    from codebelt import Session
    from codebelt.permissions.requests import PathRequest

    from .tools_for_tests import Fail

    ws, kept = tmp_path / "ws", tmp_path / "kept"
    ws.mkdir()
    with Session(ws, audit=False, load_user_settings=False, tools=[Fail], results_root=kept) as first:
        saved = Path(first.call("Fail", {"how": "huge"}).data["outputPath"])
    assert saved.is_file() and kept in saved.parents  # still there after close
    with Session(ws, audit=False, load_user_settings=False, results_root=kept) as second:
        assert second.engine.decide_path(PathRequest("read", saved)).behavior == "allow"
        r = second.call("Read", {"file_path": str(saved), "offset": 2501, "limit": 1})
        assert not r.is_error and "line 2500" in r.text, r.text
    with Session(ws, audit=False, load_user_settings=False) as other:  # not its results: asks
        assert other.engine.decide_path(PathRequest("read", saved)).behavior == "ask"


def test_tool_specs_are_self_contained(s):
    specs = {t["name"]: t for t in s.tool_specs()}
    echo = specs["Echo"]
    assert echo["read_only"] and echo["concurrency_safe"]
    assert echo["input_schema"]["type"] == "object"
    assert "text" in echo["input_schema"]["required"]
    assert "$defs" not in str(echo["input_schema"])


async def test_call_many_runs_safe_calls_in_parallel_and_keeps_order(s):
    Sleep.max_active = 0
    calls = [("Sleep", {"seconds": 0.3}) for _ in range(4)] + [("Echo", {"text": "end"})]
    results = await s.call_many(calls)
    assert [r.text for r in results] == ["slept 0.3"] * 4 + ["end"]
    assert Sleep.max_active >= 2


async def test_call_many_runs_unsafe_calls_one_at_a_time(s):
    Sleep.max_active = 0
    calls = [("Sleep", {"seconds": 0.1, "safe": False}) for _ in range(3)]
    results = await s.call_many(calls)
    assert all(r.text == "slept 0.1" for r in results)
    assert Sleep.max_active == 1


async def test_acall_cancellation_reaches_the_tool(s):
    task = asyncio.create_task(s.acall("Sleep", {"seconds": 30}))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if Sleep.active == 0:
            break
        await asyncio.sleep(0.02)
    assert Sleep.active == 0


def test_every_call_is_audited(make_session, audit_db):
    s = make_session(tools=ALL)
    s.call("Echo", {"text": "a" * 10_000})
    s.call("Fail", {"how": "tool_error"})
    s.call("Nope", {})
    s.close()
    rows = sqlite3.connect(audit_db).execute(
        "SELECT tool, decision, decided_by, is_error, length(input), result_chars FROM calls ORDER BY id"
    ).fetchall()
    assert [r[0] for r in rows] == ["Echo", "Fail", "Nope"]
    assert rows[0][1] == "allow" and rows[0][3] == 0
    assert rows[0][4] < 2_000  # long values are cut
    assert rows[1][3] == 1
    mode = sqlite3.connect(audit_db).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_audit_failure_never_fails_a_call(make_session, tmp_path):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    s = make_session(tools=ALL, audit=blocker / "audit.db")  # parent is a file: cannot open
    r = s.call("Echo", {"text": "still fine"})
    assert not r.is_error and r.text == "still fine"
    s._audit.flush()
    assert s._audit.failures >= 1


def test_session_rejects_a_missing_root(tmp_path):
    from codebelt import PathError

    with pytest.raises(PathError):
        Session(root=tmp_path / "missing", audit=False)


def test_session_rejects_an_unknown_mode(ws):
    with pytest.raises(SettingsError, match="unknown mode"):
        Session(root=ws, mode="yolo", audit=False, load_user_settings=False)


def test_close_removes_session_temp_files(make_session):
    s = make_session(tools=ALL)
    tmp = s.temp_dir
    assert tmp.is_dir()
    s.close()
    assert not tmp.exists()


def test_a_property_named_title_survives_schema_cleanup():
    from pydantic import BaseModel

    from codebelt._schema import clean_schema

    class Inner(BaseModel):
        title: str

    class Outer(BaseModel):
        title: str
        inner: Inner

    schema = clean_schema(Outer.model_json_schema())
    assert "title" in schema["properties"] and "title" in schema["properties"]["inner"]["properties"]
    assert "title" not in schema and "title" not in schema["properties"]["title"]


def test_approver_refusal_reason_reaches_the_model(make_session):
    from codebelt.permissions.approvers import ApprovalRefused

    def approver(req):
        raise ApprovalRefused("the client cannot show approval prompts")

    s = make_session(tools=ALL, approver=approver)
    r = s.call("Touch", {"file_path": "x"})
    assert r.is_error and "the client cannot show approval prompts" in r.text and "approver failed" not in r.text


async def test_acall_carries_the_callers_context_variables(make_session):
    import contextvars

    from codebelt.tool import Tool, ToolInput, ToolResult

    var = contextvars.ContextVar("who", default="nobody")

    class Who(Tool):
        name = "Who"
        description = "Report a context variable."
        Input = ToolInput

        def run(self, params, ctx):
            return ToolResult(text=var.get())

    s = make_session(tools=[Who])
    var.set("the caller")
    assert (await s.acall("Who", {})).text == "the caller"
