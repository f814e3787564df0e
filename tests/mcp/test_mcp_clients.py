"""codebelt serve against the SDK's own client: stdio and streamable HTTP, both protocol eras."""

from __future__ import annotations

import random

import anyio
import mcp_types as types
import pytest

from codebelt import Session

from .helpers import COMBOS, CONCURRENT_FILES, connect, is_png, processes_with

pytestmark = pytest.mark.timeout(120)


def expected_tools(project) -> dict:
    with Session(project.root, audit=False, load_user_settings=False) as s:
        return {name: tool for name, tool in s.tools.items()}


@pytest.mark.parametrize("transport,era", COMBOS)
async def test_lists_every_tool_with_schemas_and_annotations(transport, era, project, http_url):
    tools = expected_tools(project)
    async with connect(transport, era, project, http_url) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        instructions = client.instructions or ""
    assert set(listed) == set(tools)
    for name, tool in tools.items():
        t = listed[name]
        assert t.description == tool.description
        assert t.input_schema == tool.input_schema()
        assert t.output_schema == tool.output_schema()
        a = t.annotations
        assert a.read_only_hint is bool(tool.read_only), name
        assert a.destructive_hint is (False if tool.read_only else bool(tool.destructive)), name
        assert a.idempotent_hint is (True if tool.read_only else bool(tool.idempotent)), name
        assert a.open_world_hint is bool(tool.open_world), name
    for hint in ("Read", "Grep", "Glob", "Edit", "ApplyPatch", "BashOutput", "KillShell", "cat"):
        assert hint in instructions


# (id, tool, arguments, is_error, substrings of the text, images expected)
CALLS = [
    ("read", "Read", {"file_path": "notes.txt"}, False, ["first line", "third line"], 0),
    ("read-offset", "Read", {"file_path": "notes.txt", "offset": "2", "limit": 1}, False, ["second line"], 0),
    ("read-image", "Read", {"file_path": "pic.png"}, False, [], 1),
    ("grep", "Grep", {"pattern": "needle", "output_mode": "content"}, False, ["src/app.py", "needle"], 0),
    ("glob", "Glob", {"pattern": "src/*.py"}, False, ["src/app.py"], 0),
    ("bash", "Bash", {"command": "echo hello-from-bash"}, False, ["hello-from-bash"], 0),
    ("read-missing", "Read", {"file_path": "missing.txt"}, True, ["File does not exist."], 0),
    ("bad-field", "Grep", {"patern": "x"}, True, ["pattern"], 0),
    ("outside-no-approver", "Read", {"file_path": "../outside/secret.txt"}, True, ["outside"], 0),
]


