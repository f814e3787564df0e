"""Apply a parsed patch: everything computed in memory first, then written all or nothing.

Phase 1 (plan): hunks run in order against an in-memory view of the files, so a later hunk sees
what an earlier one did (update then move, delete then add …). Any failure raises before a byte
is written. Phase 2 (commit): every changed file is written with `write_atomic`, then deletions
happen; if anything fails midway, the files already touched are restored from their in-memory
originals and directories created for them are removed again.

Updates edit lines, never rewrite them: context lines keep the file's own bytes (indentation,
trailing spaces, typographic quotes, CR/LF), '-' lines remove the file's line that matched and
'+' lines are inserted with the file's line ending.
"""

from __future__ import annotations

import difflib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from ..files.atomic import remove_file, write_atomic
from .errors import PatchApplyError, PatchError, PatchPathError
from .parser import AddFile, Chunk, DeleteFile, Patch, UpdateFile, parse_patch
from .seek import PASSES, LineIndex, seek, seek_header

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_DIFF_CHARS = 100_000
SUCCESS_HEADER = "Success. Updated the following files:"

Resolver = Callable[[str], Path]
Display = Callable[[Path], str]


# --------------------------------------------------------------------------------------------
# Public results


@dataclass
class FileChange:
    """One line of the summary: what happened to one path."""

    action: Literal["add", "update", "delete"]
    path: Path
    display: str
    diff: str = ""
    move_from: Path | None = None
    move_from_display: str | None = None
    fuzzy: list[str] = field(default_factory=list)  # passes other than exact used to place chunks
    diff_truncated: bool = False

    @property
    def letter(self) -> str:
        return {"add": "A", "update": "M", "delete": "D"}[self.action]


@dataclass
class Changes:
    """The outcome of a patch that was applied (or planned, with dry_run)."""

    files: list[FileChange]

    def summary(self) -> str:
        """Codex's text: the header, then A lines, M lines, D lines (moves list their destination)."""
        lines = [SUCCESS_HEADER]
        seen: set[str] = set()
        for letter in "AMD":
            for f in self.files:
                row = f"{letter} {f.display}"
                if f.letter == letter and row not in seen:
                    seen.add(row)
                    lines.append(row)
        return "\n".join(lines) + "\n"

    def to_data(self) -> dict:
        files = []
        for f in self.files:
            entry: dict = {"path": f.display, "action": f.action, "diff": f.diff}
            if f.move_from_display is not None:
                entry["move_from"] = f.move_from_display
            if f.fuzzy:
                entry["fuzzy"] = f.fuzzy
            if f.diff_truncated:
                entry["diff_truncated"] = True
            files.append(entry)
        return {
            "files": files,
            "added": sorted({f.display for f in self.files if f.action == "add"}),
            "modified": sorted({f.display for f in self.files if f.action == "update"}),
            "deleted": sorted({f.display for f in self.files if f.action == "delete"}),
        }


# --------------------------------------------------------------------------------------------
# Paths


def workspace_resolver(root: Path, base: Path | None = None, roots: list[Path] | None = None) -> Resolver:
    """Resolve patch paths from `base` (default `root`); refuse anything outside `roots`/`root`.

    Symlinks and '..' are resolved first, so a link pointing outside is outside. Absolute paths
    are fine when they land inside.
    """
    root = Path(os.path.realpath(root))
    allowed = [Path(os.path.realpath(r)) for r in (roots or [root])]
    start = Path(os.path.realpath(base)) if base is not None else root
    real_dirs: dict[Path, Path] = {}

    def realpath(p: Path) -> Path:
        # Patches name many files in few directories: resolve each directory once, then only
        # check whether the last component is itself a symlink.
        if p.name in ("", ".", ".."):
            return Path(os.path.realpath(p))
        parent = real_dirs.get(p.parent)
        if parent is None:
            parent = real_dirs[p.parent] = Path(os.path.realpath(p.parent))
        candidate = parent / p.name
        return Path(os.path.realpath(candidate)) if os.path.islink(candidate) else candidate

    def resolve(text: str) -> Path:
        if not text or not text.strip():
            raise PatchPathError("a path in the patch is empty")
        if "\x00" in text:
            raise PatchPathError(f"the path {text!r} contains a NUL byte")
        if text.startswith("\\\\") or (text.startswith("//") and not text.startswith("///")):
            raise PatchPathError(f"{text} is a UNC (network) path; network paths are refused")
        p = Path(os.path.expanduser(text)) if text.startswith("~") else Path(text)
        if not p.is_absolute():
            p = start / p
        resolved = realpath(p)
        if not any(resolved == r or r in resolved.parents for r in allowed):
            raise PatchPathError(
                f"{text} is outside the workspace ({root}); a patch may only change files inside it")
        return resolved

    return resolve


