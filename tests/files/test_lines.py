"""LineIndex and paging: every page equals the naive `cat -n`, at any block size."""

from __future__ import annotations

import io
import os

import pytest
from hypothesis import given, settings, strategies as st

from codebelt.files.codec import UTF8, TextFormat
from codebelt.files.lines import (
    LineIndex, LineIndexCache, MAX_LINE_CHARS, count_newlines, read_page, read_page_text,
)


def naive_rows(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace")
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    rows = []
    for n, line in enumerate(lines, 1):
        line = line.removesuffix("\r")
        pieces = [line[i:i + MAX_LINE_CHARS] for i in range(0, len(line), MAX_LINE_CHARS)] or [""]
        for k, piece in enumerate(pieces):
            rows.append(f"{(str(n) if k == 0 else f'{n}.{k}')}\t{piece}")
    return rows


line_text = st.text(alphabet="ab\r é", max_size=12)


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(line_text, max_size=60), trailing=st.booleans(), block=st.sampled_from([1, 3, 16, 64 * 1024]),
       offset=st.integers(1, 70), limit=st.integers(1, 30))
def test_pages_match_naive(tmp_path_factory, lines, trailing, block, offset, limit):
    data = "\n".join(lines).encode() + (b"\n" if trailing and lines else b"")
    path = tmp_path_factory.mktemp("lines") / "f.txt"
    path.write_bytes(data)
    index = LineIndex(path, len(data), block_size=block)
    page = read_page(path, UTF8, index, offset, limit, 10**9)
    rows = naive_rows(data)
    # Rows for lines >= offset: find the first row of line `offset`.
    start = next((i for i, r in enumerate(rows) if r.split("\t")[0].strip() == str(offset)), None)
    if start is None:
        assert page.rows == 0
        assert page.total_lines == len([r for r in rows if "." not in r.split("\t")[0]])
    else:
        assert page.text.split("\n") == rows[start:start + limit]
        more = start + limit < len(rows)
        assert (page.next_offset is not None) == more


