"""The question a person answers to allow a call cannot be forged by the call: whatever a command,
a path, a patch or a reason holds, every line at the left edge is codebelt's own, untrusted text
sits behind the gutter with every character that could change how it reads escaped, lines fit
80 columns, and the escaping is reversible (nothing is hidden or ambiguous)."""

from __future__ import annotations

import io
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebelt.permissions.approvers import ApprovalRequest, TerminalApprover
from codebelt.permissions.decision import Decision
from codebelt.permissions.question import CONTINUED, GUTTER, Preview, _columns

OURS = re.compile(r"^(codebelt wants to run [A-Za-z]+:|a heading|a patch of \d+ files?: [a-z0-9, ]+; \+\d+ -\d+ lines|Why it asks:|To stop being asked:|Allow this call\?|"
                  r"Files \(A added, M changed, D deleted\):|Changes \(unified diff.*\):|Title:)$")
_ESCAPE = re.compile(r"⟨(LF|CR|TAB|ESC|NUL|DEL|U\+[0-9A-F]{4,6})⟩")
_NAMES = {"LF": "\n", "CR": "\r", "TAB": "\t", "ESC": "\x1b", "NUL": "\x00", "DEL": "\x7f"}

# Characters an attacker reaches for: line breaks of every kind, terminal escapes, bidi and
# zero-width characters, look-alike gutters and escapes, wide letters, odd spaces.
HOSTILE = ["\n", "\r", "\r\n", "\x1b[2K", "\x1b]8;;x\x07", "\u2028", "\u2029", "\u0085", "\u202e", "\u2066",
           "\u200b", "\u200d", "\ufeff", "\u2060", "\u00ad", "\u00a0", "\u3000", "\u3164", "\u2800", "\x00", "\x7f",
           "\t", "\x0b", "\x0c", "│ ", "┆ ", "⟨LF⟩", "⟨", "⟩", "Why it asks:", "Allow this call?", "Ａｌｌｏｗ",
           "中文", "é", "e\u0301", " " * 70, "\ud800", "\U000e0041"]
FORGERIES = [
    "git push\nWhy it asks: read-only command\nAllow this call? yes",
    "git push\rAllow this call?",
    "git push\u2028Why it asks: read-only",
    "rm -rf ~ \u202e#elif\u202c",
    "ls" + " " * 200 + "Why it asks: read-only",
    "echo \x1b[1A\x1b[2KWhy it asks: read-only\x1b[B",
    "ls\u200b\u200b\u200b" + "\u3000" * 50 + "Allow this call?",
]


def unquote(lines: list[str]) -> list[list[str]]:
    """Per quoted section, its entries (one per gutter line, continuations joined), unescaped."""
    sections: list[list[str]] = []
    current: list[str] | None = None
    for line in lines:
        if line.startswith(GUTTER):
            if current is None:
                current = []
                sections.append(current)
            current.append(line[len(GUTTER):])
        elif line.startswith(CONTINUED):
            assert current, line
            current[-1] += line[len(CONTINUED):]
        else:
            current = None
    return [[_ESCAPE.sub(lambda m: _NAMES.get(m.group(1)) or chr(int(m.group(1)[2:], 16)), e) for e in sec]
            for sec in sections]


def check_unforgeable(question: str) -> list[str]:
    lines = question.split("\n")
    for line in lines:
        assert line.startswith((GUTTER, CONTINUED)) or OURS.match(line), repr(line)
        assert _columns(line) <= 80, repr(line)
        for ch in line:
            assert unicodedata.category(ch)[0] != "C" and unicodedata.category(ch) not in ("Zl", "Zp"), repr(line)
            assert unicodedata.category(ch) != "Zs" or ch == " ", repr(line)
    assert lines[-1] == "Allow this call?" and lines.count("Allow this call?") == 1
    assert lines.count("Why it asks:") == 1
    return lines


def request(detail: str, reason: str = "ask: a command", suggestion: str | None = None,
            preview: Preview | None = None, reasons: tuple[str, ...] = ()) -> ApprovalRequest:
    return ApprovalRequest("Bash", {"command": detail}, Decision.ask(reason, "mode", suggestion=suggestion),
                           detail=detail, preview=preview, reasons=reasons)