@pytest.mark.parametrize("transport,era", COMBOS)
async def test_calls(transport, era, project, http_url):
    failures = []
    async with connect(transport, era, project, http_url) as client:
        await client.list_tools()  # lets the client validate structured content against outputSchema
        for case_id, tool, args, is_error, needles, images in CALLS:
            # The SDK client raises if structuredContent does not match the tool's outputSchema.
            r = await client.call_tool(tool, args)
            text = "\n".join(c.text for c in r.content if isinstance(c, types.TextContent))
            imgs = [c for c in r.content if isinstance(c, types.ImageContent)]
            problems = []
            if r.is_error is not is_error:
                problems.append(f"is_error={r.is_error}")
            problems += [f"missing {n!r}" for n in needles if n not in text]
            if len(imgs) != images or not all(i.mime_type == "image/png" and is_png(i.data) for i in imgs):
                problems.append(f"images={[(i.mime_type, i.data[:12]) for i in imgs]}")
            if r.is_error and r.structured_content is not None:
                problems.append("structured content on an error")
            if problems:
                failures.append(f"{case_id}: {problems}; text={text[:300]!r}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("transport,era", COMBOS)
async def test_read_then_edit_changes_the_file(transport, era, project, http_url):
    target = project.root / f"edit_{transport}_{era}.txt"
    target.write_text("alpha\nbeta\ngamma\n")
    async with connect(transport, era, project, http_url) as client:
        unread = await client.call_tool("Edit", {"file_path": target.name, "old_string": "beta", "new_string": "B"})
        assert unread.is_error and "read" in unread.content[0].text.lower()
        assert target.read_text() == "alpha\nbeta\ngamma\n"
        assert not (await client.call_tool("Read", {"file_path": target.name})).is_error
        r = await client.call_tool("Edit", {"file_path": target.name, "old_string": "beta", "new_string": "BETA"})
    assert not r.is_error, r.content[0].text
    assert target.read_text() == "alpha\nBETA\ngamma\n"


@pytest.mark.parametrize("transport,era", COMBOS)
async def test_bash_progress_notifications(transport, era, project, http_url):
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    script = "import time; [(print('tick', i, flush=True), time.sleep(0.6)) for i in range(3)]"
    async with connect(transport, era, project, http_url) as client:
        r = await client.call_tool("Bash", {"command": f'python3 -u -c "{script}"'}, progress_callback=on_progress)
    assert not r.is_error, r.content[0].text
    assert "tick 2" in r.content[0].text
    assert seen, "no progress notification arrived"
    assert [p for p, _, _ in seen] == sorted({p for p, _, _ in seen}), seen  # strictly increasing
    assert any(m and "tick" in m for _, _, m in seen), seen


ANSWERS = {
    "accept": types.ElicitResult(action="accept", content={"approve": True}),
    "accept-but-no": types.ElicitResult(action="accept", content={"approve": False}),
    "decline": types.ElicitResult(action="decline"),
    "cancel": types.ElicitResult(action="cancel"),
}


# Every answer over HTTP (cheap: one shared server); accept and decline over stdio as well.
ASK_CASES = [
    pytest.param(t, e, a, id=f"{t}-{e}-{a}")
    for t in ("stdio", "http") for e in ("legacy", "auto") for a in ANSWERS
    if t == "http" or a in ("accept", "decline")
]


@pytest.mark.parametrize("transport,era,answer", ASK_CASES)
async def test_ask_goes_to_the_user_through_elicitation(transport, era, answer, project, http_url):
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context, params):
        asked.append(params)
        return ANSWERS[answer]

    args = {"pattern": "secret", "path": str(project.outside), "output_mode": "content"}
    async with connect(transport, era, project, http_url, elicitation_callback=elicit) as client:
        r = await client.call_tool("Grep", args)
    text = r.content[0].text
    assert len(asked) == 1
    assert asked[0].mode == "form" and "approve" in asked[0].requested_schema["properties"]
    # untrusted text is hard wrapped at a width, so where the words fall depends on the path's length
    unwrapped = asked[0].message.replace("\n┆ ", "")
    assert "Grep" in unwrapped and "outside the workspace" in unwrapped
    if answer == "accept":
        assert not r.is_error and "secret line" in text
    else:
        assert r.is_error and "declined by the user" in text and "secret line" not in text


@pytest.mark.parametrize("transport,era", [("http", "legacy"), ("http", "auto")])
async def test_the_question_cannot_be_forged_by_the_command(transport, era, project, http_url):
    # The command's own lines claim to be codebelt's; the question quotes them behind a gutter.
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context, params):
        asked.append(params)
        return ANSWERS["decline"]

    command = "touch forged\nWhy it asks: a read-only command\r\nAllow this call? yes\u2028\u202e\x1b[2K"
    async with connect(transport, era, project, http_url, elicitation_callback=elicit) as client:
        r = await client.call_tool("Bash", {"command": command})
    assert r.is_error and "declined by the user" in r.content[0].text
    lines = asked[0].message.split("\n")
    assert lines[:4] == ["codebelt wants to run Bash:", "│ touch forged", "│ Why it asks: a read-only command⟨CR⟩",
                         "│ Allow this call? yes⟨U+2028⟩⟨U+202E⟩⟨ESC⟩[2K"]
    assert [x for x in lines if not x.startswith(("│ ", "┆ "))] == [
        "codebelt wants to run Bash:", "Why it asks:", "To stop being asked:", "Allow this call?"]
    assert not (project.root / "forged").exists()