def relative_display(root: Path) -> Display:
    root = Path(os.path.realpath(root))

    def display(p: Path) -> str:
        try:
            rel = p.relative_to(root)
        except ValueError:
            return str(p)
        return rel.as_posix() if str(rel) != "." else "."

    return display


# --------------------------------------------------------------------------------------------
# Text files as lines


@dataclass
class _Text:
    """A file split on '\n'. `parts` keep a CR that ended a line ('a\r' for 'a\r\n'); `lines`
    are the texts the patch is matched against (no CR). A file without CR shares one list."""

    parts: list[str]
    lines: list[str]
    final_newline: bool
    eol: str
    bom: bool

    @classmethod
    def decode(cls, data: bytes, display: str) -> "_Text":
        if b"\x00" in data:
            raise PatchApplyError(f"{display} looks like a binary file (it contains NUL bytes); apply_patch only edits text")
        bom = data.startswith(b"\xef\xbb\xbf")
        # surrogateescape: bytes that are not UTF-8 survive untouched on lines the patch keeps.
        text = data[3 if bom else 0:].decode("utf-8", "surrogateescape")
        parts = text.split("\n")
        final_newline = parts[-1] == ""
        if final_newline:
            parts.pop()
        if "\r" not in text:
            return cls(parts, parts, final_newline, "\n", bom)
        lines = [p[:-1] if p.endswith("\r") else p for p in parts]
        crlf = text.count("\r\n")
        eol = "\r\n" if crlf > text.count("\n") - crlf else "\n"
        return cls(parts, lines, final_newline, eol, bom)


