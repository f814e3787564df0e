"""What a program on a pseudo-terminal showed, as text a model can read.

The bytes a terminal program writes are escape sequences as much as text: colours, cursor
moves, line erasures, carriage returns that redraw a progress bar, a full-screen program's
whole screen. They are parsed by pyte (a VT100/xterm emulator: the parsing is not written by
hand here) and rendered two ways:

- a **line program** (a shell, a REPL, a build) as the lines it printed since the last read:
  an unbounded-height view without wrapping, so `\\r` redraws, `\\b`, erasures and cursor moves
  up (multi-line progress) leave the final text and nothing of the escapes;
- a **full-screen program** (less, vim, top: the alternate screen, or a cleared and addressed
  screen) as its current screen, rows x columns, trailing blanks trimmed.

`Terminal.take()` returns what is new since the previous call. Memory is bounded: the line
view keeps only the rows a cursor can still move back to, and a line is capped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyte
from wcwidth import wcwidth

from .spool import CHUNK, read_range

if TYPE_CHECKING:
    from ...linear_regex import LinearPattern

ALT_SCREEN_MODES = (47, 1047, 1049)  # xterm's alternate screen (private modes)
MAX_LINE = 1 << 20  # characters kept per line in the line view; the rest of a longer line is dropped
SCREEN_FEED = 1 << 14  # bytes a screen is rebuilt from at most (the end of what arrived)
TAB = 8


@dataclass
class Rendered:
    text: str
    screen: bool  # the text is the current screen of a full-screen program, not new lines


class _Screen(pyte.Screen):
    """pyte's screen, plus xterm's alternate screen: entering it saves the main screen,
    leaving it restores it (pyte only records the mode)."""

    def __init__(self, columns: int, lines: int):
        super().__init__(columns, lines)
        self.alternate = False
        self._saved: Any = None

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private") and any(m in ALT_SCREEN_MODES for m in modes) and not self.alternate:
            self._saved = ({y: dict(line) for y, line in self.buffer.items()}, self.cursor.x, self.cursor.y)
            self.alternate = True
            self.erase_in_display(2)
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        super().reset_mode(*modes, **kwargs)
        if kwargs.get("private") and any(m in ALT_SCREEN_MODES for m in modes) and self.alternate:
            self.alternate = False
            self.erase_in_display(2)
            if self._saved is not None:
                buffer, x, y = self._saved
                for row, line in buffer.items():
                    self.buffer[row].update(line)
                self.cursor.x, self.cursor.y = x, y
                self._saved = None
            self.dirty.update(range(self.lines))


class _Lines:
    """The line view: every line the program wrote, as an unbounded-height screen without
    wrapping. Rows are kept from `base` on (older ones were taken and can no longer be
    reached by the cursor); `dirty` is the first row changed since the last take."""

    def __init__(self, rows: int):
        self.rows = rows
        self.lines: list[list[str]] = [[]]
        self.base = 0  # absolute number of lines[0]
        self.y = 0  # cursor row, index into lines
        self.x = 0
        self.dirty: int | None = None  # index of the first row written since the last take
        self.taken_prefix = ""  # what the last take returned of the row it ended on
        self.taken_row: int | None = None  # absolute row the last take ended on
        self.alternate = False
        self.screen_ops = 0  # addressing or clearing the whole screen since the last take

    # -- pyte events -----------------------------------------------------------------------
    def __getattr__(self, name: str):  # events the line view has no use for (colours, titles …)
        if name.startswith("__"):
            raise AttributeError(name)
        return _ignore

    def _touch(self) -> None:
        if self.dirty is None or self.y < self.dirty:
            self.dirty = self.y

    def draw(self, text: str, *_: Any, **__: Any) -> None:
        if self.alternate:
            return
        line = self.lines[self.y]
        if text.isascii():  # one column per character: whole slices, not a loop per character
            room = MAX_LINE - self.x
            if room <= 0:
                return
            text = text[:room]
            if self.x > len(line):
                line.extend(" " * (self.x - len(line)))
            line[self.x:self.x + len(text)] = text
            self.x += len(text)
            self._touch()
            return
        for ch in text:
            width = wcwidth(ch)
            if width == 0 and line and self.x > 0:  # a combining mark joins the character before it
                line[self.x - 1] += ch
                continue
            if width < 1:
                continue
            if self.x >= MAX_LINE:
                break
            if self.x > len(line):
                line.extend(" " * (self.x - len(line)))
            if self.x < len(line):
                line[self.x] = ch
            else:
                line.append(ch)
            self.x += 1
            if width == 2:  # a wide character covers two columns: the second is a placeholder
                if self.x < len(line):
                    line[self.x] = ""
                else:
                    line.append("")
                self.x += 1
        self._touch()

    def linefeed(self, *_: Any, **__: Any) -> None:
        if self.alternate:
            return
        self._touch()  # the row it ends is part of what was written, empty or not
        self.y += 1
        if self.y == len(self.lines):
            self.lines.append([])
        self.x = 0  # the pty turns "\n" into "\r\n" (onlcr); a raw LF keeps the column on a real
        # terminal, but a line view that keeps it would indent text that nobody sees indented
        self._touch()

    index = linefeed

    def carriage_return(self, *_: Any, **__: Any) -> None:
        self.x = 0

    def backspace(self, *_: Any, **__: Any) -> None:
        self.x = max(0, self.x - 1)

    def tab(self, *_: Any, **__: Any) -> None:
        stop = min(MAX_LINE, (self.x // TAB + 1) * TAB)
        line = self.lines[self.y]
        if self.x == len(line) and not self.alternate:
            # at the end of the line the tab itself is kept (a Makefile read through a terminal
            # must still have its tabs), its other columns as empty cells
            line.append("\t")
            line.extend("" for _ in range(stop - self.x - 1))
            self._touch()
        self.x = stop

    def cursor_back(self, count: int | None = None, *_: Any, **__: Any) -> None:
        self.x = max(0, self.x - (count or 1))

    def cursor_forward(self, count: int | None = None, *_: Any, **__: Any) -> None:
        self.x = min(MAX_LINE, self.x + (count or 1))

    def cursor_to_column(self, column: int | None = None, *_: Any, **__: Any) -> None:
        self.x = max(0, (column or 1) - 1)

    def cursor_up(self, count: int | None = None, *_: Any, **__: Any) -> None:
        self.y = max(0, self.y - (count or 1))
        self._touch()

    cursor_up1 = cursor_up

    def cursor_down(self, count: int | None = None, *_: Any, **__: Any) -> None:
        self.y += count or 1
        while self.y >= len(self.lines):
            self.lines.append([])
        self._touch()

    cursor_down1 = cursor_down

    def erase_in_line(self, how: int = 0, private: bool = False, *_: Any, **__: Any) -> None:
        if self.alternate:
            return
        line = self.lines[self.y]
        if how == 0:
            del line[self.x:]
        elif how == 1:
            line[: self.x + 1] = [" "] * min(len(line), self.x + 1)
        else:
            line.clear()
        self._touch()

    def delete_characters(self, count: int | None = None, *_: Any, **__: Any) -> None:
        del self.lines[self.y][self.x: self.x + (count or 1)]
        self._touch()

    def erase_characters(self, count: int | None = None, *_: Any, **__: Any) -> None:
        line = self.lines[self.y]
        for i in range(self.x, min(len(line), self.x + (count or 1))):
            line[i] = " "
        self._touch()

    def insert_characters(self, count: int | None = None, *_: Any, **__: Any) -> None:
        line = self.lines[self.y]
        if self.x < len(line):
            line[self.x:self.x] = [" "] * (count or 1)
            del line[MAX_LINE:]
        self._touch()

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        if self.alternate:
            return
        if how == 0:  # below the cursor: progress blocks being redrawn
            del self.lines[self.y][self.x:]
            del self.lines[self.y + 1:]
            self._touch()
        else:
            self.screen_ops += 1

    def _addressed(self, *args: Any, **kwargs: Any) -> None:
        # addressing the main screen (not the alternate one, which is a screen anyway): the
        # program draws a screen rather than writing lines (top, watch, clear)
        if not self.alternate:
            self.screen_ops += 1

    cursor_position = cursor_to_line = reverse_index = _addressed

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private") and any(m in ALT_SCREEN_MODES for m in modes):
            self.alternate = True

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private") and any(m in ALT_SCREEN_MODES for m in modes):
            self.alternate = False

    # -- reading -----------------------------------------------------------------------------
    def take(self, partial: bool = True) -> str:
        """The text written since the last take: the rows from the first one changed, the row a
        previous take ended on only from where that take stopped when it was merely continued.
        `partial=False`: complete lines only; the unfinished last row stays for the next take."""
        if self.dirty is None:
            return ""
        end = len(self.lines) if partial else len(self.lines) - 1
        if end <= self.dirty:
            return ""
        rows = [self._row_text(i) for i in range(self.dirty, end)]
        if not partial:
            rows.append("")  # the lines taken end with their newline
        first_abs = self.base + self.dirty
        if first_abs == self.taken_row and rows:
            # the row was continued: only what follows the part already returned is new (a
            # prompt's trailing space, returned while the cursor stood after it, may be gone)
            for prefix in (self.taken_prefix, self.taken_prefix.rstrip()):
                if rows[0].startswith(prefix):
                    rows[0] = rows[0][len(prefix):]
                    break
        # the cursor's own row is unfinished: it is returned as it stands, and continued later
        last = end - 1 if partial else end
        if rows and not rows[-1] and len(rows) > 1 and (not partial or self.y == len(self.lines) - 1):
            rows.pop()  # a final newline: the text ends with it
            text = "\n".join(rows) + "\n"
        else:
            text = "\n".join(rows)
        self.taken_row = self.base + last
        self.taken_prefix = self._row_text(last) if last < len(self.lines) and partial else ""
        self.dirty = None if partial else len(self.lines) - 1
        self._trim()
        return text

    def _row_text(self, i: int) -> str:
        """A row as drawn: characters written stay, trailing spaces included; cells only skipped
        over by the cursor are not text."""
        return "".join(self.lines[i])

    def _trim(self) -> None:
        # Only the rows a cursor can still move back to are kept (a screen's height).
        drop = max(0, min(len(self.lines) - self.rows, self.y - self.rows))
        if drop:
            del self.lines[:drop]
            self.base += drop
            self.y -= drop


def _ignore(*args: Any, **kwargs: Any) -> None:
    return None


class _Guarded:
    """A listener whose events never raise: a program's output is arbitrary bytes, and a
    sequence the emulator does not expect (a private flag on SGR, a parameter out of range) is
    dropped. `direct`: events the listener takes as they come (they accept anything)."""

    def __init__(self, listener: Any, direct: tuple[str, ...] = ()):
        self._listener = listener
        self._direct = direct

    def __getattr__(self, name: str):
        event = getattr(self._listener, name, _ignore)
        if name in self._direct:
            setattr(self, name, event)
            return event

        def guarded(*args: Any, **kwargs: Any) -> None:
            try:
                event(*args, **kwargs)
            except Exception:  # noqa: BLE001
                if kwargs:
                    try:
                        event(*args)
                    except Exception:  # noqa: BLE001
                        pass

        setattr(self, name, guarded)
        return guarded


class Terminal:
    """Feed it a program's output bytes; `take()` says what is new, as text.

    The line view sees every byte (its events are cheap). The screen, whose emulation costs
    about a microsecond per byte, is fed at each take with what arrived since — at most the
    last SCREEN_FEED bytes, on a fresh screen when more arrived: a full-screen program redraws
    what it shows, and a line program's screen is never shown."""

    def __init__(self, columns: int = 80, rows: int = 24):
        self.columns = columns
        self.rows = rows
        self.screen = _Screen(columns, rows)
        self.lines = _Lines(rows)
        self._stream = pyte.ByteStream(self.lines)  # type: ignore[arg-type]  # its events take any arguments
        self._stream.use_utf8 = True
        self._screen_stream = self._new_screen_stream()
        self._pending = bytearray()
        self._overflowed = False

    def _new_screen_stream(self) -> pyte.ByteStream:
        stream = pyte.ByteStream(_Guarded(self.screen))  # type: ignore[arg-type]
        stream.use_utf8 = True
        return stream

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self._stream.feed(data)
        self._pending += data
        if len(self._pending) > SCREEN_FEED:
            del self._pending[:len(self._pending) - SCREEN_FEED]
            self._overflowed = True

    def _update_screen(self) -> None:
        """Bring the screen up to date: only when it is shown (a line program's never is)."""
        if self._overflowed:
            self.screen = _Screen(self.columns, self.rows)
            self._screen_stream = self._new_screen_stream()
            self._overflowed = False
        if self._pending:
            self._screen_stream.feed(bytes(self._pending))
            self._pending.clear()

    @property
    def full_screen(self) -> bool:
        """Whether a full-screen program owns the terminal now (the alternate screen)."""
        return self.lines.alternate

    def take(self, partial: bool = True) -> Rendered:
        """What is new since the last take. A full-screen program (on the alternate screen now,
        or one that cleared or addressed the screen since) is shown as its screen; anything
        else as the lines it wrote (`partial=False`: complete lines only)."""
        screen = self.lines.alternate or self.lines.screen_ops > 0
        self.lines.screen_ops = 0
        new_lines = self.lines.take(partial or screen)
        if screen:
            return Rendered(self.screen_text(), True)
        return Rendered(new_lines, False)

    def screen_text(self) -> str:
        self._update_screen()
        # pyte's own `display` asserts on cells a hostile sequence can leave empty: read the
        # cells directly (a wide character's second cell is empty, so it joins to nothing)
        screen = self.screen
        rows = ["".join(screen.buffer[y][x].data for x in range(screen.columns)).rstrip()
                for y in range(screen.lines)]
        while rows and not rows[-1]:
            rows.pop()
        return "\n".join(rows)

    def resize(self, columns: int, rows: int) -> None:
        self.columns, self.rows = columns, rows
        self.screen.resize(rows, columns)
        self.lines.rows = rows