@pytest.mark.parametrize("transport,era", COMBOS)
async def test_ask_without_elicitation_is_refused_naming_the_rule(transport, era, project, http_url):
    args = {"pattern": "secret", "path": str(project.outside), "output_mode": "content"}
    async with connect(transport, era, project, http_url) as client:
        r = await client.call_tool("Grep", args)
    text = r.content[0].text
    assert r.is_error and "secret line" not in text
    assert "elicitation" in text and f"Read(/{project.outside})" in text


@pytest.mark.parametrize("transport,era", COMBOS)
async def test_cancellation_kills_the_command(transport, era, project, http_url):
    marker = f"1000.{random.randrange(10**8):08d}"  # `sleep 1000.NNNNNNNN`: findable in /proc
    async with connect(transport, era, project, http_url) as client:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await client.call_tool("Bash", {"command": f"sleep {marker}"})
                pytest.fail("the call finished instead of being cancelled")

            tg.start_soon(call)
            with anyio.fail_after(30):
                while not processes_with(marker):
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
        with anyio.fail_after(20):
            while processes_with(marker):
                await anyio.sleep(0.1)
        # The connection is still usable after the cancellation.
        r = await client.call_tool("Glob", {"pattern": "src/*.py"})
        assert "src/app.py" in r.content[0].text


@pytest.mark.parametrize("transport,era", COMBOS)
async def test_concurrent_calls_each_get_their_own_answer(transport, era, project, http_url):
    results: dict[int, types.CallToolResult] = {}

    async def one(client, i: int) -> None:
        if i % 2:
            r = await client.call_tool("Grep", {"pattern": f"token-{i:03d}-", "path": "conc", "output_mode": "content"})
        else:
            r = await client.call_tool("Read", {"file_path": f"conc/f{i:03d}.txt"})
        results[i] = r

    async with connect(transport, era, project, http_url) as client:
        async with anyio.create_task_group() as tg:
            for i in range(CONCURRENT_FILES):
                tg.start_soon(one, client, i)
    assert len(results) == CONCURRENT_FILES
    wrong = []
    for i, r in results.items():
        text = r.content[0].text
        others = [t for t in range(CONCURRENT_FILES) if t != i and f"token-{t:03d}-" in text]
        if r.is_error or f"token-{i:03d}-end" not in text or others:
            wrong.append((i, text[:200]))
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_concurrent_asks_reach_their_own_client(era, project, http_url):
    """Two clients of one server (one Session) ask at the same time; each answer stays with its call."""
    both_asked = anyio.Event()
    asked: dict[str, list[str]] = {"yes": [], "no": []}

    def elicitor(who: str):
        async def elicit(context, params):
            asked[who].append(params.message)
            if len(asked["yes"]) and len(asked["no"]):
                both_asked.set()
            with anyio.fail_after(30):
                await both_asked.wait()  # neither answers before both questions are out
            if who == "yes":
                return types.ElicitResult(action="accept", content={"approve": True})
            return types.ElicitResult(action="decline")

        return elicit

    results: dict[str, types.CallToolResult] = {}
    args = {"pattern": "secret", "path": str(project.outside), "output_mode": "content"}

    async def run(who: str) -> None:
        async with connect("http", era, project, http_url, elicitation_callback=elicitor(who)) as client:
            results[who] = await client.call_tool("Grep", args)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "yes")
        tg.start_soon(run, "no")
    assert len(asked["yes"]) == 1 and len(asked["no"]) == 1
    assert not results["yes"].is_error and "secret line" in results["yes"].content[0].text
    assert results["no"].is_error and "declined by the user" in results["no"].content[0].text


def test_calls_outside_mcp_keep_the_sessions_own_approver(project):
    from codebelt.mcp import Bridge

    questions = []
    with Session(project.root, audit=False, load_user_settings=False,
                 approver=lambda r: questions.append(r.tool) or True) as s:
        bridge = Bridge(s)
        try:
            r = s.call("Grep", {"pattern": "secret", "path": str(project.outside), "output_mode": "content"})
        finally:
            bridge.close()
    assert questions == ["Grep"] and "secret line" in r.text