def _encode(text: str, display: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as e:
        raise PatchApplyError(
            f"the new text of {display} contains a character that cannot be written as UTF-8 "
            f"({text[e.start:e.end]!r} at offset {e.start}); remove it from the patch") from None


# An edit replaces old lines [start, end) with `new` (line texts without endings).
Edit = tuple[int, int, list[str]]


# --------------------------------------------------------------------------------------------
# Locating chunks


def _similar_region(index: LineIndex, old: list[str]) -> tuple[int, int] | None:
    """The window of the file most like `old`: a cheap rolling count of shared lines picks a few
    candidates, difflib ranks them."""
    n, k = len(index), max(1, len(old))
    if n == 0:
        return None
    k = min(k, n)
    keys = index.keys(3)
    wanted = {s for s in (_key(x) for x in old) if s}
    hits = [1 if s and s in wanted else 0 for s in keys]
    if not any(hits):
        if n > 50_000 or not old:
            return None
        first = _key(old[0]) or (old[0] if old else "")
        scores = [difflib.SequenceMatcher(None, first, s, autojunk=False).quick_ratio() for s in keys]
        best = max(range(n), key=scores.__getitem__)
        if scores[best] < 0.5:
            return None
        return best, min(n, best + k)
    window = sum(hits[:k])
    sums = [window]
    for i in range(1, n - k + 1):
        window += hits[i + k - 1] - hits[i - 1]
        sums.append(window)
    candidates = sorted(range(len(sums)), key=lambda i: (-sums[i], i))[:8]
    target = "\n".join(_key(x) for x in old)

    def ratio(i: int) -> float:
        return difflib.SequenceMatcher(None, target, "\n".join(keys[i:i + k]), autojunk=False).ratio()

    best = max(candidates, key=lambda i: (ratio(i), -i))
    return best, best + k


def _key(s: str) -> str:
    return PASSES[3][1](s)  # type: ignore[misc]


def _quote_block(lines: list[str], limit: int = 30) -> str:
    shown = lines[:limit]
    out = "\n".join(shown)
    if len(lines) > limit:
        out += f"\n… ({len(lines) - limit} more lines)"
    return out


def _not_found(display: str, chunk: Chunk, chunk_no: int, index: LineIndex, old: list[str],
               after: str | None) -> PatchApplyError:
    where = f" (chunk {chunk_no}, starting on patch line {chunk.line})"
    msg = [f"Failed to find expected lines in {display}{where}:", _quote_block(old)]
    if after:
        msg.append(f"(searched after the '@@ {after}' line and any earlier chunks)")
    region = _similar_region(index, old)
    if region is not None:
        a, b = region
        a2, b2 = max(0, a - 1), min(len(index), b + 1)
        width = len(str(b2))
        body = "\n".join(f"{i + 1:>{width}}| {index.lines[i]}" for i in range(a2, b2))
        msg.append(f"The most similar lines of {display} are lines {a + 1}-{b}:\n{body}")
    else:
        msg.append(f"Nothing in {display} resembles them.")
    msg.append("Read the file again and resend the whole patch with the ' ' and '-' lines copied exactly "
               "from it. No file was changed.")
    return PatchApplyError("\n".join(msg))


def _context_not_found(display: str, header: str, chunk: Chunk, index: LineIndex, start: int) -> PatchApplyError:
    msg = f"Failed to find context '{header}' in {display} (chunk starting on patch line {chunk.line}"
    msg += f", searching from line {start + 1})" if start else ")"
    close = difflib.get_close_matches(_key(header), [s for s in index.keys(3) if s], n=3, cutoff=0.6)
    if close:
        msg += "\nLines that look similar: " + "; ".join(repr(c) for c in close)
    return PatchApplyError(msg + "\nUse an '@@' line copied from the file, or drop it. No file was changed.")


def locate_edits(text: _Text, chunks: list[Chunk], display: str) -> tuple[list[Edit], list[str]]:
    """Find every chunk in file order and turn it into line edits. Returns (edits, fuzzy passes used)."""
    index = LineIndex(text.lines)
    total = len(index)
    edits: list[Edit] = []
    fuzzy: list[str] = []
    line_index = 0
    for n, chunk in enumerate(chunks, 1):
        header_at = None
        for header in chunk.contexts:
            found = seek_header(index, header, line_index)
            if found is None:
                raise _context_not_found(display, header, chunk, index, line_index)
            header_at = found[0]
            if found[1]:
                fuzzy.append("header prefix" if found[1] == 4 else PASSES[found[1]][0])
            line_index = header_at + 1
        ops = chunk.ops
        old = [t for k, t in ops if k != "+"]
        if not old:
            # Pure addition: at the end of the file, or right after its '@@' context.
            at = total if (chunk.is_end_of_file or header_at is None) else line_index
            edits.append((at, at, [t for _, t in ops]))
            continue
        found = seek(index, old, line_index, chunk.is_end_of_file)
        if found is None and header_at is not None:
            # '@@ def f():' followed by ' def f():' — the header line is the chunk's first line.
            found = seek(index, old, header_at, chunk.is_end_of_file)
        while found is None and ops and ops[-1] == (" ", ""):
            # A blank line ending the chunk usually separated chunks; retry without it (as Codex).
            ops = ops[:-1]
            old = [t for k, t in ops if k != "+"]
            if not old:
                break
            found = seek(index, old, line_index, chunk.is_end_of_file)
        if found is None or not old:
            raise _not_found(display, chunk, n, index, [t for k, t in chunk.ops if k != "+"],
                             chunk.contexts[-1] if chunk.contexts else None)
        at, pass_no = found
        if pass_no:
            fuzzy.append(PASSES[pass_no][0])
        j, run_start, new = at, None, []
        for kind, t in ops:
            if kind == " ":
                if run_start is not None:
                    edits.append((run_start, j, new))
                    run_start, new = None, []
                j += 1
            else:
                if run_start is None:
                    run_start = j
                if kind == "-":
                    j += 1
                else:
                    new.append(t)
        if run_start is not None:
            edits.append((run_start, j, new))
        line_index = at + len(old)
    edits.sort(key=lambda e: (e[0], e[1]))
    for (s1, e1, _), (s2, _, _) in zip(edits, edits[1:]):
        if s2 < e1:
            raise PatchApplyError(f"two chunks for {display} change the same lines (around line {s2 + 1}); "
                                  "merge them into one chunk. No file was changed.")
    return edits, fuzzy


def render(text: _Text, edits: list[Edit]) -> str:
    """The new file text: kept lines byte for byte, inserted lines with the file's line ending.
    An updated file always ends with a newline."""
    cr = "\r" if text.eol == "\r\n" else ""
    parts = text.parts
    if parts and not text.final_newline and cr and not parts[-1].endswith("\r"):
        parts = parts[:-1] + [parts[-1] + cr]  # the last line gets the file's (CRLF) ending
    out: list[str] = []
    pos = 0
    for s, e, new in edits:
        out.extend(parts[pos:s])
        out.extend([t + cr for t in new] if cr else new)
        pos = e
    out.extend(parts[pos:])
    if not out:
        return "\ufeff" if text.bom else ""
    return ("\ufeff" if text.bom else "") + "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# Unified diffs (built from the edits: linear, no O(n²) matching on big files)


def _range(start: int, count: int) -> str:
    if count == 1:
        return f"{start + 1}"
    return f"{start + 1 if count else start},{count}"


def unified_diff(old_name: str, new_name: str, old: list[str], edits: list[Edit], context: int = 3) -> str:
    if not edits:
        return ""
    groups: list[list[Edit]] = [[edits[0]]]
    for e in edits[1:]:
        if e[0] - groups[-1][-1][1] <= 2 * context:
            groups[-1].append(e)
        else:
            groups.append([e])
    out = [f"--- {old_name}\n", f"+++ {new_name}\n"]
    delta = 0
    for g in groups:
        a0 = max(0, g[0][0] - context)
        a1 = min(len(old), g[-1][1] + context)
        body: list[str] = [" " + s for s in old[a0:g[0][0]]]
        removed = added = 0
        for i, (s, e, new) in enumerate(g):
            body.extend("-" + x for x in old[s:e])
            body.extend("+" + x for x in new)
            removed += e - s
            added += len(new)
            nxt = g[i + 1][0] if i + 1 < len(g) else a1
            body.extend(" " + x for x in old[e:nxt])
        old_count = a1 - a0
        new_count = old_count - removed + added
        out.append(f"@@ -{_range(a0, old_count)} +{_range(a0 + delta, new_count)} @@\n")
        out.extend(x + "\n" for x in body)
        delta += added - removed
    return "".join(out)


def _cap(diff: str) -> tuple[str, bool]:
    if len(diff) <= MAX_DIFF_CHARS:
        return diff, False
    cut = diff.rfind("\n", 0, MAX_DIFF_CHARS) + 1
    rest = diff[cut:].count("\n")
    return diff[:cut] + f"… diff truncated ({rest} more lines)\n", True


def _whole_file_diff(old_name: str, new_name: str, old: list[str], new: list[str]) -> str:
    if not old and not new:
        return ""
    return unified_diff(old_name, new_name, old, [(0, len(old), new)], context=0)


# --------------------------------------------------------------------------------------------
# The in-memory file system view


_MISSING = None


class _View:
    """Files as the patch sees them: disk, overlaid with what earlier hunks did."""

    def __init__(self, display: Display):
        self.display = display
        self.current: dict[Path, bytes | None] = {}
        self.original: dict[Path, bytes | None] = {}
        self.modes: dict[Path, int] = {}

    def _load(self, p: Path) -> bytes | None:
        try:
            st = os.stat(p)
        except FileNotFoundError:
            return _MISSING
        except NotADirectoryError:
            return _MISSING
        except OSError as e:
            raise PatchApplyError(f"cannot read {self.display(p)}: {e.strerror}") from None
        if stat.S_ISDIR(st.st_mode):
            raise _IsDirectory()
        if not stat.S_ISREG(st.st_mode):
            raise PatchApplyError(f"{self.display(p)} is not a regular file; apply_patch only edits regular files")
        if st.st_size > MAX_FILE_BYTES:
            raise PatchApplyError(f"{self.display(p)} is too large to patch ({st.st_size} bytes; the limit is {MAX_FILE_BYTES})")
        try:
            data = p.read_bytes()
        except OSError as e:
            raise PatchApplyError(f"cannot read {self.display(p)}: {e.strerror}") from None
        self.modes[p] = stat.S_IMODE(st.st_mode)
        return data

    def get(self, p: Path) -> bytes | None:
        if p in self.current:
            return self.current[p]
        data = self._load(p)
        self.original[p] = data
        self.current[p] = data
        return data

    def is_dir(self, p: Path) -> bool:
        if p in self.current:
            return False
        return os.path.isdir(p)

    def set(self, p: Path, data: bytes | None) -> None:
        if p not in self.original:
            try:
                self.get(p)
            except _IsDirectory:
                raise PatchApplyError(f"{self.display(p)} is a directory") from None
        self.current[p] = data

    def check_parents(self, p: Path) -> None:
        """A new file's parent directories must not be files."""
        for parent in p.parents:
            known = self.current.get(parent, "unknown")
            if known is None:
                return  # deleted by this patch: the directory may be created in its place
            if isinstance(known, bytes) or (known == "unknown" and os.path.isfile(parent)):
                raise PatchApplyError(f"cannot create {self.display(p)}: {self.display(parent)} is a file")
            if known == "unknown" and os.path.isdir(parent):
                return


class _IsDirectory(Exception):
    pass


# --------------------------------------------------------------------------------------------
# Planning


@dataclass
class Plan:
    changes: Changes
    view: _View

    def writes(self) -> list[tuple[Path, bytes | None, bytes | None, int | None]]:
        """(path, new bytes or None to delete, original bytes or None, original mode) for every
        path whose final content differs from disk."""
        out = []
        for p, new in self.view.current.items():
            orig = self.view.original.get(p)
            if new == orig and new is not None:
                continue
            if new is None and orig is None:
                continue
            out.append((p, new, orig, self.view.modes.get(p)))
        return out


def plan_patch(patch: Patch | str, resolve: Resolver, display: Display) -> Plan:
    """Run every hunk against the in-memory view. Raises PatchError; touches nothing on disk."""
    if isinstance(patch, str):
        patch = parse_patch(patch)
    if not patch.hunks:
        raise PatchApplyError("No files were modified. The patch has no '*** Add File', '*** Delete File' "
                              "or '*** Update File' sections.")
    view = _View(display)
    files: list[FileChange] = []
    move_modes: dict[Path, int] = {}
    for hunk in patch.hunks:
        if isinstance(hunk, AddFile):
            p = resolve(hunk.path)
            d = display(p)
            if view.is_dir(p):
                raise PatchApplyError(f"Failed to write file {d}: Is a directory. No file was changed.")
            view.check_parents(p)
            prev = _get(view, p, d)
            new = _encode(hunk.contents, d)
            view.set(p, new)
            new_lines = _diff_lines(new)
            old_lines = _diff_lines(prev)
            diff, cut = _cap(_whole_file_diff("/dev/null" if prev is None else f"a/{d}", f"b/{d}", old_lines, new_lines))
            files.append(FileChange("add", p, d, diff, diff_truncated=cut))
        elif isinstance(hunk, DeleteFile):
            p = resolve(hunk.path)
            d = display(p)
            if view.is_dir(p):
                raise PatchApplyError(f"Failed to delete file {d}: Is a directory (only files can be deleted). "
                                      "No file was changed.")
            prev = _get(view, p, d)
            if prev is None:
                raise PatchApplyError(f"Failed to delete file {d}: No such file or directory. No file was changed.")
            view.set(p, None)
            old_lines = _diff_lines(prev)
            diff, cut = _cap(_whole_file_diff(f"a/{d}", "/dev/null", old_lines, []))
            files.append(FileChange("delete", p, d, diff, diff_truncated=cut))
        elif isinstance(hunk, UpdateFile):
            p = resolve(hunk.path)
            d = display(p)
            if view.is_dir(p):
                raise PatchApplyError(f"Failed to read file to update {d}: Is a directory. No file was changed.")
            prev = _get(view, p, d)
            if prev is None:
                raise PatchApplyError(f"Failed to read file to update {d}: No such file or directory. "
                                      "Use '*** Add File:' to create a file. No file was changed.")
            text = _Text.decode(prev, d)
            edits, fuzzy = locate_edits(text, hunk.chunks, d)
            new = _encode(render(text, edits), d)
            dest, dd = p, d
            if hunk.move_to is not None:
                dest = resolve(hunk.move_to)
                dd = display(dest)
                if view.is_dir(dest):
                    raise PatchApplyError(f"Failed to move {d} to {dd}: {dd} is a directory. No file was changed.")
                view.check_parents(dest)
                _get(view, dest, dd)
            diff, cut = _cap(unified_diff(f"a/{d}", f"b/{dd}", text.lines, edits))
            if dest != p:
                view.set(p, None)
                if p in view.modes:
                    move_modes[dest] = view.modes[p]
            view.set(dest, new)
            files.append(FileChange("update", dest, dd, diff, move_from=p if dest != p else None,
                                    move_from_display=d if dest != p else None, fuzzy=fuzzy,
                                    diff_truncated=cut))
    for dest, mode in move_modes.items():
        if view.original.get(dest) is None:
            view.modes[dest] = mode  # a moved file keeps its mode (an executable stays executable)
    return Plan(Changes(files), view)


def _diff_lines(data: bytes | None) -> list[str]:
    if not data:
        return []
    if b"\x00" in data:
        return ["(binary file)"]
    return _Text.decode(data, "").lines


def _get(view: _View, p: Path, d: str) -> bytes | None:
    try:
        return view.get(p)
    except _IsDirectory:
        raise PatchApplyError(f"{d} is a directory. No file was changed.") from None


# --------------------------------------------------------------------------------------------
# Committing, all or nothing


def _missing_dirs(p: Path) -> list[Path]:
    out = []
    for parent in p.parents:
        if parent.exists():
            break
        out.append(parent)
    return out


def commit(plan: Plan, *, fsync: bool = True) -> None:
    """Delete, then write every changed file; on any failure restore what was already done."""
    writes = plan.writes()
    display = plan.view.display
    done: list[tuple[Path, bytes | None, int | None]] = []
    created: list[Path] = []
    try:
        # Deletions first: a deleted file may be replaced by a directory of the same name.
        for p, new, orig, mode in sorted(writes, key=lambda w: w[1] is not None):
            if new is not None:
                created.extend(_missing_dirs(p))
                write_atomic(p, new, mode=mode if orig is None else None, fsync=fsync)
            else:
                remove_file(p)
            done.append((p, orig, mode))
    except OSError as e:
        failed = display(p)
        problems = _rollback(done, created, fsync)
        msg = f"Failed to write {failed}: {e}."
        if problems:
            msg += " Restoring the files already changed also failed for: " + "; ".join(problems)
        else:
            msg += " No file was changed (the files already written were restored)."
        raise PatchApplyError(msg) from None


def _rollback(done: list[tuple[Path, bytes | None, int | None]], created: list[Path], fsync: bool) -> list[str]:
    problems = []
    for p, orig, mode in reversed(done):
        try:
            if orig is None:
                p.unlink(missing_ok=True)
            else:
                write_atomic(p, orig, mode=mode, fsync=fsync)
        except OSError as e:
            problems.append(f"{p}: {e}")
    for d in sorted(set(created), key=lambda x: len(x.parts), reverse=True):
        try:
            d.rmdir()
        except OSError:
            pass
    return problems


# --------------------------------------------------------------------------------------------
# Entry points


def apply_patch(text: str | Patch, root: Path, resolve: Resolver | None = None, display: Display | None = None,
                *, dry_run: bool = False, fsync: bool = True,
                check_cancelled: Callable[[], None] | None = None) -> Changes:
    """Parse, plan and (unless dry_run) commit a patch. Raises PatchError; on error nothing changed.

    `resolve` turns a patch path into an absolute path or raises PatchError (default: relative to
    `root`, refusing paths outside it). `display` says how paths appear in the summary (default:
    relative to `root`).
    """
    resolve = resolve or workspace_resolver(root)
    display = display or relative_display(root)
    plan = plan_patch(text, resolve, display)
    if check_cancelled is not None:
        check_cancelled()  # last moment to stop: nothing has been written yet
    if not dry_run:
        commit(plan, fsync=fsync)
    return plan.changes


def affected_paths(text: str) -> list[str]:
    """The paths a patch touches (as written in it), including move destinations. Raises PatchParseError."""
    return parse_patch(text).paths()


__all__ = ["Changes", "FileChange", "Plan", "apply_patch", "affected_paths", "plan_patch", "commit",
           "workspace_resolver", "relative_display", "PatchError"]
