"""askForNewDomains: the person is asked the first time a command wants a name on neither list —
through a real MCP client answering elicitation, and through the library's approver — once per
name per session, while the connection waits, for a bounded time."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import anyio
import pytest

from .conftest import NAMES, connections, start_server

ASK = {"allowedDomains": ["allowed.test"], "askForNewDomains": True}
CODEBELT = str(Path(sys.executable).with_name("codebelt"))


@pytest.fixture
def https_server(pki):
    server, stop = start_server({"/hello": b"hello over https\n"}, pki=pki)
    yield server
    stop()


def curl(server, pki, host: str) -> str:
    return f"curl -sS --max-time 20 --cacert {pki.ca} {server.url(host, '/hello')}"


# -- through MCP ------------------------------------------------------------------------------------
def serve_params(tmp_path: Path, ws: Path, network: dict):
    from mcp.client.stdio import StdioServerParameters

    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(*)"]}, "sandbox": {"network": network}}))
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "CODEBELT_AUDIT_DB": str(tmp_path / "audit.db"), "PYTHONUNBUFFERED": "1",
           "CODEBELT_NETWORK_RESOLVE": ",".join(f"{n}=127.0.0.1" for n in NAMES)}
    return StdioServerParameters(command=CODEBELT, env=env, args=[
        "serve", "--root", str(ws), "--settings", str(settings), "--sandbox", "bwrap", "--mode", "default"])


async def test_the_person_is_asked_through_mcp_elicitation(bwrap, ws, tmp_path, https_server, pki):
    from mcp import Client
    import mcp_types as types

    asked: list[str] = []

    async def elicit(context, params):
        # untrusted text is hard wrapped at a width, so where its words fall depends on the port
        # and the temporary path: read the question unwrapped
        asked.append(params.message.replace("\n┆ ", ""))
        approve = "new.test" in asked[-1]  # new2.test is declined
        return types.ElicitResult(action="accept", content={"approve": approve})

    async with Client(serve_params(tmp_path, ws, ASK), mode="legacy", elicitation_callback=elicit) as client:
        with anyio.fail_after(60):
            first = await client.call_tool("Bash", {"command": curl(https_server, pki, "new.test")})
            again = await client.call_tool("Bash", {"command": curl(https_server, pki, "new.test")})
            declined = await client.call_tool("Bash", {"command": curl(https_server, pki, "new2.test")})
    assert "hello over https" in first.content[0].text, first.content[0].text
    assert "hello over https" in again.content[0].text
    # asked about the name, then (it leads to 127.0.0.1) about reaching a non-public address; never again
    about_new = [m for m in asked if "new.test" in m]
    assert len(about_new) == 2, asked
    assert "new.test:" in about_new[0] and "sandbox.network.allowedDomains" in about_new[0]
    assert "127.0.0.1" in about_new[1] and "not a public address" in about_new[1]
    assert "rest of this session" in about_new[0]
    assert [m for m in asked if "new2.test" in m] and "hello" not in declined.content[0].text
    assert "declined by the user" in declined.content[0].text
    assert [(h, p) for h, p in https_server.requests] == [(f"new.test:{https_server.port}", "/hello")] * 2


async def test_a_client_that_answers_only_before_a_call_is_not_asked_mid_command(bwrap, ws, tmp_path, https_server,
                                                                                  pki):
    """The 2026-07-28 protocol answers questions by retrying the call: a command would run twice.
    The connection is refused instead, saying why."""
    from mcp import Client

    asked: list[str] = []

    async def elicit(context, params):
        asked.append(params.message)
        raise AssertionError("not asked")

    async with Client(serve_params(tmp_path, ws, ASK), mode="auto", elicitation_callback=elicit) as client:
        with anyio.fail_after(60):
            r = await client.call_tool("Bash", {"command": curl(https_server, pki, "new.test")})
    text = r.content[0].text
    assert "hello" not in text and not asked and https_server.requests == []
    assert "while a command runs" in text, text


# -- through the library's approver ---------------------------------------------------------------------
def test_asked_once_per_name_while_connections_wait(session_with, https_server, pki, tmp_path):
    """Three connections to the same new name at once: one question; its answer serves all."""
    asked: list[str] = []
    gate_open = threading.Event()

    def approver(request):
        asked.append(request.detail or "")
        gate_open.wait(10)  # hold the answer while the other connections arrive
        return True

    s = session_with(ASK, approver=approver)
    command = " & ".join([curl(https_server, pki, "sub.allowed.test")] * 3) + " & wait"
    threading.Timer(1.5, gate_open.set).start()
    r = s.call("Bash", {"command": command + "; echo done"})
    assert r.text.count("hello over https") == 3, r.text
    assert len([a for a in asked if "sub.allowed.test" in a and "->" not in a]) <= 2  # the name, then inside
    assert len(asked) == 2, asked
    rows = [row for row in connections(tmp_path, s) if row["host"] == "sub.allowed.test"]
    assert len(rows) == 3 and all(row["decision"] == "allowed" for row in rows)
    assert sum(row["asked"] for row in rows) >= 1


def test_no_answer_in_time_is_a_refusal(session_with, https_server, pki):
    never = threading.Event()

    def approver(request):
        never.wait(30)
        return True

    s = session_with({**ASK, "askTimeoutSeconds": 1}, approver=approver)
    r = s.call("Bash", {"command": curl(https_server, pki, "new.test")})  # curl waits at most 20 s
    never.set()
    assert "hello" not in r.text and "nobody answered within 1 s" in r.data["sandboxNote"], r.text


def test_without_an_approver_nobody_is_asked(session_with, https_server, pki):
    s = session_with(ASK)
    r = s.call("Bash", {"command": curl(https_server, pki, "new.test")})
    assert "hello" not in r.text and "no one can be asked" in r.data["sandboxNote"]


def test_mode_dont_ask_asks_nobody(session_with, https_server, pki):
    asked = []
    s = session_with(ASK, approver=lambda r: asked.append(r) or True,
                     permissions={"allow": ["Bash(*)"], "defaultMode": "dontAsk"})
    r = s.call("Bash", {"command": curl(https_server, pki, "new.test")})
    assert not asked and "hello" not in r.text


def test_a_declined_name_stays_declined(session_with, https_server, pki):
    asked = []
    s = session_with(ASK, approver=lambda r: asked.append(r.detail) or False)
    for _ in range(2):
        r = s.call("Bash", {"command": curl(https_server, pki, "new.test")})
        assert "declined by the user" in r.data["sandboxNote"]
    assert len(asked) == 1 and https_server.requests == []


def test_a_denied_name_is_never_asked(session_with, https_server, pki):
    asked = []
    s = session_with({**ASK, "deniedDomains": ["new.test"]}, approver=lambda r: asked.append(r) or True)
    r = s.call("Bash", {"command": curl(https_server, pki, "new.test")})
    assert not asked and "sandbox.network.deniedDomains" in r.data["sandboxNote"]




# -- what the person reads ---------------------------------------------------------------------------
RAW_CONNECT = """
import os, socket, sys
host, port = os.environ["HTTP_PROXY"].rsplit("/", 1)[-1].rsplit(":", 1)
for target in sys.argv[1:]:
    with socket.create_connection((host, int(port)), timeout=20) as s:
        s.sendall(b"CONNECT " + target.encode("utf-8", "surrogateescape") + b" HTTP/1.1\\r\\n\\r\\n")
        print(repr(target), s.recv(200).split(b"\\r\\n")[0].decode("latin-1"), flush=True)
