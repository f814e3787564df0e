"""Parse the Codex patch language into hunks.

    *** Begin Patch
    *** Add File: path          then lines "+text"
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       (optional, right after Update File)
    @@ optional header          (may repeat to narrow: @@ class A / @@ def f():)
     context / -removed / +added
    *** End of File             (optional: the chunk is anchored at the end of the file)
    *** End Patch

Lenient where models are sloppy in harmless ways: CRLF patches, whitespace around marker lines,
a heredoc wrapper (<<'EOF' … EOF), a first chunk without '@@', blank lines between chunks,
unified-diff style '@@ -1,3 +1,4 @@' headers. Strict where guessing could change the wrong text:
every other line must be a marker or start with ' ', '-' or '+'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import PatchParseError

BEGIN = "*** Begin Patch"
END = "*** End Patch"
END_OF_FILE = "*** End of File"

_FILE_OP = re.compile(r"^\*\*\*\s*(Add File|Delete File|Update File)\s*:\s*(.*)$", re.IGNORECASE)
_MOVE_TO = re.compile(r"^\*\*\*\s*Move to\s*:\s*(.*)$", re.IGNORECASE)
_END_PATCH = re.compile(r"^\*\*\*\s*End Patch$", re.IGNORECASE)
_END_OF_FILE = re.compile(r"^\*\*\*\s*End of File$", re.IGNORECASE)
_BEGIN_PATCH = re.compile(r"^\*\*\*\s*Begin Patch$", re.IGNORECASE)
# A heredoc wrapper left around the patch: <<EOF, <<'EOF', <<"EOF", <<-EOF, optionally after the
# command name (the whole shell command pasted as the patch).
_HEREDOC_START = re.compile(r"""^(?:(?:apply_patch|applypatch)\s+)?<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1$""")
_DELIMITER = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# '@@ -12,5 +12,6 @@ tail' — a unified-diff header; its numbers are meaningless here.
_UNIFIED_HEADER = re.compile(r"^-\d+(?:,\d+)?\s+\+\d+(?:,\d+)?\s*@@")

HUNK_HEADERS = "'*** Add File: PATH', '*** Delete File: PATH' or '*** Update File: PATH'"


@dataclass
class Chunk:
    """One contiguous change inside an Update File.

    `ops` keeps the patch lines in order as (kind, text) with kind in ' ', '-', '+': the applier
    needs the interleaving so context lines keep the file's own bytes.
    """

    contexts: list[str]
    ops: list[tuple[str, str]]
    is_end_of_file: bool = False
    line: int = 0  # patch line where the chunk starts (its first '@@' or first diff line)

    @property
    def old_lines(self) -> list[str]:
        return [t for k, t in self.ops if k != "+"]

    @property
    def new_lines(self) -> list[str]:
        return [t for k, t in self.ops if k != "-"]


@dataclass
class AddFile:
    path: str
    contents: str
    line: int = 0


@dataclass
class DeleteFile:
    path: str
    line: int = 0


@dataclass
class UpdateFile:
    path: str
    move_to: str | None
    chunks: list[Chunk] = field(default_factory=list)
    line: int = 0


Hunk = AddFile | DeleteFile | UpdateFile


@dataclass
class Patch:
    hunks: list[Hunk]

    def paths(self) -> list[str]:
        """Every path the patch touches, in order, without duplicates (move sources and targets)."""
        out: list[str] = []
        for h in self.hunks:
            for p in (h.path, getattr(h, "move_to", None)):
                if p and p not in out:
                    out.append(p)
        return out


def _show(line: str, limit: int = 80) -> str:
    return repr(line if len(line) <= limit else line[:limit] + "…")


def _split_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, text) with CRLF/CR-LF endings removed. Only '\\n' splits lines:
    str.splitlines would also split on U+2028, form feeds … which are legitimate file content."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [(i + 1, s[:-1] if s.endswith("\r") else s) for i, s in enumerate(lines)]


def _trim_blank(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    start, end = 0, len(lines)
    while start < end and not lines[start][1].strip():
        start += 1
    while end > start and not lines[end - 1][1].strip():
        end -= 1
    return lines[start:end]


def _boundaries(text: str) -> list[tuple[int, str]]:
    """The lines between '*** Begin Patch' and '*** End Patch', after unwrapping a heredoc."""
    lines = _trim_blank(_split_lines(text))
    if not lines:
        raise PatchParseError("The first line of the patch must be '*** Begin Patch' (the patch is empty)", hunk=False)
    first = lines[0][1].strip()
    if not _BEGIN_PATCH.match(first) and len(lines) >= 2:
        m = _HEREDOC_START.match(first)
        if m and lines[-1][1].strip() == m.group(2):
            lines = _trim_blank(lines[1:-1])
            if not lines:
                raise PatchParseError("The first line of the patch must be '*** Begin Patch' (the heredoc is empty)", hunk=False)
            first = lines[0][1].strip()
    if not _BEGIN_PATCH.match(first):
        raise PatchParseError(f"The first line of the patch must be '*** Begin Patch', got {_show(first)}", lines[0][0], hunk=False)
    last_no, last = lines[-1][0], lines[-1][1].strip()
    if len(lines) >= 3 and _DELIMITER.match(last) and _END_PATCH.match(lines[-2][1].strip()):
        # The closing delimiter of a heredoc whose opening line was already stripped.
        lines = lines[:-1]
        last_no, last = lines[-1][0], lines[-1][1].strip()
    if len(lines) < 2 or not _END_PATCH.match(last):
        for no, s in lines[1:]:
            if _END_PATCH.match(s.strip()):
                raise PatchParseError(
                    f"'*** End Patch' must be the last line, but more text follows it (up to line {last_no}); "
                    "remove everything after '*** End Patch'", no, hunk=False)
        raise PatchParseError(
            f"The last line of the patch must be '*** End Patch', got {_show(last)}; the patch may have been cut off",
            last_no, hunk=False)
    return lines[1:-1]


def parse_patch(text: str) -> Patch:
    """Parse patch text into hunks, or raise PatchParseError naming the bad line."""
    if not isinstance(text, str):
        raise PatchParseError("the patch must be text")
    if "\x00" in text:
        raise PatchParseError("the patch contains a NUL byte; only text files can be patched")
    body = _boundaries(text)
    hunks: list[Hunk] = []
    i = 0
    while i < len(body):
        no, line = body[i]
        stripped = line.strip()
        if not stripped:  # blank lines between file operations
            i += 1
            continue
        m = _FILE_OP.match(stripped)
        if not m:
            if _END_PATCH.match(stripped):
                raise PatchParseError("unexpected '*** End Patch' before the end of the patch; send one patch at a time", no)
            if _MOVE_TO.match(stripped):
                raise PatchParseError("'*** Move to: PATH' must come right after '*** Update File: PATH'", no)
            raise PatchParseError(f"{_show(stripped)} is not a valid hunk header. Valid hunk headers: {HUNK_HEADERS}", no)
        kind, path = m.group(1).lower(), m.group(2).strip()
        if not path:
            raise PatchParseError(f"'*** {m.group(1)}:' needs a path after the colon", no)
        if kind == "add file":
            hunk, i = _parse_add(body, i + 1, path, no)
        elif kind == "delete file":
            hunk, i = DeleteFile(path, no), i + 1
        else:
            hunk, i = _parse_update(body, i + 1, path, no)
        hunks.append(hunk)
    return Patch(hunks)


def _parse_add(body: list[tuple[int, str]], i: int, path: str, no: int) -> tuple[AddFile, int]:
    out: list[str] = []
    while i < len(body):
        line = body[i][1]
        if line.startswith("+"):
            out.append(line[1:])
            i += 1
            continue
        # A blank line without its '+' inside the added text: keep it as an empty line, but only
        # when more '+' lines follow (otherwise it separates file operations).
        if not line.strip():
            j = i
            while j < len(body) and not body[j][1].strip():
                j += 1
            if j < len(body) and body[j][1].startswith("+"):
                out.extend("" for _ in range(j - i))
                i = j
                continue
        break
    return AddFile(path, "".join(s + "\n" for s in out), no), i


def _parse_update(body: list[tuple[int, str]], i: int, path: str, no: int) -> tuple[UpdateFile, int]:
    move_to = None
    if i < len(body):
        m = _MOVE_TO.match(body[i][1].strip())
        if m:
            move_to = m.group(1).strip()
            if not move_to:
                raise PatchParseError("'*** Move to:' needs a path after the colon", body[i][0])
            i += 1
    chunks: list[Chunk] = []
    while i < len(body):
        cno, line = body[i]
        if not line.strip():  # blank lines between chunks
            i += 1
            continue
        if line.startswith("*") and not _END_OF_FILE.match(line.strip()):
            break  # the next file operation (validated by the caller)
        chunk, i = _parse_chunk(body, i, path, first=not chunks)
        chunks.append(chunk)
    if not chunks and move_to is None:
        raise PatchParseError(
            f"Update file hunk for path '{path}' is empty; add a chunk: '@@' then lines starting with "
            "' ' (context), '-' (remove) or '+' (add)", no)
    return UpdateFile(path, move_to, chunks, no), i


def _header_text(line: str) -> str | None:
    """The context of a '@@' line, None for a bare '@@' or a unified-diff line-number header.

    The text names a line of the file as it is, indentation included ('@@     def f(self):' is
    the method, not a top-level `def f(self):`): only the one space after '@@' separates them.
    """
    rest = line[2:].rstrip()
    if not rest.strip() or _UNIFIED_HEADER.match(rest.strip()):
        return None
    return rest[1:] if rest[0] in " \t" else rest


def _parse_chunk(body: list[tuple[int, str]], i: int, path: str, first: bool) -> tuple[Chunk, int]:
    start_no = body[i][0]
    contexts: list[str] = []
    saw_header = False
    while i < len(body) and body[i][1].startswith("@@"):
        saw_header = True
        ctx = _header_text(body[i][1])
        if ctx is not None:
            contexts.append(ctx)
        i += 1
    if not saw_header and not first:
        no, line = body[i]
        raise PatchParseError(
            f"Expected update hunk to start with a @@ context marker, got: {_show(line)} (in {path})", no)
    ops: list[tuple[str, str]] = []
    eof = False
    while i < len(body):
        no, line = body[i]
        c = line[:1]
        if c in (" ", "-", "+"):
            ops.append((c, line[1:]))
        elif not line.strip():
            ops.append((" ", ""))  # an empty context line whose leading space was lost
        elif line.startswith("@@"):
            break
        elif _END_OF_FILE.match(line.strip()):
            if not ops:
                raise PatchParseError("Update hunk does not contain any lines before '*** End of File'", no)
            eof = True
            i += 1
            break
        elif line.startswith("*"):
            break
        else:
            raise PatchParseError(
                f"Unexpected line found in update hunk: {_show(line)} (in {path}). Every line should start "
                "with ' ' (context line), '+' (added line), or '-' (removed line); a new chunk starts with '@@'. "
                "Did a context line lose its leading space?", no)
        i += 1
    if not ops:
        where = body[i][0] if i < len(body) else start_no
        raise PatchParseError(f"Update hunk does not contain any lines (chunk of {path} starting on line {start_no})", where)
    return Chunk(contexts, ops, eof, start_no), i

