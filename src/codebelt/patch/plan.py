"""Planning a patch: every hunk runs, in order, against an in-memory view of the files, so a
later hunk sees what an earlier one did (update then move, delete then add …). Any failure raises
before a byte is written; the result is a `Plan` to commit and the `Changes` to report."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import PatchApplyError
from ..files.beneath import ANYWHERE, Beneath, NotRegularFile, SymlinkInPath
from .diff import cap, unified_diff, whole_file_diff
from .locate import locate_edits
from .parser import AddFile, DeleteFile, Patch, UpdateFile, parse_patch
from .paths import Display, Resolver
from .text import PatchText, encode, render

MAX_FILE_BYTES = 64 * 1024 * 1024
SUCCESS_HEADER = "Success. Updated the following files:"


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


_MISSING = None


class _View:
    """Files as the patch sees them: disk, overlaid with what earlier hunks did. Files are read
    through descriptors opened beneath their root without following symlinks (`beneath`)."""

    def __init__(self, display: Display, beneath: Beneath = ANYWHERE):
        self.display = display
        self.beneath = beneath
        self.current: dict[Path, bytes | None] = {}
        self.original: dict[Path, bytes | None] = {}
        self.modes: dict[Path, int] = {}

    def _load(self, p: Path) -> bytes | None:
        try:
            opened = self.beneath.open_regular(p)
        except (FileNotFoundError, NotADirectoryError):
            return _MISSING
        except IsADirectoryError:
            raise _IsDirectory() from None
        except NotRegularFile:
            raise PatchApplyError(f"{self.display(p)} is not a regular file; apply_patch only edits regular files") from None
        except SymlinkInPath as e:
            where = self.display(e.link) if e.link is not None else "a part of it"
            raise PatchApplyError(f"cannot read {self.display(p)}: {where} is a symlink now (was it just replaced?), "
                                  "and symlinks found after the permission check are not followed") from None
        except OSError as e:
            raise PatchApplyError(f"cannot read {self.display(p)}: {e.strerror}") from None
        with opened:
            st = opened.st
            if st.st_size > MAX_FILE_BYTES:
                raise PatchApplyError(f"{self.display(p)} is too large to patch ({st.st_size} bytes; the limit is {MAX_FILE_BYTES})")
            try:
                data = opened.read_bytes()
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


def plan_patch(patch: Patch | str, resolve: Resolver, display: Display, beneath: Beneath = ANYWHERE) -> Plan:
    """Run every hunk against the in-memory view. Raises PatchError; touches nothing on disk.
    `beneath`: where resolved paths are opened (and later written by `commit`)."""
    if isinstance(patch, str):
        patch = parse_patch(patch)
    if not patch.hunks:
        raise PatchApplyError("No files were modified. The patch has no '*** Add File', '*** Delete File' "
                              "or '*** Update File' sections.")
    view = _View(display, beneath)
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
            new = encode(hunk.contents, d)
            view.set(p, new)
            new_lines = _diff_lines(new)
            old_lines = _diff_lines(prev)
            diff, cut = cap(whole_file_diff("/dev/null" if prev is None else f"a/{d}", f"b/{d}", old_lines, new_lines))
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
            diff, cut = cap(whole_file_diff(f"a/{d}", "/dev/null", old_lines, []))
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
            text = PatchText.decode(prev, d)
            edits, fuzzy = locate_edits(text, hunk.chunks, d)
            new = encode(render(text, edits), d, text.fmt)
            dest, dd = p, d
            if hunk.move_to is not None:
                dest = resolve(hunk.move_to)
                dd = display(dest)
                if view.is_dir(dest):
                    raise PatchApplyError(f"Failed to move {d} to {dd}: {dd} is a directory. No file was changed.")
                view.check_parents(dest)
                _get(view, dest, dd)
            diff, cut = cap(unified_diff(f"a/{d}", f"b/{dd}", text.lines, edits))
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
    try:
        return PatchText.decode(data, "").lines
    except PatchApplyError:
        return ["(binary file)"]


def _get(view: _View, p: Path, d: str) -> bytes | None:
    try:
        return view.get(p)
    except _IsDirectory:
        raise PatchApplyError(f"{d} is a directory. No file was changed.") from None
