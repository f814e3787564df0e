"""The terminal renderer (shell/execution/terminal.py): bytes a program wrote on a terminal →
the text a model reads. Cases as data: what was written, in the pieces it arrived in, and what
each read returns."""

from __future__ import annotations

import os
import random

import pytest

from codebelt.shell.execution.terminal import Terminal, TerminalReader

# (name, pieces fed one read apart, what each read returns, whether the last one is a screen)
CASES = [
    ("colours and bold are dropped", [b"\x1b[1;31mred\x1b[0m and \x1b[4mplain\x1b[m\r\n"], ["red and plain\n"], False),
    ("a progress bar redrawn with \\r keeps its last state", [b"10%\r50%\r100%\r\ndone\r\n"], ["100%\ndone\n"], False),
    ("erase to end of line after \\r", [b"downloading foo.tar.gz\r\x1b[Kdone\r\n"], ["done\n"], False),
    ("multi-line progress redrawn with cursor-up", [b"a: 1\r\nb: 2\r\n", b"\x1b[2A\x1b[Ka: 9\r\n\x1b[Kb: 8\r\n"],
     ["a: 1\nb: 2\n", "a: 9\nb: 8\n"], False),
    ("tabs and trailing spaces are kept", [b"all:\r\n\tcc -o x x.c  \r\n"], ["all:\n\tcc -o x x.c  \n"], False),
    ("backspace overwrites", [b"abc\b\bXY\r\n"], ["aXY\n"], False),
    ("wide and combining characters", ["日本語 e\u0301\r\n".encode()], ["日本語 e\u0301\n"], False),
    ("a prompt is continued, not repeated", [b"Python 3\r\n>>> ", b"1+1\r\n2\r\n>>> "], ["Python 3\n>>> ", "1+1\n2\n>>> "], False),
    ("blank lines survive piece boundaries", [b"x\r\n", b"\r\n\r\ny"], ["x\n", "\n\ny"], False),
    ("the alternate screen is shown as a screen", [b"$ less f\r\n\x1b[?1049h\x1b[H\x1b[2Jone\r\ntwo\x1b[24;1H:"],
     ["one\ntwo" + "\n" * 22 + ":"], True),
    ("leaving the alternate screen goes back to lines", [b"\x1b[?1049h\x1b[Hscreen", b"\x1b[?1049lafter\r\n$ "],
     ["screen", "after\n$ "], False),
    ("a cleared and addressed main screen is a screen", [b"\x1b[H\x1b[2Jtop - 10:00\x1b[3;1HPID USER"],
     ["top - 10:00\n\nPID USER"], True),
    ("unknown and private sequences never break it", [b"\x1b[?4m\x1b[>4;2m\x1b]0;title\x07\x1b[38;5;208mok\x1b[0m\r\n"], ["ok\n"], False),
]


@pytest.mark.parametrize("name,pieces,reads,screen", CASES, ids=[c[0] for c in CASES])
def test_rendering(name, pieces, reads, screen):
    term = Terminal(80, 24)
    got = []
    for piece in pieces:
        term.feed(piece)
        shown = term.take()
        got.append(shown.text)
    assert got == reads
    assert shown.screen is screen


def test_the_reads_put_together_are_the_transcript():
    # (a row redrawn after a read is returned again whole, so no redraw here)
    data = b"$ make\r\ncc -c a.c\r\n\x1b[32mok\x1b[0m\r\n\x1b[1m100%\x1b[0m\tdone\r\n$ "
    whole = Terminal()
    whole.feed(data)
    pieces = Terminal()
    text = ""
    for i in range(0, len(data), 3):  # split anywhere, even inside an escape sequence
        pieces.feed(data[i:i + 3])
        text += pieces.take().text
    assert text == whole.take().text == "$ make\ncc -c a.c\nok\n100%\tdone\n$ "


def test_hostile_bytes_never_raise_and_stay_bounded():
    rng = random.Random(7)
    term = Terminal()
    for _ in range(200):
        term.feed(bytes(rng.randrange(256) for _ in range(500)) + b"\x1b[" + str(rng.randrange(10**6)).encode() + b"A")
        term.take()
    term.feed(b"x" * 3_000_000 + b"\r\n")  # one line over the line cap
    assert max(map(len, term.take().text.split("\n"))) == 1 << 20
    assert len(term.lines.lines) <= term.rows + 2


def test_reader_filters_whole_lines_and_keeps_an_unfinished_one(tmp_path):
    from codebelt import linear_regex

    path = tmp_path / "out.log"
    path.write_bytes(b"\x1b[31merr: par")
    reader = TerminalReader(path)
    pattern = linear_regex.compile("err")
    assert reader.read(os.path.getsize(path), False, 1000, pattern)[0] == ""
    with open(path, "ab") as f:
        f.write(b"tial\x1b[0m\r\nok\r\n")
    assert reader.read(os.path.getsize(path), False, 1000, pattern)[0] == "err: partial"


def test_reader_skips_the_middle_of_a_flood_and_says_where_it_is(tmp_path):
    path = tmp_path / "out.log"
    path.write_bytes(b"".join(b"line %d\r\n" % i for i in range(400_000)))
    text, consumed, truncated = TerminalReader(path).read(os.path.getsize(path), True, 20_000)
    assert truncated and consumed == os.path.getsize(path)
    assert "bytes of output skipped; the full output is in" in text and str(path) in text
    assert text.rstrip().endswith("line 399999") and len(text) < 21_000


# PipeText: a terminal's output as a pipe would have carried it (the output file of a background
# task). (name, pieces, the whole text after the end)
PIPE_CASES = [
    ("the terminal's CR LF is one line end", [b"a\r\nb\r\n"], "a\nb\n"),
    ("colours and cursor moves are dropped", [b"\x1b[01;31m\x1b[Khi\x1b[m\x1b[K\r\n\x1b[2A\x1b[H"], "hi\n"),
    ("a progress bar's lone CR stays, as in a pipe", [b"10%\r50%\r100%\r\n"], "10%\r50%\r100%\n"),
    ("a program's own CR LF (CR CR LF on the terminal) stays CR LF", [b"dos\r\r\n"], "dos\r\n"),
    ("tabs and backspaces stay", [b"a\tb\bc\r\n"], "a\tb\bc\n"),
    ("a CR LF split between two pieces", [b"x\r", b"\ny\r"], "x\ny\r"),
    ("UTF-8 split between two pieces", ["é日".encode()[:2], "é日".encode()[2:] + b"\r\n"], "é日\n"),
    ("titles and private sequences are dropped", [b"\x1b]0;title\x07\x1b[?2004hok\x1b[?2004l\r\n"], "ok\n"),
]


@pytest.mark.parametrize("name,pieces,text", PIPE_CASES, ids=[c[0] for c in PIPE_CASES])
def test_pipe_text(name, pieces, text):
    from codebelt.shell.execution.terminal import PipeText

    plain = PipeText()
    assert "".join(plain.feed(p) for p in pieces) + plain.end() == text