def test_long_line_continuation_rows(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text("short\n" + "x" * 12_000 + "\nend\n")
    page = read_page(path, UTF8, LineIndex(path, path.stat().st_size), 1, 100, 10**9)
    numbers = [r.split("\t")[0].strip() for r in page.text.split("\n")]
    assert numbers == ["1", "2", "2.1", "2.2", "3"]
    assert [len(r.split("\t")[1]) for r in page.text.split("\n")] == [5, 5000, 5000, 2000, 3]


def test_continuation_rows_count_against_limit(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text("x" * 12_000 + "\nnext\n")
    page = read_page(path, UTF8, LineIndex(path, path.stat().st_size), 1, 2, 10**9)
    assert page.rows == 2 and page.cut_line == 1 and page.next_offset == 2


def test_budget_cuts_at_line_boundary_and_gives_next_offset(tmp_path):
    path = tmp_path / "many.txt"
    path.write_text("".join(f"line {i:05d} " + "y" * 80 + "\n" for i in range(1, 5001)))
    page = read_page(path, UTF8, LineIndex(path, path.stat().st_size), 1, 5000, 10_000)
    assert page.stopped_by == "budget"
    assert len(page.text) <= 10_000
    assert page.text.split("\n")[-1].split("\t")[1].startswith(f"line {page.end_line:05d}")
    assert page.next_offset == page.end_line + 1


def test_line_longer_than_budget_moves_past_it(tmp_path):
    path = tmp_path / "huge_line.txt"
    path.write_text("z" * 200_000 + "\nafter\n")
    page = read_page(path, UTF8, LineIndex(path, path.stat().st_size), 1, 2000, 20_000)
    assert page.cut_line == 1 and page.next_offset == 2


def test_deep_page_with_small_blocks_and_lazy_scan(tmp_path):
    path = tmp_path / "deep.txt"
    path.write_bytes(b"".join(b"%d\n" % i for i in range(1, 200_001)))
    index = LineIndex(path, path.stat().st_size, block_size=4096)
    page = read_page(path, UTF8, index, 150_000, 3, 10**9)
    assert page.text == "150000\t150000\n150001\t150001\n150002\t150002"
    assert page.total_lines is None or page.total_lines == 200_000
    page = read_page(path, UTF8, index, 199_999, 10, 10**9)
    assert page.text.endswith("200000\t200000") and page.total_lines == 200_000
    assert index.complete and index.total_lines == 200_000


def test_offset_past_end(tmp_path):
    path = tmp_path / "three.txt"
    path.write_text("a\nb\nc\n")
    page = read_page(path, UTF8, LineIndex(path, 6), 10, 5, 10**9)
    assert page.rows == 0 and page.total_lines == 3


def test_crlf_and_invalid_bytes_display(tmp_path):
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"one\r\ntw\xffo\r\n")
    fmt = TextFormat("utf-8", b"", "\r\n")
    page = read_page(path, fmt, LineIndex(path, 11), 1, 10, 10**9)
    assert page.text == "1\tone\n2\ttw\ufffdo"


def test_utf16_paging():
    text = "".join(f"ligne {i}\r\n" for i in range(1, 11))
    page = read_page_text(text, 4, 2, 10**9)
    assert page.text == "4\tligne 4\n5\tligne 5" and page.total_lines == 10


def test_cache_reuses_index_and_drops_changed_files(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("a\nb\n")
    cache = LineIndexCache()
    first = cache.get(path, os.stat(path))
    assert cache.get(path, os.stat(path)) is first
    path.write_text("a\nb\nc\n")
    assert cache.get(path, os.stat(path)) is not first
    assert len(cache._items) == 1


def test_cache_is_bounded(tmp_path):
    cache = LineIndexCache()
    for i in range(cache.capacity + 5):
        p = tmp_path / f"f{i}"
        p.write_text("x")
        cache.get(p, os.stat(p))
    assert len(cache._items) == cache.capacity


@pytest.mark.parametrize("length", [5000, 5001, 12_000, 300_000, 700_001])
def test_lines_longer_than_a_read_chunk_stream_correctly(tmp_path, length):
    data = b"first\n" + ("\u00e9" * length).encode() + b"\r\nlast"
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    page = read_page(path, UTF8, LineIndex(path, len(data)), 1, 10**6, 10**9)
    assert page.text.split("\n") == naive_rows(data)
    assert page.next_offset is None and page.total_lines == 3


# count_newlines takes a memchr path for sparse newlines and falls back to a plain count for dense
# ones (the cap is one newline per 48 bytes): both sides of that cap, and blocks that change density.
@pytest.mark.parametrize("pattern", [
    b"", b"\n", b"x" * 47 + b"\n", b"x" * 48 + b"\n", b"x" * 46 + b"\n", b"\n\n\n", b"abc",
    b"x" * 200 + b"\n", b"\r\n", b"x" * 5000 + b"\n" * 3000,
])
@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 64 * 1024, 300_001])
def test_count_newlines_matches_count(pattern, size):
    data = (pattern * (size // max(len(pattern), 1) + 1))[:size] if pattern else b"y" * size
    for buf in (data, bytearray(data)):
        assert count_newlines(buf) == data.count(b"\n")
        for start, end in [(0, size), (size // 3, size), (1, max(size - 7, 1)), (size // 2, size // 2)]:
            end = max(start, end)
            assert count_newlines(buf, start, end) == data.count(b"\n", start, end)


@settings(max_examples=40, deadline=None)
@given(runs=st.lists(st.tuples(st.integers(1, 120), st.integers(0, 3000)), min_size=1, max_size=12),
       cut=st.integers(0, 10_000))
def test_count_newlines_mixed_density(runs, cut):
    # runs of lines of one length: dense and sparse regions inside one block
    data = b"".join((b"z" * (length - 1) + b"\n") * count for length, count in runs)
    start = min(cut, len(data))
    assert count_newlines(data, start, len(data)) == data.count(b"\n", start)