class _PipeText:
    """The listener of `PipeText`: characters, tabs, backspaces, line feeds and lone carriage
    returns as they came; every other event (colours, cursor moves, titles) is dropped."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.cr = False  # a carriage return not yet known to be the terminal's half of CR LF

    def __getattr__(self, name: str):
        return _ignore

    def _text(self, text: str) -> None:
        if self.cr:
            self.out.append("\r")
            self.cr = False
        self.out.append(text)

    def draw(self, text: str, *_: Any, **__: Any) -> None:
        self._text(text)

    def tab(self, *_: Any, **__: Any) -> None:
        self._text("\t")

    def backspace(self, *_: Any, **__: Any) -> None:
        self._text("\b")

    def carriage_return(self, *_: Any, **__: Any) -> None:
        if self.cr:
            self.out.append("\r")
        self.cr = True

    def linefeed(self, *_: Any, **__: Any) -> None:
        self.cr = False
        self.out.append("\n")


class PipeText:
    """A program's terminal output as a pipe would have carried it: its text with `\n` line
    ends (the terminal's CR LF is one `\n`; a lone `\r`, as a progress bar redraws, stays), and
    no escape sequences — what a program without a terminal would have written, so a log a
    model reads looks as it would without the terminal. Incremental: `feed` bytes as they come."""

    def __init__(self) -> None:
        self._listener = _PipeText()
        self._stream = pyte.ByteStream(self._listener)  # type: ignore[arg-type]  # its events take any arguments
        self._stream.use_utf8 = True

    def feed(self, data: bytes) -> str:
        self._stream.feed(data)
        return self.take()

    def take(self) -> str:
        out = self._listener.out
        text = "".join(out)
        out.clear()
        return text

    def end(self) -> str:
        """What is left at the end of the output (a final lone carriage return)."""
        if self._listener.cr:
            self._listener.cr = False
            return "\r"
        return ""


def render_once(data: bytes, columns: int = 80, rows: int = 24) -> Rendered:
    """`data` rendered on a fresh terminal (what a program wrote, start to finish)."""
    term = Terminal(columns, rows)
    term.feed(data)
    return term.take()


class TerminalReader:
    """What a program on a terminal added to its spool file since the last read, rendered
    (the terminal counterpart of spool.IncrementalReader, with the same `read`). Bytes are fed
    to the emulator once, in order; when more arrived than can be shown, only the last
    `FEED_LIMIT` bytes are fed (a full-screen program redraws, a line program's end is what
    matters), and the text says how much was skipped and where the whole output is."""

    FEED_LIMIT = 1 << 20

    def __init__(self, path: Path, columns: int = 80, rows: int = 24, shown_path: Path | None = None):
        self.path = shown_path or path  # the file the texts name (the output as plain text, when kept)
        self._spool = path
        self.offset = 0
        self.terminal = Terminal(columns, rows)
        self.screen = False  # the last read showed a full screen

    def read(self, size: int, finished: bool, max_bytes: int,
             pattern: "LinearPattern | None" = None) -> tuple[str, int, bool]:
        start, end = self.offset, size
        if end <= start:
            return "", 0, False
        if pattern is not None:
            return self._read_filtered(start, end, finished, max_bytes, pattern)
        skipped = 0
        if end - start > self.FEED_LIMIT:
            skipped = end - start - self.FEED_LIMIT
            start = end - self.FEED_LIMIT
        self._feed(start, end)
        self.offset = end
        shown = self.terminal.take()
        self.screen = shown.screen
        text, truncated = shown.text, bool(skipped)
        if len(text) > max_bytes:
            half = max_bytes // 2
            text = (text[:half] + f"\n... [{len(text) - 2 * half:,} characters of output skipped; the full output "
                    f"is in {self.path}] ...\n" + text[-half:])
            truncated = True
        if skipped:
            text = f"... [{skipped:,} bytes of output skipped; the full output is in {self.path}] ...\n" + text
        return text, (end - start) + skipped, truncated

    def _feed(self, start: int, end: int) -> None:
        pos = start
        while pos < end:  # in pieces: memory stays bounded
            chunk = read_range(self._spool, pos, min(end, pos + CHUNK))
            if not chunk:
                break
            self.terminal.feed(chunk)
            pos += len(chunk)

    def _read_filtered(self, start: int, end: int, finished: bool, max_bytes: int,
                       pattern: "LinearPattern") -> tuple[str, int, bool]:
        """Every line is judged (the whole new output is fed, a piece at a time); only complete
        lines while the program runs, an unfinished one waits for the next read."""
        kept: list[str] = []
        budget, left_out = max_bytes, False
        pos = start
        while pos < end:
            step = min(end, pos + CHUNK)
            self._feed(pos, step)
            pos = step
            last = pos >= end
            blob = self.terminal.take(partial=finished and last).text.encode("utf-8", "replace")
            for a, b in pattern.matching_lines(blob):
                if b - a <= budget:
                    kept.append(blob[a:b].decode("utf-8", "replace"))
                    budget -= b - a + 1
                else:
                    left_out = True
        self.offset = end
        self.screen = False
        text = "\n".join(kept)
        if left_out:
            text += "\n... [more matching lines were skipped: too much output for one read] ..."
        return text, end - start, left_out
