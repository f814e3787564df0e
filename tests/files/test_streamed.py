"""The streamed single-edit path (files/streamed.py) writes exactly what the in-memory path writes,
shows the same snippet, and abandons the write when the file changes under it."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import codebelt.files.streamed as streamed
from codebelt.files.atomic import write_atomic
from codebelt.files.codec import sniff
from codebelt.files.editing import _BYTE_SAFE, EditSpec, _apply_on_text, apply_edits, snippet
from codebelt.files.lines import LineIndexCache
from codebelt.files.matching import EditError
from codebelt.files.state import MODIFIED, FileStates

BOM = codecs.BOM_UTF8
MANY = b"".join(b"line %d of the file\n" % i for i in range(1, 400))

# (name, original bytes, old_string, new_string, replace_all, streams: whether the streamed path applies)
CASES = [
    ("middle", b"a\nb\nc\nd\ne\nf\ng\nh\ni\n", "e", "E", False, True),
    ("very start", b"alpha\nbeta\ngamma\n", "alpha", "ALPHA", False, True),
    ("very end, no final newline", b"alpha\nbeta\ngamma", "gamma", "GAMMA", False, True),
    ("very end, final newline", b"alpha\nbeta\ngamma\n", "gamma\n", "G\n", False, True),
    ("whole file", b"only", "only", "other", False, True),
    ("delete a line", b"one\ntwo\nthree\n", "two\n", "", False, True),
    ("insert lines", b"one\ntwo\n", "one\n", "one\n1.5a\n1.5b\n", False, True),
    ("deep in many lines", MANY, "line 377 of", "LINE 377 OF", False, True),
    ("first of many lines", MANY, "line 1 of", "LINE 1 OF", False, True),
    ("crlf, LF in old and new", b"one\r\ntwo\r\nthree\r\n", "one\ntwo", "1\n2", False, True),
    ("crlf, new gains CRLF", b"one\r\ntwo\r\nthree\r\n", "two", "zwei\nzwo", False, True),
    # mixed endings and new lines: each new line takes the ending of the line it replaces, which
    # the in-memory path decides (not streamed)
    ("mixed endings", b"a\r\nb\nc\r\nd\n", "b\nc", "B\nC", False, False),
    ("bom, edit at start", BOM + b"first\nsecond\n", "first", "1st", False, True),
    ("bom, whole body", BOM + b"body", "body", "new body", False, True),
    ("bom, crlf", BOM + b"a\r\nb\r\nc\r\n", "b", "B", False, True),
    ("replace_all spread", b"x = 1\ny = x\n" * 60, "x", "xx", True, True),
    ("replace_all adjacent", b"abababab\n" * 9, "ab", "c", True, True),
    ("replace_all once", b"a\nb\nc\n", "b", "B", True, True),
    ("utf-8 multibyte", "caf\u00e9 \u2603\n".encode() * 30, "\u2603", "snow", True, True),
    ("cp1252", "na\u00efve caf\u00e9\nline\n".encode("cp1252") * 5 + b"end\n", "end", "fin", False, True),
    ("long lines", (b"x" * 900 + b"\n") * 5 + b"target\n" + (b"y" * 700 + b"\n") * 4, "target", "T", False, True),
    ("not found", b"a\nb\n", "zzz", "y", False, False),
    ("found twice", b"dup\ndup\n", "dup", "one", False, False),
    ("only with quote normalising", "it\u2019s\n".encode(), "it's", "it is", False, False),
    ("utf-16 is not byte safe", codecs.BOM_UTF16_LE + "hi\n".encode("utf-16-le"), "hi", "ho", False, False),
]


def _reference(raw: bytes, old: str, new: str, replace_all: bool) -> bytes:
    fmt = sniff(raw, at_eof=True)
    text, *_ = _apply_on_text(fmt.decode(raw), fmt, [EditSpec(old, new, replace_all)])
    return fmt.encode(text)


def _states_for(path: Path) -> FileStates:
    states = FileStates()
    states.record_read(path, os.stat(path), complete=True)
    return states


@pytest.mark.parametrize("chunk", [32, streamed.CHUNK], ids=["32-byte chunks", "default chunks"])
@pytest.mark.parametrize("name,raw,old,new,replace_all,streams", CASES, ids=[c[0] for c in CASES])
def test_streamed_equals_in_memory(tmp_path, monkeypatch, chunk, name, raw, old, new, replace_all, streams):
    monkeypatch.setattr(streamed, "CHUNK", chunk)
    path = tmp_path / "f.txt"
    path.write_bytes(raw)
    states = _states_for(path)
    done = streamed.try_streamed_edit(path, old, new, replace_all, _BYTE_SAFE, states, str)
    if done is None:
        # Falling back is always allowed for a needle longer than half a chunk; otherwise only
        # where the table says the in-memory path must decide.
        assert not streams or len(old.encode()) > chunk // 2, name
        assert path.read_bytes() == raw  # nothing written
        return
    assert streams, name
    edit, fmt = done
    written = path.read_bytes()
    assert written == _reference(raw, old, new, replace_all)
    assert edit.size == len(written)
    lo, hi = edit.region
    expected_snippet = snippet(written, lo, hi, encoding=fmt.encoding)
    assert snippet(edit.window, edit.window_lo, edit.window_hi, encoding=fmt.encoding,
                   line_base=edit.line_base) == expected_snippet
    # The state is refreshed: a second edit needs no Read, and the hash matches the content.
    assert states.check(path, os.stat(path)) is None
    assert not [p for p in tmp_path.iterdir() if p.name != "f.txt"]  # no temp file left


def test_line_numbers_from_the_session_index_match_counting(tmp_path):
    raw = MANY * 40  # ~ 300 KB: several index blocks
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(raw)
    b.write_bytes(raw)
    cache = LineIndexCache()
    index = cache.get(b, os.stat(b))
    with open(b, "rb") as f:
        index.extend(f)
    old = "line 223 of the file\nline 224"
    results = []
    for path, indexes in ((a, None), (b, cache)):
        done = streamed.try_streamed_edit(path, old, "EDITED\nline 224", False, _BYTE_SAFE, _states_for(path),
                                          str, line_indexes=indexes)
        assert done is None  # found 40 times: the in-memory path words the error
    old = "line 5 of the file\n" + (MANY[MANY.index(b"line 6 "):]).decode() + "line 1 of the file\nline 2 of"
    for path, indexes in ((a, None), (b, cache)):
        states = _states_for(path)
        if indexes is not None:
            assert indexes.peek(path, os.stat(path)) is index
        edit, fmt = streamed.try_streamed_edit(path, old, "X", True, _BYTE_SAFE, states, str, line_indexes=indexes)
        results.append((path.read_bytes(), snippet(edit.window, edit.window_lo, edit.window_hi,
                                                   encoding=fmt.encoding, line_base=edit.line_base)))
    assert results[0] == results[1]
    assert "\n5\tX" in results[0][1]


def _mutations():
    def in_place(path: Path) -> None:
        with open(path, "r+b") as f:
            f.write(b"Z")
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))

    def append(path: Path) -> None:
        with open(path, "ab") as f:
            f.write(b"appended\n")

    def renamed_over(path: Path) -> None:
        # An editor's own atomic save: a new inode with the same size and even the same mtime.
        st = os.stat(path)
        other = path.with_name("other")
        other.write_bytes(b"Y" * st.st_size)
        os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(other, path)

    def deleted(path: Path) -> None:
        path.unlink()

    return [("in place", in_place, MODIFIED), ("append", append, MODIFIED),
            ("renamed over", renamed_over, MODIFIED), ("deleted", deleted, "was deleted")]


@pytest.mark.parametrize("label,mutate,message", _mutations(), ids=[m[0] for m in _mutations()])
@pytest.mark.parametrize("chunk", [32, streamed.CHUNK], ids=["32-byte chunks", "default chunks"])
def test_file_changed_while_writing_is_not_overwritten(tmp_path, monkeypatch, label, mutate, message, chunk):
    """The change lands after the new content was streamed and synced, just before the rename."""
    monkeypatch.setattr(streamed, "CHUNK", chunk)
    path = tmp_path / "f.txt"
    path.write_bytes(MANY)
    states = _states_for(path)

    def racing_write(p, data, *, before_replace=None, **kw):
        def hook():
            mutate(p)
            before_replace()
        return write_atomic(p, data, before_replace=hook, **kw)

    after: bytes | None = None
    with pytest.raises(EditError, match=message):
        streamed.try_streamed_edit(path, "line 200 of", "LINE 200 OF", False, _BYTE_SAFE, states, str,
                                   write=racing_write)
    after = path.read_bytes() if path.exists() else None
    assert after != _reference(MANY, "line 200 of", "LINE 200 OF", False)  # our edit did not land
    if label == "append":
        assert after == MANY + b"appended\n"  # theirs is kept intact
    assert [p.name for p in tmp_path.iterdir()] == ([] if after is None else ["f.txt"])


def test_file_shrinking_while_copying_is_refused(tmp_path, monkeypatch):
    """A truncation between the scan and the copy: the copy sees a short read and gives up."""
    monkeypatch.setattr(streamed, "CHUNK", 64)
    path = tmp_path / "f.txt"
    path.write_bytes(MANY)
    states = _states_for(path)

    def truncating_write(p, data, **kw):
        os.truncate(p, 100)
        return write_atomic(p, data, **kw)

    with pytest.raises(EditError, match="modified since read"):
        streamed.try_streamed_edit(path, "line 300 of", "X", False, _BYTE_SAFE, states, str, write=truncating_write)
    assert path.read_bytes() == MANY[:100]
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_apply_edits_streams_single_edits_and_reports_size(tmp_path, monkeypatch):
    path = tmp_path / "f.txt"
    path.write_bytes(BOM + MANY)
    calls = []
    real = streamed.try_streamed_edit

    def spy(*a, **kw):
        calls.append(result := real(*a, **kw))
        return result

    monkeypatch.setattr("codebelt.files.editing.try_streamed_edit", spy)
    out = apply_edits(path, [EditSpec("line 10 of", "line ten of")], _states_for(path), str)
    assert calls and calls[0] is not None
    assert out.size == len(path.read_bytes()) == len(BOM + MANY) + 1
    assert path.read_bytes() == BOM + MANY.replace(b"line 10 of", b"line ten of")


@settings(max_examples=120, deadline=None)
@given(parts=st.lists(st.sampled_from(["a", "b", "ab", "\n", "\r\n", "\u00e9", "\u2603", " "]), min_size=1, max_size=60),
       old=st.lists(st.sampled_from(["a", "b", "\n", "\u00e9", "ab"]), min_size=1, max_size=4),
       new=st.lists(st.sampled_from(["", "X", "\n", "\u2603\n"]), max_size=3),
       replace_all=st.booleans(), bom=st.booleans(), chunk=st.sampled_from([16, 24, 64, 4096]))
def test_streamed_property(tmp_path_factory, parts, old, new, replace_all, bom, chunk):
    raw = (BOM if bom else b"") + "".join(parts).encode()
    old_s, new_s = "".join(old), "".join(new)
    if old_s == new_s:
        return
    path = tmp_path_factory.mktemp("streamed") / "f.txt"
    path.write_bytes(raw)
    original = streamed.CHUNK
    streamed.CHUNK = chunk
    try:
        done = streamed.try_streamed_edit(path, old_s, new_s, replace_all, _BYTE_SAFE, _states_for(path), str)
    finally:
        streamed.CHUNK = original
    if done is None:
        assert path.read_bytes() == raw
        return
    edit, fmt = done
    written = path.read_bytes()
    assert written == _reference(raw, old_s, new_s, replace_all)
    lo, hi = edit.region
    assert snippet(edit.window, edit.window_lo, edit.window_hi, encoding=fmt.encoding,
                   line_base=edit.line_base) == snippet(written, lo, hi, encoding=fmt.encoding)
