"""Read: a page of a text file in `cat -n` form, or an image, PDF or notebook."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field

from ..files.beneath import NotRegularFile, Opened, SymlinkInPath
from ..files.codec import SNIFF_BYTES, BinaryFile, sniff
from ..files.lines import PIECE_BYTES, read_page, read_page_text
from ..files.lookup import did_you_mean
from ..permissions.requests import PathRequest
from ..sandbox.jail import SYSTEM_DIRS
from ..tool import Image, Tool, ToolContext, ToolError, ToolInput, ToolResult
from ._opening import beneath, swapped
from ._services import file_states, line_indexes

DEFAULT_LIMIT = 2000
CHARS_PER_TOKEN = 4
MAX_UTF16_BYTES = 256 * 1024 * 1024  # UTF-16 files are decoded whole; beyond this, refuse
FULL_INDEX_BYTES = 64 * 1024 * 1024  # below this the whole file is indexed, so totals are known
EMPTY = "System reminder: File exists but has empty contents"

DESCRIPTION = """Reads a file from the local filesystem. You can access any file directly by using this tool.
Assume this tool is able to read all files in the workspace. If the User provides a path to a file assume that path is valid. It is okay to read a file that does not exist; an error will be returned.

Usage:
- The file_path parameter should be an absolute path, or a path relative to the workspace root
- By default, it reads up to 2000 lines starting from the beginning of the file
- You can optionally specify a line offset and limit (especially handy for long files), but it's recommended to read the whole file by not providing these parameters
- Lines longer than 5000 characters are split into continuation rows numbered N.1, N.2, … (they count against limit)
- A page larger than about 25,000 tokens is cut at a line boundary and ends with the offset to continue from
- Results are returned using cat -n format, with line numbers starting at 1
- This tool can read images (PNG, JPG, GIF, WebP); the image is shown to you visually (large images are downscaled)
- This tool can read PDF files (.pdf). For PDFs with more than 10 pages you MUST provide the pages parameter to read specific page ranges (e.g., pages: "1-5"). Maximum 20 pages per request.
- This tool can read Jupyter notebooks (.ipynb files) and returns all cells with their outputs
- This tool can only read files, not directories. To list a directory, use Glob or the ls command via Bash.
- You can call multiple tools in a single response. It is always better to speculatively read multiple potentially useful files in parallel.
- If you read a file that exists but has empty contents you will receive a system reminder warning in place of file contents.
- You must Read a file before you Edit or overwrite it with Write."""


class ReadInput(ToolInput):
    file_path: str = Field(description="The absolute path to the file to read")
    offset: int | None = Field(
        None,
        description="The line number to start reading from. Only provide if the file is too large to read at once",
    )
    limit: int | None = Field(
        None,
        description="The number of lines to read. Only provide if the file is too large to read at once.",
    )
    pages: str | None = Field(
        None,
        description='Page range for PDF files (e.g., "1-5", "3", "10-20"). Only applicable to PDF '
        "files. Maximum 20 pages per request.",
    )


class ReadOutput(BaseModel):
    type: str = Field(description="text | image | pdf | notebook")
    file: dict = Field(description="What was read: filePath, and for text numLines, startLine, totalLines, "
                       "truncated, nextOffset, encoding, lineEnding; for images and PDFs their size and pages")

class Read(Tool):
    name = "Read"
    permission_family = "read"
    description = DESCRIPTION
    Input = ReadInput
    Output = ReadOutput
    read_only = True
    concurrency_safe = True
    idempotent = True
    max_result_chars = None  # bounded by limit and the token budget; never evicted
    search_hint = "read a file, image, PDF or notebook"

    def validate(self, params: ReadInput, ctx: ToolContext) -> None:
        if params.offset is not None and params.offset < 0:
            raise ToolError(f"offset must be a line number (1 or more), got {params.offset}.")
        if params.limit is not None and params.limit < 1:
            raise ToolError(f"limit must be at least 1, got {params.limit}.")
        path = ctx.resolve(params.file_path)
        if (not ctx.workspace.is_inside(path) and _existence_is_public(path) and not os.path.lexists(path)
                and ctx.permissions.decide_path(PathRequest("read", path), self.name).behavior == "ask"):
            # Nobody can usefully approve reading a file that is not there, and in the installed
            # software's directories whether a file exists is no secret (docs/security.md).
            raise ToolError(f"File does not exist: {path}. Check the path, or use Glob to find the file.")

    def permission_requests(self, params: ReadInput, ctx: ToolContext) -> list[PathRequest]:
        return [PathRequest("read", ctx.resolve(params.file_path))]

    def run(self, params: ReadInput, ctx: ToolContext) -> ToolResult:
        path = ctx.resolve(params.file_path)  # the path the decision was made on
        show = ctx.workspace.relative
        try:
            opened = beneath(ctx).open_regular(path)
        except FileNotFoundError:
            raise ToolError(
                f"File does not exist: {show(path)}.{did_you_mean(path, show, beneath(ctx))} "
                "Check the path, or use Glob to find the file."
            ) from None
        except IsADirectoryError:
            raise ToolError(
                f"{show(path)} is a directory, not a file. To see what it contains, use Glob "
                f'(e.g. pattern "{show(path).rstrip("/")}/*") or Bash `ls`.'
            ) from None
        except NotRegularFile:
            raise ToolError(f"{show(path)} is not a regular file (device, FIFO or socket); it cannot be read.") from None
        except SymlinkInPath as e:
            raise ToolError(swapped(ctx, path, e, "Nothing was read")) from None
        except OSError as e:
            raise ToolError(f"Cannot read {show(path)}: {e.strerror}.") from None
        with opened:
            suffix = path.suffix.lower()
            if params.pages is not None and suffix != ".pdf":
                raise ToolError("pages applies only to PDF files; for text files use offset and limit.")

            from ..files.media import IMAGE_MIME

            if suffix in IMAGE_MIME:
                return self._image(opened, IMAGE_MIME[suffix], ctx)
            if suffix == ".pdf":
                return self._pdf(opened, params.pages, ctx)
            if suffix == ".ipynb":
                return self._notebook(opened, ctx)
            return self._text(opened, params, ctx)

    # -- text --------------------------------------------------------------------------------
    def _text(self, opened: Opened, params: ReadInput, ctx: ToolContext) -> ToolResult:
        path, st = opened.path, opened.st
        show = ctx.workspace.relative
        rel = show(path)
        states = ctx.service(file_states)
        offset = max(params.offset or 1, 1)
        limit = params.limit or DEFAULT_LIMIT
        max_chars = ctx.settings.read.max_tokens * CHARS_PER_TOKEN
        head = opened.pread(SNIFF_BYTES, 0)
        if not head:
            states.record_read(path, st, complete=True, sha256=None)
            return ToolResult(EMPTY, data=_data(rel, "", 0, 1, 0, False, None, None))
        try:
            fmt = sniff(head, at_eof=len(head) >= st.st_size)
        except BinaryFile as b:
            raise ToolError(
                f"{rel} is a binary file ({b.kind}, {_size(st.st_size)}); Read shows text, images "
                "(.png .jpg .jpeg .gif .webp), PDFs and notebooks. To inspect it, use Bash "
                "(e.g. `file`, `xxd | head`)."
            ) from None
        if fmt.ascii_compatible:
            index = ctx.service(line_indexes).get(path, st)
            with opened.reader(PIECE_BYTES) as f:
                if st.st_size <= FULL_INDEX_BYTES:
                    with index.lock:
                        index.extend(f, cancel=ctx.check_cancelled)
                page = read_page(f, fmt, index, offset, limit, max_chars, cancel=ctx.check_cancelled)
        else:
            if st.st_size > MAX_UTF16_BYTES:
                raise ToolError(
                    f"{rel} is {fmt.encoding} and {_size(st.st_size)}; Read decodes {fmt.encoding} files "
                    f"whole and stops at {_size(MAX_UTF16_BYTES)}. Use Bash (iconv | sed -n) to read part of it."
                )
            page = read_page_text(fmt.decode(opened.read_bytes()), offset, limit, max_chars)

        complete = offset == 1 and page.next_offset is None and page.cut_line is None
        states.record_read(path, st, complete=complete, fmt=fmt, fd=opened.fd)
        total = page.total_lines
        notes = [f"[Note: {rel} is {fmt.note}.]"] if fmt.note else []
        if page.rows == 0:
            text = (
                f"<system-reminder>Warning: the file exists but is shorter than the provided offset "
                f"({offset}). The file has {total} lines.</system-reminder>"
            )
            return ToolResult(text, data=_data(rel, fmt, 0, offset, total, False, None, None))
        text = page.text
        if page.next_offset is not None:
            of_total = f" of {total}" if total is not None else ""
            why = (
                f"the page reached the ~{max_chars // CHARS_PER_TOKEN:,}-token read budget"
                if page.stopped_by == "budget"
                else f"limit={limit} rows"
            )
            cut = ""
            if page.cut_line is not None and page.next_offset > page.cut_line:
                cut = (
                    f" Line {page.cut_line} alone is longer than a page and was cut; to see the rest "
                    "of it, use Bash (e.g. cut -c or fold) or Grep."
                )
            elif page.cut_line is not None:
                cut = f" Line {page.cut_line} was only partly shown."
            text += (
                f"\n\n[Output truncated: showing lines {page.start_line}-{page.end_line}{of_total} "
                f"({why}).{cut} To read more, call Read with offset={page.next_offset}.]"
            )
        if notes:
            text += "\n\n" + "\n".join(notes)
        return ToolResult(
            text,
            data=_data(rel, fmt, page.end_line - page.start_line + 1, page.start_line, total,
                       page.next_offset is not None, page.next_offset, fmt.note),
        )

    # -- media -------------------------------------------------------------------------------
    def _image(self, opened: Opened, mime: str, ctx: ToolContext) -> ToolResult:
        from ..files.media import (
            MediaError,
            load_image,
        )

        path, st = opened.path, opened.st
        rel = ctx.workspace.relative(path)
        try:
            img = load_image(
                opened,
                mime,
                ctx.settings.read.max_image_edge,
                ctx.settings.read.max_image_pixels,
            )
        except MediaError as e:
            raise ToolError(f"Cannot show {rel}: {e}.") from None
        ctx.service(file_states).record_read(path, st, complete=True, fd=opened.fd)
        size = f"{img.original_width}x{img.original_height}"
        if img.downscaled:
            size += f", downscaled to {img.width}x{img.height}"
        text = f"Image {rel} ({img.mime_type}, {size}, {_size(img.byte_size)})"
        data = {
            "type": "image",
            "file": {
                "filePath": rel, "mimeType": img.mime_type, "width": img.width, "height": img.height,
                "originalWidth": img.original_width, "originalHeight": img.original_height,
                "originalSize": img.byte_size,
            },
        }
        return ToolResult(text, data=data, images=[Image(img.data, img.mime_type)])

    def _pdf(self, opened: Opened, pages: str | None, ctx: ToolContext) -> ToolResult:
        from ..files.media import MAX_PDF_PAGES_PER_CALL, MediaError
        from ..files.pdf import read_pdf

        path, st = opened.path, opened.st
        rel = ctx.workspace.relative(path)
        max_chars = ctx.settings.read.max_tokens * CHARS_PER_TOKEN
        try:
            # In a child process bounded in memory and time (a PDF can inflate to gigabytes),
            # reading the file that was opened (its descriptor), whatever the path holds by now.
            doc = read_pdf(opened, pages, max_chars, cancelled=ctx.cancel_event.is_set)
        except MediaError as e:
            ctx.check_cancelled()
            raise ToolError(f"Cannot read {rel}: {e}.") from None
        count = doc.page_count
        if doc.too_many_pages:
            text = (
                f"{rel} is a PDF with {count} pages, too many to read at once. Call Read again "
                f'with pages set to a range of at most {MAX_PDF_PAGES_PER_CALL} pages, e.g. pages="1-5".'
            )
            return ToolResult(text, data={"type": "pdf", "file": {"filePath": rel, "pageCount": count, "pages": []}})
        wanted = doc.wanted
        parts: list[str] = []
        used = 0
        shown: list[int] = []
        for p in wanted:
            if p not in doc.texts:
                break
            block = f"--- Page {p} of {count} ---\n{doc.texts[p]}"
            if used + len(block) > max_chars and shown:
                break
            if len(block) > max_chars:
                block = block[:max_chars] + "\n… [page text cut at the read budget]"
            parts.append(block)
            used += len(block) + 2
            shown.append(p)
        text = "\n\n".join(parts)
        rest = [p for p in wanted if p not in shown]
        if rest:
            text += (
                f"\n\n[Output truncated at the ~{max_chars // CHARS_PER_TOKEN:,}-token read budget after page "
                f"{shown[-1]}. To read more, call Read with pages=\"{rest[0]}-{rest[-1]}\".]"
            )
        ctx.service(file_states).record_read(path, st, complete=len(shown) == count, fd=opened.fd)
        return ToolResult(
            text,
            data={"type": "pdf", "file": {"filePath": rel, "pageCount": count, "pages": shown,
                                          "truncated": bool(rest)}},
        )

    def _notebook(self, opened: Opened, ctx: ToolContext) -> ToolResult:
        from ..files.notebook import NotebookError, render_notebook

        path, st = opened.path, opened.st
        rel = ctx.workspace.relative(path)
        try:
            nb = render_notebook(opened.read_bytes())
        except NotebookError as e:
            raise ToolError(f"Cannot read {rel} as a notebook: {e}. Read it as text by copying it to a .json name, or use Bash.") from None
        max_chars = ctx.settings.read.max_tokens * CHARS_PER_TOKEN
        text = nb.text
        truncated = len(text) > max_chars
        if truncated:
            text = text[: text.rfind("\n", 0, max_chars) + 1] + (
                f"\n[Output truncated: the notebook is larger than the ~{max_chars // CHARS_PER_TOKEN:,}-token "
                "read budget. Use Bash (e.g. jq '.cells[10:20]') to read the remaining cells.]"
            )
        if nb.images_dropped:
            text += f"\n[{nb.images_dropped} more output images were not attached.]"
        ctx.service(file_states).record_read(path, st, complete=not truncated, fd=opened.fd)
        return ToolResult(
            text,
            data={"type": "notebook", "file": {"filePath": rel, "cells": nb.cells, "language": nb.language,
                                               "images": len(nb.images), "truncated": truncated}},
            images=[Image(b64, mime) for b64, mime in nb.images],
        )


def _data(rel, fmt, num_lines, start, total, truncated, next_offset, note) -> dict:
    file = {
        "filePath": rel,
        "numLines": num_lines,
        "startLine": start,
        "totalLines": total,
        "truncated": truncated,
    }
    if next_offset is not None:
        file["nextOffset"] = next_offset
    if fmt:
        file["encoding"] = fmt.encoding + ("-sig" if fmt.bom and fmt.encoding == "utf-8" else "")
        file["lineEnding"] = {"\n": "LF", "\r\n": "CRLF"}.get(fmt.eol, "mixed")
    if note:
        file["note"] = note
    return {"type": "text", "file": file}


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover


_PUBLIC = tuple({Path(os.path.realpath(d)) for d in SYSTEM_DIRS})


def _existence_is_public(path: Path) -> bool:
    """Whether `path` lies in the installed software's directories (/usr, /opt, /lib …, the ones
    every jailed command sees): what exists there is what the packages installed, not a secret
    of the user's. Elsewhere outside the workspace (home directories, /etc, /tmp, /var) whether a
    file exists is itself worth asking about, so a Read there asks whatever the answer."""
    return any(path == d or d in path.parents for d in _PUBLIC)
