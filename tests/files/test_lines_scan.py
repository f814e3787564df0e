"""LineIndex's scan: the read-ahead thread gives exactly the index a plain count gives, stops with
the scan (also on cancel and error), and handles a file that changes under it as the serial scan does.

The module's sizes are shrunk per case (read units of a few blocks, cancellation every few KB), so
files of a few hundred KB go through many hand-offs."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest

import codebelt.files.lines as lines
from codebelt.files.lines import LineIndex


def scan_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "codebelt-line-scan"]


def random_text(seed: int, size: int) -> bytes:
    """Lines of mixed lengths: runs of empty lines, short ones, and lines longer than a block."""
    rnd = random.Random(seed)
    out, n = [], 0
    while n < size:
        length = rnd.choice([0, 0, 1, 5, 40, 47, 48, 100, 3000, 70_000])
        line = bytes(rnd.choice(b"abc \r\xc3\xa9") for _ in range(min(length, 64))) * (length // 64 + 1)
        out.append(line[:length] + b"\n")
        n += length + 1
    data = b"".join(out)[:size]
    return data


def expected(data: bytes, block: int, upto: int | None = None) -> dict:
    """The index a plain count gives: a checkpoint at every block start, newlines before it."""
    end = len(data) if upto is None else upto
    starts = list(range(0, end, block)) or [0]
    before, n = [], 0
    for o in starts:
        before.append(n)
        n += data.count(b"\n", o, min(o + block, end))
    return {"offsets": starts, "lines_before": before, "scanned": end,
            "newlines": data[:end].count(b"\n"), "ends_with_newline": bool(end) and data[end - 1] == 0x0A}


def state(index: LineIndex) -> dict:
    return {"offsets": list(index.offsets), "lines_before": list(index.lines_before), "scanned": index.scanned,
            "newlines": index.newlines, "ends_with_newline": index.ends_with_newline}


@pytest.fixture
def small_units(monkeypatch):
    """Read-ahead from the first byte, in units of a few blocks, cancellation checked often."""
    def use(block: int, per_read: int = 3, ahead: int = 2, overlap_after: int = 0, chunk: int = 8192):
        monkeypatch.setattr(lines, "OVERLAP_AFTER", overlap_after)
        monkeypatch.setattr(lines, "READ_UNIT", block * per_read)
        monkeypatch.setattr(lines, "READ_AHEAD", ahead)
        monkeypatch.setattr(lines, "CHUNK_SIZE", chunk)
    return use


# (block size, file size, buffers per read, groups ahead, bytes read serially first)
SCANS = [
    (1, 0, 3, 2, 0),  # empty file
    (1, 1, 3, 2, 0),
    (1, 2_000, 3, 2, 0),  # one-byte blocks: 64 buffers per preadv at most
    (3, 7_001, 5, 2, 0),
    (7, 50_000, 1, 1, 0),  # one buffer, one group: the reader waits for every block
    (4096, 4096 * 9, 3, 2, 0),  # ends exactly on a group boundary
    (4096, 4096 * 9 + 1, 3, 2, 0),  # one byte into a new group
    (4096, 300_000, 4, 3, 10_000),  # serial first, then the thread (mid-block hand-over)
    (4096, 300_000, 4, 3, 10**9),  # serial only: the thread never starts
    (65_536, 1_000_003, 16, 3, 0),
    (256 * 1024, 3_000_000, 4, 3, 1024 * 1024),  # the real sizes
]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("block,size,per_read,ahead,overlap_after", SCANS)
def test_index_equals_plain_count(tmp_path, small_units, seed, block, size, per_read, ahead, overlap_after):
    small_units(block, per_read, ahead, overlap_after)
    data = random_text(seed, size)
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    index = LineIndex(path, len(data), block_size=block)
    with open(path, "rb") as f:
        index.extend(f, cancel=lambda: None)
    assert state(index) == expected(data, block)
    assert index.complete and index.size == len(data)
    assert not scan_threads()


@pytest.mark.parametrize("block,per_read,overlap_after", [(1, 3, 0), (16, 4, 0), (4096, 3, 0), (4096, 3, 20_000)])
@pytest.mark.parametrize("until", [1, 17, 500, 2_000, 10**9])
def test_lazy_scan_stops_where_the_serial_scan_stops(tmp_path, small_units, monkeypatch, block, per_read,
                                                     overlap_after, until):
    data = random_text(7, 120_000 if block > 1 else 8_000)
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    results = []
    for overlap in (False, True):
        monkeypatch.setattr(lines, "_CAN_OVERLAP", overlap)
        small_units(block, per_read, 2, overlap_after)
        index = LineIndex(path, len(data), block_size=block)
        with open(path, "rb") as f:
            index.extend(f, until_newlines=until)
            first = state(index)
            index.extend(f)  # and on to the end from there
        results.append((first, state(index), index.line_start(open(path, "rb"), min(until, 100))))
        assert not scan_threads()
    assert results[0] == results[1]
    assert results[1][1] == expected(data, block)


def _changed_during_scan(path: Path, data: bytes, change: str):
    """A cancel callback (called every CHUNK_SIZE scanned) that changes the file on its second call."""
    calls = []

    def cancel():
        calls.append(1)
        if len(calls) != 2:
            return
        if change == "shrink":
            os.truncate(path, len(data) // 2)
        elif change == "grow":
            with open(path, "ab") as f:
                f.write(b"more\n" * 50_000)
        elif change == "shrink then grow":  # cut and written back: a read in between reads short
            os.truncate(path, len(data) // 2)
            with open(path, "ab") as f:
                f.write(data[len(data) // 2:])
    return cancel


# (change, block size): how the file changes after ~2 cancellation checks, and what must hold
CHANGES = [("shrink", 4096), ("shrink", 3), ("grow", 4096), ("grow", 5), ("shrink then grow", 4096)]


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("change,block", CHANGES)
def test_file_changing_during_the_scan(tmp_path, small_units, monkeypatch, overlap, change, block):
    monkeypatch.setattr(lines, "_CAN_OVERLAP", overlap)
    small_units(block, 4, 2, 0, chunk=16_384)
    data = random_text(3, 200_000)
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    index = LineIndex(path, len(data), block_size=block)
    with open(path, "rb") as f:
        index.extend(f, cancel=_changed_during_scan(path, data, change))
    assert not scan_threads()
    assert index.complete
    if change == "grow":
        # the index covers the file as it was when indexed, never the bytes added after
        assert index.size == len(data)
    elif change == "shrink":
        # the cut is past what was read ahead by then: the scan ends where the file now ends
        assert index.size == len(data) // 2
    else:
        # ends at the cut if a read fell between the cut and the rewrite, else at the old end
        assert len(data) // 2 <= index.size <= len(data)
    assert index.scanned == index.size
    assert state(index) == expected(data, block, index.size)


def test_file_shorter_than_its_index_says(tmp_path, small_units):
    # the size taken by stat before the scan; the file was cut in between
    small_units(4096)
    data = random_text(5, 100_000)
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    for claimed in (len(data) + 1, len(data) + 4096 * 3, len(data) * 3):
        index = LineIndex(path, claimed, block_size=4096)
        with open(path, "rb") as f:
            index.extend(f)
        assert state(index) == expected(data, 4096) and index.size == len(data) and index.complete
        assert index.total_lines == data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    assert not scan_threads()


class Cancelled(Exception):
    pass


@pytest.mark.parametrize("block,per_read,ahead", [(1, 3, 2), (4096, 3, 2), (4096, 1, 1), (4096, 8, 4)])
@pytest.mark.parametrize("at_call", [1, 3])
def test_cancel_mid_scan_ends_the_reader_and_keeps_the_index_usable(tmp_path, small_units, block, per_read,
                                                                   ahead, at_call):
    small_units(block, per_read, ahead, 0, chunk=8192)
    data = random_text(11, 150_000 if block > 1 else 30_000)
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    index = LineIndex(path, len(data), block_size=block)
    calls = []

    def cancel():
        calls.append(1)
        if len(calls) == at_call:
            raise Cancelled

    with open(path, "rb") as f:
        with pytest.raises(Cancelled):
            index.extend(f, cancel=cancel)
        assert not scan_threads()
        stopped = state(index)
        assert stopped == expected(data, block, index.scanned)
        assert 8192 * at_call <= index.scanned < len(data) and index.scanned % block == 0
        index.extend(f)  # a later call goes on from the last counted block
    assert state(index) == expected(data, block)
    assert not scan_threads()


@pytest.mark.parametrize("fail_at", [1, 4])
def test_read_error_reaches_the_caller_and_ends_the_reader(tmp_path, small_units, monkeypatch, fail_at):
    small_units(4096)
    data = random_text(13, 200_000)
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    real = os.preadv
    calls = []

    def failing(fd, buffers, offset):
        calls.append(offset)
        if len(calls) == fail_at:
            raise OSError(5, "Input/output error")
        return real(fd, buffers, offset)

    monkeypatch.setattr(lines.os, "preadv", failing)
    index = LineIndex(path, len(data), block_size=4096)
    with open(path, "rb") as f:
        with pytest.raises(OSError, match="Input/output error"):
            index.extend(f)
    assert not scan_threads()
    assert state(index) == expected(data, 4096, index.scanned) and index.scanned < len(data)


def test_reader_memory_is_bounded(tmp_path, small_units, monkeypatch):
    # the thread reads into READ_AHEAD groups of buffers, reused, never more than that ahead
    small_units(4096, per_read=2, ahead=2, overlap_after=0, chunk=4096)
    data = random_text(17, 400_000)
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    real = os.preadv
    reads: list[int] = []
    buffers: set[int] = set()

    def recording(fd, group, offset):
        reads.append(offset)
        buffers.update(id(b) for b in group)
        assert all(len(b) == 4096 for b in group)
        return real(fd, group, offset)

    monkeypatch.setattr(lines.os, "preadv", recording)
    index = LineIndex(path, len(data), block_size=4096)
    ahead = []
    with open(path, "rb") as f:
        index.extend(f, cancel=lambda: ahead.append(max(reads) + 2 * 4096 - index.scanned))
    assert len(reads) == -(-len(data) // (2 * 4096)) and len(buffers) == 2 * 2
    assert ahead and max(ahead) <= 2 * 2 * 4096 + 4096
    assert state(index) == expected(data, 4096)


def test_no_thread_to_be_had_scans_here(tmp_path, small_units, monkeypatch):
    # a process at its thread limit: Thread.start raises; the scan reads the rest itself
    small_units(4096)
    data = random_text(19, 100_000)
    path = tmp_path / "f.txt"
    path.write_bytes(data)

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(lines.threading.Thread, "start", refuse)
    index = LineIndex(path, len(data), block_size=4096)
    with open(path, "rb") as f:
        index.extend(f)
    assert state(index) == expected(data, 4096) and index.complete