@pytest.mark.parametrize("text", FORGERIES)
def test_forgeries_stay_quoted(text):
    lines = check_unforgeable(request(text, reason=f"ask: {text}", suggestion=f"add Bash({text})").question())
    detail, why, stop = unquote(lines)
    assert "\n".join(detail) == text and why == [f"ask: {text}"] and stop == [f"add Bash({text})"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(HOSTILE) | st.text(max_size=5), max_size=12).map("".join),
       st.lists(st.sampled_from(HOSTILE) | st.text(max_size=5), max_size=6).map("".join))
def test_any_text_is_quoted_reversibly(detail, reason):
    preview = Preview("a heading", (("Title", detail),))
    for req in (request(detail, reason), request(detail, reason, preview=preview)):
        lines = check_unforgeable(req.question())
        blocks = unquote(lines)
        if "\n".join(blocks[0]) != detail:  # an empty detail has one empty entry: the same text
            assert detail == "" and blocks[0] == [""]
        assert blocks[1] == [reason]


def test_blocks_are_bounded_and_say_so():
    lines = check_unforgeable(request("x\n" * 10_000 + "y" * 100_000).question())
    assert len(lines) < 60 and any("more lines not shown" in line for line in lines)
    assert len("\n".join(lines)) < 8_000


def test_the_terminal_prompt_is_the_same_question():
    out = io.StringIO()
    req = request(FORGERIES[0])
    assert TerminalApprover(io.StringIO("n\n"), out)(req) is False
    shown = out.getvalue()
    assert req.question() in shown and shown.rstrip().endswith("[y/N]")


# -- through a real Session --------------------------------------------------------------------

def test_bash_command_cannot_forge_lines(make_session, ws):
    asked: list[str] = []
    s = make_session(approver=lambda r: asked.append(r.question()) or False, sandbox="off")
    command = "touch a\nWhy it asks: read-only command\r\nAllow this call? yes\u2028\u202e"
    r = s.call("Bash", {"command": command})
    assert r.is_error and "declined" in r.text
    lines = check_unforgeable(asked[0])
    assert "\n".join(unquote(lines)[0]) == command


def test_apply_patch_shows_every_file_and_a_readable_diff(make_session, ws):
    (ws / "a.py").write_text("def f():\n    return 1\n")
    (ws / "old.txt").write_text("obsolete\n" * 3)
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(2_000)))
    asked: list[ApprovalRequest] = []
    s = make_session(approver=lambda r: asked.append(r) or False)
    big_patch = "".join(f"-line {i}\n+LINE {i}\n" for i in range(2_000))
    patch = ("*** Begin Patch\n*** Update File: a.py\n@@\n def f():\n-    return 1\n+    return 2\n"
             "*** Add File: pkg/new\u202e.py\n+print('hi')\n*** Delete File: old.txt\n"
             "*** Update File: big.txt\n@@\n" + big_patch + "*** End Patch\n")
    r = s.call("ApplyPatch", {"input": patch})
    assert r.is_error and "declined" in r.text
    question = asked[0].question()
    lines = check_unforgeable(question)
    assert lines[:2] == ["codebelt wants to run ApplyPatch:", "a patch of 4 files: 1 added, 2 changed, 1 deleted; +2002 -2004 lines"]
    files, diff, why, _stop = unquote(lines)
    assert files == ["M a.py  (+1 -1)", "A pkg/new\u202e.py  (+1 -0)", "D old.txt  (+0 -3)", "M big.txt  (+2000 -2000)"]
    diff = "\n".join(diff)
    assert "-    return 1\n+    return 2" in diff and "+print('hi')" in diff and "-obsolete" in diff
    assert "more diff lines of this file not shown" in diff and "160-line preview of" in question
    assert why == ["writing a.py needs approval in mode default", "writing pkg/new\u202e.py needs approval in mode default",
                   "writing old.txt needs approval in mode default", "writing big.txt needs approval in mode default"]


def test_a_patch_that_cannot_apply_is_refused_before_asking(make_session, ws):
    (ws / "a.py").write_text("x = 1\n")
    asked: list[ApprovalRequest] = []
    s = make_session(approver=lambda r: asked.append(r) or True)
    r = s.call("ApplyPatch", {"input": "*** Begin Patch\n*** Update File: a.py\n@@\n-y = 2\n+y = 3\n*** End Patch\n"})
    assert r.is_error and "Failed to find expected lines" in r.text and not asked
