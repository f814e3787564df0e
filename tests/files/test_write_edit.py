"""Write, Edit and MultiEdit through a Session: read-before-write, staleness, encodings, snippets."""

from __future__ import annotations

import codecs
import os
import stat

import pytest

from codebelt.files.state import MODIFIED, NOT_READ


def call(session, tool, **inp):
    return session.call(tool, inp)


def test_write_creates_with_parents(session, ws):
    r = call(session, "Write", file_path="deep/er/new.txt", content="a\nb\n")
    assert not r.is_error and r.text.startswith("File created successfully at: deep/er/new.txt")
    assert (ws / "deep/er/new.txt").read_bytes() == b"a\nb\n"
    assert "a\nb" not in r.text  # a confirmation, not the content


def test_write_overwrite_requires_read_then_works(session, ws):
    (ws / "f.txt").write_text("old\n")
    assert call(session, "Write", file_path="f.txt", content="new\n").text == f"<tool_use_error>{NOT_READ}</tool_use_error>"
    call(session, "Read", file_path="f.txt")
    r = call(session, "Write", file_path="f.txt", content="new\n")
    assert not r.is_error and r.text.startswith("The file f.txt has been updated successfully.")
    # The session wrote it, so it knows the content: a second write needs no new Read.
    assert not call(session, "Write", file_path="f.txt", content="newer\n").is_error
    assert (ws / "f.txt").read_text() == "newer\n"


def test_modified_since_read_is_refused(session, ws):
    p = ws / "f.txt"
    p.write_text("v1\n")
    call(session, "Read", file_path="f.txt")
    p.write_text("v2 by a linter\n")
    refused = f"<tool_use_error>{MODIFIED}</tool_use_error>"
    assert call(session, "Write", file_path="f.txt", content="x").text == refused
    assert call(session, "Edit", file_path="f.txt", old_string="v2", new_string="v3").text == refused
    assert p.read_text() == "v2 by a linter\n"


def test_touched_but_identical_is_not_stale(session, ws):
    p = ws / "f.txt"
    p.write_text("same\n")
    call(session, "Read", file_path="f.txt")
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    r = call(session, "Edit", file_path="f.txt", old_string="same", new_string="changed")
    assert not r.is_error, r.text


def test_partial_read_allows_edit(session, ws):
    p = ws / "f.txt"
    p.write_text("".join(f"l{i}\n" for i in range(100)))
    call(session, "Read", file_path="f.txt", offset=50, limit=2)
    r = call(session, "Edit", file_path="f.txt", old_string="l99\n", new_string="last\n")
    assert not r.is_error, r.text


def test_consecutive_edits(session, ws):
    p = ws / "code.py"
    p.write_text("".join(f"line{i}\n" for i in range(1, 21)))
    call(session, "Read", file_path="code.py")
    r = call(session, "Edit", file_path="code.py", old_string="line10\n", new_string="ten\nTEN\n")
    assert r.text == ("The file code.py has been updated successfully. (file state is current in your context — "
                      "no need to Read it back)")
    r = call(session, "Edit", file_path="code.py", old_string="TEN", new_string="10")
    assert not r.is_error, r.text
    assert p.read_text().splitlines()[9:11] == ["ten", "10"]


def test_edit_found_twice_and_replace_all(session, ws):
    (ws / "f.txt").write_text("foo bar foo\n")
    call(session, "Read", file_path="f.txt")
    r = call(session, "Edit", file_path="f.txt", old_string="foo", new_string="baz")
    assert r.is_error and "Found 2 matches" in r.text and "replace_all" in r.text
    r = call(session, "Edit", file_path="f.txt", old_string="foo", new_string="baz", replace_all=True)
    assert not r.is_error and "All occurrences were successfully replaced." in r.text
    assert (ws / "f.txt").read_text() == "baz bar baz\n"


def test_mode_preserved(session, ws):
    p = ws / "run.sh"
    p.write_text("echo hi\n")
    p.chmod(0o751)
    call(session, "Read", file_path="run.sh")
    call(session, "Edit", file_path="run.sh", old_string="hi", new_string="there")
    assert stat.S_IMODE(p.stat().st_mode) == 0o751
    call(session, "Write", file_path="run.sh", content="echo x\n")
    assert stat.S_IMODE(p.stat().st_mode) == 0o751


ROUND_TRIPS = [
    # name, original bytes, old, new, expected bytes
    ("crlf", b"a\r\nb\r\nc\r\n", "a\nb", "A\nB\nB2", b"A\r\nB\r\nB2\r\nc\r\n"),
    ("bom crlf", codecs.BOM_UTF8 + b"x = 1\r\ny = 2\r\n", "y = 2", "y = 3",
     codecs.BOM_UTF8 + b"x = 1\r\ny = 3\r\n"),
    ("utf-16 le", codecs.BOM_UTF16_LE + "\u00e9t\u00e9\r\nhiver\r\n".encode("utf-16-le"), "hiver", "printemps",
     codecs.BOM_UTF16_LE + "\u00e9t\u00e9\r\nprintemps\r\n".encode("utf-16-le")),
    ("utf-16 be", codecs.BOM_UTF16_BE + "one\ntwo\n".encode("utf-16-be"), "two", "deux",
     codecs.BOM_UTF16_BE + "one\ndeux\n".encode("utf-16-be")),
    ("mixed endings untouched", b"a\r\nb\nc\r\n", "b", "B", b"a\r\nB\nc\r\n"),
    ("invalid utf-8 bytes kept", "caf\u00e9 ".encode() + b"\xff\xfe\nkeep\n", "keep", "kept",
     "caf\u00e9 ".encode() + b"\xff\xfe\nkept\n"),
    ("latin-1", "caf\u00e9\nna\u00efve\n".encode("latin-1"), "na\u00efve", "s\u00fbr",
     "caf\u00e9\ns\u00fbr\n".encode("latin-1")),
    ("curly quotes kept", "msg = \u201chello\u201d\n".encode(), 'msg = "hello"', 'msg = "bye"',
     "msg = \u201cbye\u201d\n".encode()),
]


