"""Write: create or overwrite a file, atomically, keeping an existing file's encoding.

Overwriting keeps the file's encoding and BOM, and a CRLF file stays CRLF (bare LF in the
content becomes CRLF). Content the old encoding cannot hold is written as UTF-8, with a note.
New files are UTF-8 without BOM, content as given.
"""

from __future__ import annotations

import os
import stat as stat_mod

from pydantic import BaseModel, Field

from ..files.atomic import AtomicWriteError, write_atomic
from ..files.codec import SNIFF_BYTES, UTF8, BinaryFile, TextFormat, apply_eol, sniff
from ..permissions.requests import PathRequest
from ..tool import Tool, ToolContext, ToolError, ToolInput, ToolResult
from . import _diagnostics
from ._services import file_states

DESCRIPTION = """Writes a file to the local filesystem.

Usage:
- This tool will overwrite the existing file if there is one at the provided path.
- If this is an existing file, you MUST use the Read tool first to read the file's contents. This tool will fail if you did not read the file first.
- Parent directories are created as needed. The write is atomic: the file is either the old one or the new one, never half-written.
- An existing file keeps its encoding, byte-order mark and CRLF line endings.
- ALWAYS prefer editing existing files in the codebase (Edit, MultiEdit). NEVER write new files unless explicitly required.
- NEVER proactively create documentation files (*.md) or README files. Only create documentation files if explicitly requested by the User.
- Only use emojis if the user explicitly requests it. Avoid writing emojis to files unless asked."""


class WriteInput(ToolInput):
    file_path: str = Field(description="The absolute path to the file to write (must be absolute, not relative)")
    content: str = Field(description="The content to write to the file")


class WriteOutput(BaseModel):
    type: str = Field(description="create | update")
    filePath: str
    lines: int
    bytes: int
    encoding: str
    bom: bool
    lineEnding: str = Field(description="LF | CRLF | mixed")
    diagnostics: list[dict] | None = Field(None, description="Problems the change introduced")

class Write(Tool):
    name = "Write"
    permission_family = "edit"
    description = DESCRIPTION
    Input = WriteInput
    Output = WriteOutput
    destructive = True
    idempotent = True
    max_result_chars = None  # a one-line confirmation
    search_hint = "create or overwrite a file"

    def precheck(self, params: WriteInput, ctx: ToolContext) -> None:
        """Refuse, before anyone is asked to approve it, a Write that would fail: replacing a
        file this session has not read, or one changed since it was read."""
        path = ctx.workspace.resolve(params.file_path)
        if not ctx.workspace.is_inside(path):
            return  # the permission decision speaks first: writing outside is refused as such
        try:
            st = os.stat(path)
        except OSError:
            return  # a new file (or one run() reports with its own words)
        if stat_mod.S_ISREG(st.st_mode):
            problem = ctx.service(file_states).check(path, st)
            if problem:
                raise ToolError(problem)

    def permission_requests(self, params: WriteInput, ctx: ToolContext) -> list[PathRequest]:
        return [PathRequest("write", ctx.workspace.resolve(params.file_path))]

    def run(self, params: WriteInput, ctx: ToolContext) -> ToolResult:
        path = ctx.workspace.resolve(params.file_path)
        rel = ctx.workspace.relative(path)
        states = ctx.service(file_states)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        except OSError as e:
            raise ToolError(f"Cannot access {rel}: {e.strerror}.") from None
        fmt: TextFormat = UTF8
        note = ""
        if st is not None:
            if stat_mod.S_ISDIR(st.st_mode):
                raise ToolError(f"{rel} is a directory. Give the path of a file (e.g. {rel.rstrip('/')}/name.txt).")
            if not stat_mod.S_ISREG(st.st_mode):
                raise ToolError(f"{rel} is not a regular file (device, FIFO or socket); it cannot be written.")
            problem = states.check(path, st)
            if problem:
                raise ToolError(problem)
            try:
                with open(path, "rb") as f:
                    head = f.read(SNIFF_BYTES)
                fmt = sniff(head, at_eof=len(head) >= st.st_size) if head else UTF8
            except BinaryFile:
                fmt = UTF8  # replacing a binary file with text: plain UTF-8
            except OSError as e:
                raise ToolError(f"Cannot read {rel}: {e.strerror}. The file is unchanged.") from None
            fmt = TextFormat(fmt.encoding, fmt.bom, fmt.eol)  # keep; drop any decode note
        content = apply_eol(params.content, "\r\n") if fmt.eol == "\r\n" else params.content
        try:
            data = fmt.encode(content)
        except UnicodeEncodeError:
            note = f" The content has characters {fmt.encoding} cannot hold, so the file is now UTF-8."
            fmt = TextFormat("utf-8", b"", fmt.eol)
            data = fmt.encode(content)
        if st is not None:
            try:  # narrow the window between the stale check and the rename
                now = os.stat(path)
            except FileNotFoundError:
                now = None
            if now is None or (now.st_mtime_ns, now.st_size) != (st.st_mtime_ns, st.st_size):
                raise ToolError(states.check(path, now) if now else
                                f"{rel} was deleted while writing; Read it again (or Write again to create it).")
        checked = _diagnostics.before(ctx, path)
        try:
            write_atomic(path, data)
        except AtomicWriteError as e:
            reason = str(e).replace(str(path), rel)
            raise ToolError(
                f"Could not write {rel}: {reason}. The file is unchanged." if st
                else f"Could not create {rel}: {reason}."
            ) from None
        try:
            states.record_write(path, data, fmt)
        except OSError:
            states.forget(path)
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        verb = "Updated" if st is not None else "Created"
        kept = f" (kept {fmt.describe()})" if st is not None and (fmt.bom or fmt.eol != "\n" or fmt.encoding != "utf-8") else ""
        text = f"{verb} {rel}: {lines} line{'s' if lines != 1 else ''}, {len(data)} bytes{kept}.{note}"
        return _diagnostics.attach(ToolResult(
            text,
            data={"type": "update" if st is not None else "create", "filePath": rel, "lines": lines,
                  "bytes": len(data), "encoding": fmt.encoding, "bom": bool(fmt.bom),
                  "lineEnding": {"\n": "LF", "\r\n": "CRLF"}.get(fmt.eol, "mixed")},
        ), ctx, _diagnostics.after(ctx, checked))
