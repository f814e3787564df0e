"""Write: create or overwrite a file, atomically, keeping an existing file's encoding.

Overwriting keeps the file's encoding and BOM, and a CRLF file stays CRLF (bare LF in the
content becomes CRLF). Content the old encoding cannot hold is written as UTF-8, with a note.
New files are UTF-8 without BOM, content as given.
"""

from __future__ import annotations

import errno


from ..files.atomic import ABSENT, AtomicWriteError, FileChanged, write_atomic
from ..files.beneath import NotRegularFile, SymlinkInPath
from ..files.codec import SNIFF_BYTES, UTF8, BinaryFile, TextFormat, apply_eol, sniff
from ..files.lines import row_format
from ..files.state import MODIFIED, NOT_READ
from ..permissions.requests import PathRequest
from ..tool import DeclaredInput, DeclaredModel, Param, Tool, ToolContext, ToolError, ToolResult
from . import _diagnostics
from ._opening import beneath, swapped
from ._services import file_states
from ._texts import state_problem, symlink_refusal

DESCRIPTION = """Writes a file to the local filesystem.

Usage:
- This tool will overwrite the existing file if there is one at the provided path.
- If this is an existing file, you MUST use the Read tool first to read the file's contents. This tool will fail if you did not read the file first.
- Parent directories are created as needed. The write is atomic: the file is either the old one or the new one, never half-written.
- An existing file keeps its encoding, byte-order mark and CRLF line endings.
- ALWAYS prefer editing existing files in the codebase (Edit, MultiEdit). NEVER write new files unless explicitly required.
- NEVER proactively create documentation files (*.md) or README files. Only create documentation files if explicitly requested by the User.
- Only use emojis if the user explicitly requests it. Avoid writing emojis to files unless asked."""


class WriteInput(DeclaredInput):
    file_path: str = Param(description="The absolute path to the file to write (must be absolute, not relative)")
    content: str = Param(description="The content to write to the file")


class WriteOutput(DeclaredModel):
    type: str = Param(description="create | update")
    filePath: str
    lines: int
    bytes: int
    encoding: str
    bom: bool
    lineEnding: str = Param(description="LF | CRLF | mixed")
    diagnostics: list[dict] | None = Param(None, description="Problems the change introduced")

class Write(Tool):
    name = "Write"
    permission_family = "edit"
    description = DESCRIPTION
    Input = WriteInput
    Output = WriteOutput
    destructive = True
    idempotent = True
    max_result_chars = None  # a one-line confirmation
    starts_programs = True
    search_hint = "create or overwrite a file"

    def precheck(self, params: WriteInput, ctx: ToolContext) -> None:
        """Refuse, before anyone is asked to approve it, a Write that would fail: replacing a
        file this session has not read, or one changed since it was read."""
        path = ctx.resolve(params.file_path)
        if not ctx.workspace.is_inside(path):
            return  # the permission decision speaks first: writing outside is refused as such
        try:
            with beneath(ctx).open_regular(path) as opened:
                problem = ctx.service(file_states).check(path, opened.st, fd=opened.fd)
        except OSError:
            return  # a new file (or one run() reports with its own words)
        if problem:
            raise ToolError(state_problem(ctx, problem))

    def permission_requests(self, params: WriteInput, ctx: ToolContext) -> list[PathRequest]:
        return [PathRequest("write", ctx.resolve(params.file_path))]

    def run(self, params: WriteInput, ctx: ToolContext) -> ToolResult:
        path = ctx.resolve(params.file_path)  # the path the decision was made on
        rel = ctx.workspace.relative(path)
        states = ctx.service(file_states)
        where = beneath(ctx)
        fmt: TextFormat = UTF8
        note = ""
        refusal = symlink_refusal(ctx, params.file_path, path)
        if refusal:
            raise ToolError(refusal)
        try:
            opened = where.open_regular(path)
        except FileNotFoundError:
            st = None
        except IsADirectoryError:
            raise ToolError(ctx.texts("Write.directory", path=params.file_path)) from None
        except NotRegularFile:
            raise ToolError(f"{rel} is not a regular file (device, FIFO or socket); it cannot be written.") from None
        except SymlinkInPath as e:
            raise ToolError(swapped(ctx, path, e, "Nothing was written")) from None
        except OSError as e:
            raise ToolError(f"Cannot access {rel}: {e.strerror}.") from None
        else:
            with opened:
                st = opened.st
                problem = states.check(path, st, fd=opened.fd)
                if problem:
                    raise ToolError(state_problem(ctx, problem))
                try:
                    head = opened.pread(SNIFF_BYTES, 0)
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
        checked = _diagnostics.before(ctx, path)
        try:
            # The file replaced must be the one checked (or still be missing), up to the rename.
            written = write_atomic(path, data, beneath=where, expect=st if st is not None else ABSENT)
        except FileChanged as e:
            if e.errno == errno.ENOENT:
                raise ToolError(f"{rel} was deleted while writing; Read it again (or Write again to create it).") from None
            raise ToolError(MODIFIED if st is not None else NOT_READ) from None
        except AtomicWriteError as e:
            reason = str(e).replace(str(path), rel)
            raise ToolError(
                f"Could not write {rel}: {reason}. The file is unchanged." if st
                else f"Could not create {rel}: {reason}."
            ) from None
        states.record_write(path, data, fmt, written)
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        # As Claude Code: replacing an empty file is creating it
        key = "Write.updated" if st is not None and st.st_size > 0 else "Write.created"
        shown = ""
        if "{snippet}" in (ctx.texts.template(key) or "") and content:  # older releases showed the file
            row = row_format(ctx.texts.template("Read.row"))
            shown = "\n".join(row(str(n), line.removesuffix("\r")) for n, line in enumerate(content.split("\n"), 1))
        text = ctx.texts(key, path=params.file_path, snippet=shown) + ctx.texts("common.state_current") + note
        return _diagnostics.attach(ToolResult(
            text,
            data={"type": "update" if st is not None else "create", "filePath": rel, "lines": lines,
                  "bytes": len(data), "encoding": fmt.encoding, "bom": bool(fmt.bom),
                  "lineEnding": {"\n": "LF", "\r\n": "CRLF"}.get(fmt.eol, "mixed")},
        ), ctx, _diagnostics.after(ctx, checked))
