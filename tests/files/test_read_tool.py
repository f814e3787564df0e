"""Read through a Session: text pages, budget, empty/offset/binary/dir/missing, big and sparse files."""

from __future__ import annotations

import codecs
import os

import pytest

from codebelt.tools._services import line_indexes as LineIndexCache


def read(session, **inp):
    return session.call("Read", inp)


def test_cat_n_format_and_data(session, ws):
    (ws / "a.py").write_text("import os\n\nprint(os.name)\n")
    r = read(session, file_path=str(ws / "a.py"))
    assert not r.is_error
    # Claude Code's rows: the number, a tab; a final line break is followed by an empty last row
    assert r.text == "1\timport os\n2\t\n3\tprint(os.name)\n4\t"
    f = r.data["file"]
    assert (f["filePath"], f["numLines"], f["startLine"], f["totalLines"], f["truncated"]) == ("a.py", 3, 1, 3, False)


@pytest.mark.parametrize("offset,limit,first,last", [
    (None, None, 1, 10), (0, 3, 1, 3), ("4", "2", 4, 5), (9, 100, 9, 10),
])
def test_offset_and_limit(session, ws, offset, limit, first, last):
    (ws / "t.txt").write_text("".join(f"L{i}\n" for i in range(1, 11)))
    inp = {"file_path": "t.txt"}
    if offset is not None:
        inp["offset"] = offset
    if limit is not None:
        inp["limit"] = limit
    r = session.call("Read", inp)
    rows = [row for row in r.text.split("\n") if row != "11\t"]
    assert rows[0] == f"{first}\tL{first}" and rows[-1] == f"{last}\tL{last}"
    if last < 10:  # the caller's own limit: no paging note (as Claude Code), the data says more remain
        assert "offset=" not in r.text and r.data["file"]["truncated"]


def test_offset_past_end_gives_line_count(session, ws):
    (ws / "t.txt").write_text("a\nb\nc\n")
    r = read(session, file_path="t.txt", offset=50)
    assert not r.is_error
    assert "shorter than the provided offset (50)" in r.text and "has 4 lines" in r.text  # as Claude Code counts


def test_empty_file_reminder(session, ws):
    (ws / "empty.txt").write_bytes(b"")
    r = read(session, file_path="empty.txt")
    assert r.text == "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
    assert not r.is_error


def test_token_budget_notice_never_error(make_session, ws):
    s = make_session(settings={"read": {"maxTokens": 1000}})
    (ws / "big.txt").write_text("".join(f"row {i} " + "w" * 60 + "\n" for i in range(1, 1001)))
    r = s.call("Read", {"file_path": "big.txt"})
    assert not r.is_error
    body, notice = r.text.split("\n\n[Output truncated")
    assert len(body) <= 4000
    nxt = r.data["file"]["nextOffset"]
    assert f"offset={nxt}" in notice and "token read budget" in notice
    assert body.split("\n")[-1].startswith(f"{nxt - 1}\t")
    # Continuing from the offset picks up exactly the next line.
    r2 = s.call("Read", {"file_path": "big.txt", "offset": nxt})
    assert r2.text.startswith(f"{nxt}\trow {nxt} ")


def test_long_lines_split_into_continuation_rows(session, ws):
    (ws / "min.js").write_text("a" * 11_000 + "\nb\n")
    r = read(session, file_path="min.js")
    assert [row.split("\t")[0].strip() for row in r.text.split("\n")] == ["1", "1.1", "1.2", "2", "3"]