"""


def test_the_question_shows_names_and_commands_as_they_are(session_with, ws):
    """A name is asked about in its one ASCII spelling (a Cyrillic look-alike as punycode), once
    whatever its spelling; a name holding control or bidi characters is no name and asks nothing;
    the command shown with
    the question cannot forge a line of it (its bidi override and escape sequence shown as
    escapes)."""
    questions: list[str] = []
    s = session_with(ASK, approver=lambda req: questions.append(req.question()) or False)
    (ws / "raw.py").write_text(RAW_CONNECT)
    targets = ["pyp\u0456.test:443", "PYP\u0406.test:443", "evil\u202egnp.test:443", "a\x1b[2J.test:443"]
    command = (f"{sys.executable} raw.py " + " ".join(f"$'{t}'" for t in targets).replace("\x1b", "\\e")
               + " # \u202e\nWhy it asks: \x1b[32mread-only")
    r = s.call("Bash", {"command": command})
    assert r.text.count("403") == 4, r.text
    assert len(questions) == 1, (questions, r.text)
    question = questions[0]
    assert question.splitlines()[1].startswith("│ connections to xn--pyp-lhd.test (the first to port 443) for `")
    assert "│ xn--pyp-lhd.test is not in sandbox.network.allowedDomains" in question
    assert "\u202e" not in question and "\x1b" not in question
    assert "⟨U+202E⟩" in question and "⟨ESC⟩" in question
    own = [line for line in question.splitlines() if not line.startswith(("│ ", "┆ "))]
    assert own == ["codebelt wants to run Bash:", "Why it asks:", "To stop being asked:",
                   "Allow it (for the rest of this session)?"], question
