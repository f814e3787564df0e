"""The Edit matcher as a table: (file text, old, new, replace_all) → new text or error substring."""

from __future__ import annotations

import pytest

from codebelt.files.matching import EditError, replace

ERR = object()

CASES = [
    # name, text, old, new, replace_all, expected text | (ERR, substring), how
    ("exact once", "a = 1\nb = 2\n", "b = 2", "b = 3", False, "a = 1\nb = 3\n", "exact"),
    ("not found", "a = 1\n", "c = 1", "c = 2", False, (ERR, "String to replace not found"), None),
    ("found twice", "x\nx\n", "x", "y", False, (ERR, "Found 2 matches"), None),
    ("found twice names lines", "x\nq\nx\n", "x", "y", False, (ERR, "lines 1, 3"), None),
    ("replace all", "x x x", "x", "yy", True, "yy yy yy", "exact"),
    ("same text", "a", "a", "a", False, (ERR, "exactly the same"), None),
    ("crlf file, LF old and new", "one\r\ntwo\r\nthree\r\n", "one\ntwo", "uno\ndos\ntres",
     False, "uno\r\ndos\r\ntres\r\nthree\r\n", "line endings"),
    ("crlf file, single-line old, multi-line new", "a\r\nb\r\n", "b", "b\nc",
     False, "a\r\nb\r\nc\r\n", "exact"),
    ("curly quotes in file, straight in old: style kept", 'say \u201chello\u201d and \u2018bye\u2019\n',
     'say "hello"', 'say "goodbye"', False, 'say \u201cgoodbye\u201d and \u2018bye\u2019\n', "quotes"),
    ("apostrophe keeps curly", "it\u2019s fine\n", "it's fine", "it's great", False,
     "it\u2019s great\n", "quotes"),
    ("curly in old, straight in file", 'x = "a"\n', "x = \u201ca\u201d", "x = \u201cb\u201d", False,
     'x = "b"\n', "quotes"),
    ("en dash kept where new repeats it", "range 1\u20132\n", "range 1-2", "range 1-3", False,
     "range 1\u20133\n", "quotes"),
    # Only the quotes new_string repeats take the file's style: never the code next to them.
    ("curly comment, straight code", "# Don\u2019t retry here\nx = d['key']\n",
     "# Don't retry here\nx = d['key']", "# Don't retry here\nx = d['other']", False,
     "# Don\u2019t retry here\nx = d['other']\n", "quotes"),
    ("quotes new_string adds stay as given", "it\u2019s\n", "it's", "it's 'quoted' and \"so\"", False,
     "it\u2019s 'quoted' and \"so\"\n", "quotes"),
    ("curly apostrophe moved with its word", "# We don\u2019t\n", "# We don't", "# Now we don't", False,
     "# Now we don\u2019t\n", "quotes"),
    ("crlf file, curly comment, straight code", "# Don\u2019t\r\nx = d['k']\r\n", "# Don't\nx = d['k']",
     "# Don't\nx = d['j']", False, "# Don\u2019t\r\nx = d['j']\r\n", "quotes"),
    ("line-number prefixes stripped", "def f():\n    return 1\n",
     "     1\tdef f():\n     2\t    return 1", "     1\tdef f():\n     2\t    return 2", False,
     "def f():\n    return 2\n", "line numbers"),
    ("prefix only on old", "alpha\nbeta\n", "     2\tbeta", "gamma", False, "alpha\ngamma\n", "line numbers"),
    ("tabs in file, spaces in old", "if x:\n\treturn 1\n", "if x:\n    return 1", "if x:\n    return 2",
     False, (ERR, "indents with tabs and old_string uses spaces"), None),
    ("spaces in file, tabs in old", "if x:\n    return 1\n", "if x:\n\treturn 1", "z",
     False, (ERR, "indents with spaces and old_string uses tabs"), None),
    ("indent differs", "if x:\n        return 1\n", "if x:\n    return 1", "z",
     False, (ERR, "indentation differs"), None),
    ("whitespace is never matched loosely", "a  b\n", "a b", "c", False, (ERR, "not found"), None),
    ("empty old fills empty file", "", "", "new\n", False, "new\n", "fill empty file"),
    ("empty old on non-empty file", "x", "", "y", False, (ERR, "old_string is empty"), None),
    ("surrogate-escaped bytes survive", "ok \udcff here\n", "here", "there", False, "ok \udcff there\n", "exact"),
]


@pytest.mark.parametrize("name,text,old,new,replace_all,expected,how", CASES, ids=[c[0] for c in CASES])
def test_replace(name, text, old, new, replace_all, expected, how):
    eol = "\r\n" if "\r\n" in text else "\n"
    if isinstance(expected, tuple):
        with pytest.raises(EditError) as info:
            replace(text, old, new, replace_all=replace_all, eol=eol)
        assert expected[1] in str(info.value)
    else:
        applied = replace(text, old, new, replace_all=replace_all, eol=eol)
        assert applied.text == expected
        assert how in applied.how


def test_region_points_at_the_change():
    applied = replace("aaa\nbbb\nccc\n", "bbb", "BBBB")
    assert applied.text[applied.start:applied.end] == "BBBB"


def test_replace_all_region_spans_every_change():
    applied = replace("x1 x2 x3", "x", "yy", replace_all=True)
    assert applied.count == 3 and applied.text[applied.start:applied.end] == "yy1 yy2 yy"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("indent", ["", "\t"])
def test_no_match_diagnosis_is_linear(indent):
    # 5,000 old lines against 40,000 equal file lines, the last old line missing: the whitespace
    # diagnosis compared window by window (lines × old lines) and took minutes.
    text = f"{indent}x = 1\n" * 40_000
    old = "    x = 1\n" * 5_000 + "    missing\n"
    with pytest.raises(EditError, match="String to replace not found"):
        replace(text, old, "y")
    # …and still finds a block that differs only in indentation, at its first place.
    found = "x = 1\n" * 3 + "tail\n"
    with pytest.raises(EditError, match="lines 40001-40004"):
        replace(text + found, "  x = 1\n" * 3 + "  tail\n", "y")


def test_what_was_changed_in_new_string_is_said():
    applied = replace("# Don\u2019t retry here\nx = d['key']\n", "# Don't retry here\nx = d['key']",
                      "# Don't retry here\nx = d['other']")
    assert applied.note == "1 character of new_string written as the file has it: \u2019"


def test_edit_result_says_what_was_changed(tmp_path):
    from codebelt import Session

    (tmp_path / "m.py").write_text("# Don\u2019t retry here\nx = d['key']\n", encoding="utf-8")
    with Session(root=tmp_path, audit=False, load_user_settings=False, mode="acceptEdits",
                 settings={"lsp": {"autoDetect": False}}) as s:
        s.call("Read", {"file_path": "m.py"})
        r = s.call("Edit", {"file_path": "m.py", "old_string": "# Don't retry here\nx = d['key']",
                            "new_string": "# Don't retry here\nx = d['other']"})
    assert not r.is_error, r.text
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == "# Don\u2019t retry here\nx = d['other']\n"
    assert "(old_string matched after normalising: quotes; 1 character of new_string written as the file has it: \u2019.)" in r.text


def test_nothing_is_said_when_new_string_was_written_as_given():
    applied = replace("it\u2019s\n", "it\u2019s", "it is")  # curly in old and file: matched exactly
    assert applied.note is None
    applied = replace("say \u201chi\u201d\n", 'say "hi"', "say nothing")
    assert applied.how == "quotes" and applied.note is None