def test_crlf_bom_utf16_are_shown_plainly(session, ws):
    (ws / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (ws / "bom.txt").write_bytes(codecs.BOM_UTF8 + b"x\n")
    (ws / "u16.txt").write_bytes(codecs.BOM_UTF16_LE + "h\u00e9\r\nyo\r\n".encode("utf-16-le"))
    assert read(session, file_path="crlf.txt").text == "1\tone\n2\ttwo\n3\t"
    assert read(session, file_path="bom.txt").text == "1\tx\n2\t"
    r = read(session, file_path="u16.txt")
    assert r.text == "1\th\u00e9\n2\tyo\n3\t" and r.data["file"]["encoding"] == "utf-16-le"


def test_invalid_utf8_is_replaced_with_a_note(session, ws):
    (ws / "bad.txt").write_bytes("d\u00e9j\u00e0 ".encode() + b"\xff\xfe!\n")
    r = read(session, file_path="bad.txt")
    assert not r.is_error
    assert "\ufffd\ufffd!" in r.text and "not valid UTF-8" in r.text


def test_deep_page_uses_cached_index(session, ws):
    (ws / "deep.txt").write_bytes(b"".join(b"line %d\n" % i for i in range(1, 300_001)))
    r = read(session, file_path="deep.txt", offset=250_000, limit=3)
    assert r.text == "250000\tline 250000\n250001\tline 250001\n250002\tline 250002"
    cache = session.service(LineIndexCache)
    misses = cache.misses
    r = read(session, file_path="deep.txt", offset=250_010, limit=1)
    assert r.text.startswith("250010\tline 250010")
    assert cache.misses == misses and cache.hits >= 1


def test_two_gigabyte_sparse_file_reads_a_page(session, ws):
    path = ws / "huge.log"
    with open(path, "wb") as f:
        f.write(b"".join(b"entry %d\n" % i for i in range(1, 1001)))
        f.truncate(2 * 1024**3)  # a hole of NULs after the text: 2 GB on paper, nothing on disk
    r = read(session, file_path="huge.log", offset=998, limit=3)
    assert not r.is_error
    assert r.text.startswith("998\tentry 998\n999\tentry 999\n1000\tentry 1000")
    index = next(iter(session.service(LineIndexCache)._items.values()))
    assert index.scanned < 64 * 1024 * 1024  # the page did not scan the whole file


def test_binary_refused_with_type_and_size(session, ws):
    (ws / "prog").write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 3065)
    r = read(session, file_path="prog")
    assert r.is_error and r.text.startswith("<tool_use_error>This tool cannot read binary files.")


def test_directory_refused_with_hint(session, ws):
    (ws / "src").mkdir()
    r = read(session, file_path="src")
    assert r.is_error and r.text == f"EISDIR: illegal operation on a directory, read '{ws / 'src'}'"


@pytest.mark.parametrize("asked,suggested", [
    ("confg.py", "config.py"), ("config.yml", "config.yaml"), ("srcc/main.py", "src/main.py"),
])
def test_missing_file_did_you_mean(session, ws, asked, suggested):
    (ws / "config.py").write_text("")
    (ws / "config.yaml").write_text("")
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("")
    r = read(session, file_path=asked)
    assert r.is_error and "does not exist" in r.text and f"Did you mean {suggested}" in r.text


def test_missing_file_without_near_names(session, ws):
    (ws / "zzz.txt").write_text("")
    r = read(session, file_path="completely_different.md")
    assert r.is_error and "Did you mean" not in r.text


def test_fifo_refused_without_hanging(session, ws):
    os.mkfifo(ws / "pipe")
    r = read(session, file_path="pipe")
    assert r.is_error and "not a regular file" in r.text


@pytest.mark.parametrize("inp,msg", [
    ({}, "file_path"),
    ({"file_path": "a.txt", "offset": "abc"}, "offset"),
    ({"file_path": "a.txt", "bogus": 1}, "bogus"),
])
def test_bad_read_input(session, ws, inp, msg):
    (ws / "a.txt").write_text("x\n")
    r = session.call("Read", inp)
    assert r.is_error and msg in r.text


@pytest.mark.parametrize("extra", [{"limit": 0}, {"offset": -3}, {"limit": -1}, {"pages": "1"}])
def test_out_of_range_values_are_as_if_not_given(session, ws, extra):
    """As Claude Code: a limit below 1, a negative offset, pages for a text file are ignored."""
    (ws / "a.txt").write_text("x\n")
    r = session.call("Read", {"file_path": "a.txt", **extra})
    assert not r.is_error and r.text == "1\tx\n2\t"


def test_read_outside_workspace_is_refused(session, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("s3cret")
    r = read(session, file_path=str(outside))
    assert r.is_error and "s3cret" not in r.text and "outside" in r.text


def test_read_tool_flags(session):
    spec = session.tool("Read").spec()
    assert spec["read_only"] and spec["concurrency_safe"] and spec["max_result_chars"] is None
    assert set(spec["input_schema"]["properties"]) == {"file_path", "offset", "limit", "pages", "allow_large"}


def test_results_directory_is_readable(session):
    evicted = session.results_dir / "result-1.txt"
    evicted.write_text("saved output\n")
    r = read(session, file_path=str(evicted))
    assert not r.is_error and r.text == "1\tsaved output\n2\t"


async def test_parallel_reads_share_one_index(session, ws):
    (ws / "p.txt").write_bytes(b"".join(b"row %d\n" % i for i in range(1, 50_001)))
    calls = [("Read", {"file_path": "p.txt", "offset": off, "limit": 2}) for off in (10, 20_000, 40_000, 49_999)]
    results = await session.call_many(calls)
    assert [r.text.split("\n")[0] for r in results] == [
        "10\trow 10", "20000\trow 20000", "40000\trow 40000", "49999\trow 49999"]
    assert len(session.service(LineIndexCache)._items) == 1