@pytest.mark.parametrize("name,original,old,new,expected", ROUND_TRIPS, ids=[c[0] for c in ROUND_TRIPS])
def test_edit_round_trips(session, ws, name, original, old, new, expected):
    p = ws / "f.txt"
    p.write_bytes(original)
    assert not call(session, "Read", file_path="f.txt").is_error
    r = call(session, "Edit", file_path="f.txt", old_string=old, new_string=new)
    assert not r.is_error, r.text
    assert p.read_bytes() == expected


@pytest.mark.parametrize("original,content,expected", [
    (b"a\r\nb\r\n", "x\ny\n", b"x\r\ny\r\n"),
    (codecs.BOM_UTF8 + b"a\n", "b\n", codecs.BOM_UTF8 + b"b\n"),
    (codecs.BOM_UTF16_LE + "a\n".encode("utf-16-le"), "\u00fc\n", codecs.BOM_UTF16_LE + "\u00fc\n".encode("utf-16-le")),
])
def test_write_keeps_encoding_bom_and_crlf(session, ws, original, content, expected):
    p = ws / "f.txt"
    p.write_bytes(original)
    call(session, "Read", file_path="f.txt")
    assert not call(session, "Write", file_path="f.txt", content=content).is_error
    assert p.read_bytes() == expected


def test_write_unencodable_content_falls_back_to_utf8(session, ws):
    p = ws / "legacy.txt"
    p.write_bytes("caf\u00e9\n".encode("latin-1"))
    call(session, "Read", file_path="legacy.txt")
    r = call(session, "Write", file_path="legacy.txt", content="caf\u00e9 \u2603\n")
    assert not r.is_error and "now UTF-8" in r.text
    assert p.read_bytes() == "caf\u00e9 \u2603\n".encode()


def test_edit_empty_old_string_creates_and_fills(session, ws):
    r = call(session, "Edit", file_path="new/file.txt", old_string="", new_string="hello\n")
    assert not r.is_error and r.text.startswith("The file new/file.txt has been updated successfully.")
    assert (ws / "new/file.txt").read_text() == "hello\n"
    (ws / "empty.txt").write_bytes(b"")
    assert not call(session, "Edit", file_path="empty.txt", old_string="", new_string="x").is_error
    assert (ws / "empty.txt").read_text() == "x"


def test_edit_line_number_prefix_via_tool(session, ws):
    (ws / "f.py").write_text("def f():\n    return 1\n")
    call(session, "Read", file_path="f.py")
    r = call(session, "Edit", file_path="f.py", old_string="     2\t    return 1", new_string="    return 2")
    assert not r.is_error and "line numbers" in r.text
    assert (ws / "f.py").read_text() == "def f():\n    return 2\n"


def test_multiedit_sequential(session, ws):
    (ws / "m.txt").write_text("alpha beta gamma\n")
    call(session, "Read", file_path="m.txt")
    r = call(session, "MultiEdit", file_path="m.txt", edits=[
        {"old_string": "alpha", "new_string": "ALPHA"},
        {"old_string": "ALPHA beta", "new_string": "A B"},
        {"old_string": "a", "new_string": "4", "replace_all": True},
    ])
    assert not r.is_error, r.text
    assert (ws / "m.txt").read_text() == "A B g4mm4\n"
    assert "3 edits" in r.text


def test_multiedit_first_edit_creates(session, ws):
    r = call(session, "MultiEdit", file_path="made.txt", edits=[
        {"old_string": "", "new_string": "one two\n"},
        {"old_string": "two", "new_string": "2"},
    ])
    assert not r.is_error, r.text
    assert (ws / "made.txt").read_text() == "one 2\n"


def test_notebook_edit_refused(session, ws):
    (ws / "n.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    call(session, "Read", file_path="n.ipynb")
    r = call(session, "Edit", file_path="n.ipynb", old_string="cells", new_string="x")
    assert r.is_error and "Use the NotebookEdit to edit this file." in r.text


def test_write_edit_flags(session):
    for name in ("Write", "Edit", "MultiEdit"):
        spec = session.tool(name).spec()
        assert not spec["read_only"] and not spec["concurrency_safe"] and spec["max_result_chars"] is None
    assert set(session.tool("Edit").spec()["input_schema"]["properties"]) == {
        "file_path", "old_string", "new_string", "replace_all"}
