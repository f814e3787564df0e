"""Read: a page of a text file in `cat -n` form, or an image, PDF or notebook."""

from __future__ import annotations

import os
from pathlib import Path
import base64
import re

from ..files.beneath import NotRegularFile, Opened, SymlinkInPath
from ..files.codec import SNIFF_BYTES, BinaryFile, sniff
from ..files.lines import PIECE_BYTES, read_page, read_page_text, row_format
from ..permissions.requests import PathRequest
from ..sandbox.jail import SYSTEM_DIRS
from ..tool import DeclaredInput, DeclaredModel, Document, Image, Param, Tool, ToolContext, ToolError, ToolResult
from ._opening import beneath, swapped
from ._services import file_states, line_indexes
from ._texts import not_found

DEFAULT_LIMIT = 1_000_000  # as Claude Code: no line limit of its own, the token budget bounds a page
CHARS_PER_TOKEN = 4
MAX_UTF16_BYTES = 256 * 1024 * 1024  # UTF-16 files are decoded whole; beyond this, refuse
FULL_INDEX_BYTES = 64 * 1024 * 1024  # below this the whole file is indexed, so totals are known
MAX_PDF_DOCUMENT_BYTES = 20 * 1024 * 1024  # a PDF sent whole as a document block
_PAGES = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
MAX_SAFE_INTEGER = 2**53 - 1  # JavaScript's, which bounds Claude Code's integer parameters
LARGE_TOKENS = 100_000  # allow_large: the budget of one page

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


# Declared, not pydantic models: `codebelt call Read` imports no pydantic (tool.DeclaredModel).
class ReadInput(DeclaredInput):
    file_path: str = Param(description="The absolute path to the file to read")
    offset: int | None = Param(
        None,
        description="The line number to start reading from. Only provide if the file is too large to read at once",
        json_schema_extra={"minimum": 0, "maximum": MAX_SAFE_INTEGER},
    )
    limit: int | None = Param(
        None,
        description="The number of lines to read. Only provide if the file is too large to read at once.",
        json_schema_extra={"exclusiveMinimum": 0, "maximum": MAX_SAFE_INTEGER},
    )
    pages: str | None = Param(
        None,
        description='Page range for PDF files (e.g., "1-5", "3", "10-20"). Only applicable to PDF '
        "files. Maximum 20 pages per request.",
    )
    allow_large: bool | None = Param(
        None,
        description="Set to true to read a text file, or a line range of one, that is over the usual size "
        "limits, up to what still fits in your context. Only use this when you genuinely need all of it or the "
        "user asked for the whole file; otherwise read it in parts with offset and limit, or search it.",
    )


class ReadOutput(DeclaredModel):
    type: str = Param(description="text | image | pdf | notebook")
    file: dict = Param(description="What was read: filePath, and for text numLines, startLine, totalLines, "
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
            raise ToolError(ctx.texts("Read.not_found", message=not_found(ctx, path))) from None
        except IsADirectoryError:
            raise ToolError(ctx.texts("Read.directory", path=str(path))) from None
        except NotRegularFile:
            raise ToolError(f"{show(path)} is not a regular file (device, FIFO or socket); it cannot be read.") from None
        except SymlinkInPath as e:
            raise ToolError(swapped(ctx, path, e, "Nothing was read")) from None
        except OSError as e:
            raise ToolError(f"Cannot read {show(path)}: {e.strerror}.") from None
        with opened:
            suffix = path.suffix.lower()

            from ..files.media import IMAGE_MIME

            if suffix in IMAGE_MIME:
                return self._image(opened, IMAGE_MIME[suffix], params.file_path, ctx)
            if suffix == ".pdf":
                return self._pdf(opened, params.pages, params.file_path, ctx)
            if suffix == ".ipynb":
                return self._notebook(opened, ctx)
            return self._text(opened, params, ctx)

    # -- text --------------------------------------------------------------------------------
    def _text(self, opened: Opened, params: ReadInput, ctx: ToolContext) -> ToolResult:
        path, st = opened.path, opened.st
        show = ctx.workspace.relative
        rel = show(path)
        states = ctx.service(file_states)
        # As Claude Code: an offset or limit out of range is as if not given (offset 0 is line 1)
        offset = params.offset if params.offset is not None and params.offset > 0 else 1
        limit = params.limit if params.limit is not None and params.limit > 0 else DEFAULT_LIMIT
        tokens = LARGE_TOKENS if params.allow_large else ctx.settings.read.max_tokens
        max_chars = tokens * CHARS_PER_TOKEN
        head = opened.pread(SNIFF_BYTES, 0)
        if not head:
            states.record_read(path, st, complete=True, sha256=None)
            return ToolResult(ctx.texts("Read.empty"), data=_data(rel, "", 0, 1, 0, False, None, None))
        try:
            fmt = sniff(head, at_eof=len(head) >= st.st_size)
        except BinaryFile:
            raise ToolError(ctx.texts("Read.binary", ext=f" {path.suffix}" if path.suffix else "")) from None
        row = row_format(ctx.texts.template("Read.row"))
        if fmt.ascii_compatible:
            index = ctx.service(line_indexes).get(path, st)
            with opened.reader(PIECE_BYTES) as f:
                if st.st_size <= FULL_INDEX_BYTES:
                    with index.lock:
                        index.extend(f, cancel=ctx.check_cancelled)
                page = read_page(f, fmt, index, offset, limit, max_chars, cancel=ctx.check_cancelled, row=row)
        else:
            if st.st_size > MAX_UTF16_BYTES:
                raise ToolError(
                    f"{rel} is {fmt.encoding} and {_size(st.st_size)}; Read decodes {fmt.encoding} files "
                    f"whole and stops at {_size(MAX_UTF16_BYTES)}. Use Bash (iconv | sed -n) to read part of it."
                )
            page = read_page_text(fmt.decode(opened.read_bytes()), offset, limit, max_chars, row)

        complete = offset == 1 and page.next_offset is None and page.cut_line is None
        states.record_read(path, st, complete=complete, fmt=fmt, fd=opened.fd)
        total = page.total_lines
        notes = [f"[Note: {rel} is {fmt.note}.]"] if fmt.note else []
        # Claude Code numbers lines as the parts between line breaks: a final line break is
        # followed by an empty last line, shown when the page reaches the end
        final_break = page.next_offset is None and total is not None and _ends_with_break(opened, st, fmt)
        shown_total = total + 1 if final_break and total is not None else total
        if page.rows == 0:
            if final_break and offset == (total or 0) + 1:
                return ToolResult(row(str(offset), "") + ctx.texts.get("Read.after_text", ""),
                                  data=_data(rel, fmt, 1, offset, shown_total, False, None, None))
            text = ctx.texts("Read.short", offset=offset, lines=shown_total)
            return ToolResult(text, data=_data(rel, fmt, 0, offset, total, False, None, None))
        text = page.text
        if final_break and page.end_line - page.start_line + 1 < limit:
            text += "\n" + row(str(page.end_line + 1), "")
        if page.next_offset is not None and page.stopped_by != "limit":  # the caller's limit: it knows
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
        text += ctx.texts.get("Read.after_text", "")
        return ToolResult(
            text,
            data=_data(rel, fmt, page.end_line - page.start_line + 1, page.start_line, total,
                       page.next_offset is not None, page.next_offset, fmt.note),
        )

    # -- media -------------------------------------------------------------------------------
    def _image(self, opened: Opened, mime: str, given: str, ctx: ToolContext) -> ToolResult:
        from ..files.media import MediaError, load_image, sniff_image

        path, st = opened.path, opened.st
        rel = ctx.workspace.relative(path)
        if st.st_size == 0:
            raise ToolError(ctx.texts("Read.image_empty", path=given))
        head = opened.pread(16, 0)
        if sniff_image(head) is None:
            raise ToolError(ctx.texts("Read.image_invalid", path=given, hex=" ".join(f"{b:02x}" for b in head[:8])))
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
        text = ""  # as Claude Code: the image alone, and a note when it was scaled down
        if img.downscaled:
            text = ctx.texts("Read.image_scaled", width=img.original_width, height=img.original_height,
                             shown_width=img.width, shown_height=img.height,
                             factor=f"{img.original_width / img.width:.2f}")
        data = {
            "type": "image",
            "file": {
                "filePath": rel, "mimeType": img.mime_type, "width": img.width, "height": img.height,
                "originalWidth": img.original_width, "originalHeight": img.original_height,
                "originalSize": img.byte_size,
            },
        }
        return ToolResult(text, data=data, images=[Image(img.data, img.mime_type)])

    def _pdf(self, opened: Opened, pages: str | None, given: str, ctx: ToolContext) -> ToolResult:
        from ..files.media import MAX_PDF_PAGES_PER_CALL, MediaError
        from ..files.pdf import read_pdf

        path, st = opened.path, opened.st
        rel = ctx.workspace.relative(path)
        size = _short_size(st.st_size)
        if pages is not None:  # Claude Code's rule: one page or one range, at most 20 pages
            m = _PAGES.match(pages)
            first, last = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (0, 0)
            if not m or first < 1 or last < first:
                raise ToolError(ctx.texts("Read.pdf_bad_pages", pages=pages))
            if last - first + 1 > MAX_PDF_PAGES_PER_CALL:
                raise ToolError(ctx.texts("Read.pdf_too_many", pages=pages, max=MAX_PDF_PAGES_PER_CALL))
            pages = f"{first}-{last}"
        max_chars = ctx.settings.read.max_tokens * CHARS_PER_TOKEN
        try:
            # In a child process bounded in memory and time (a PDF can inflate to gigabytes),
            # reading the file that was opened (its descriptor), whatever the path holds by now.
            doc = read_pdf(opened, pages, max_chars, cancelled=ctx.cancel_event.is_set)
            problem = ""
        except MediaError as e:
            ctx.check_cancelled()
            doc, problem = None, str(e)
        if doc is not None and doc.too_many_pages:
            raise ToolError(ctx.texts("Read.pdf_too_long", count=doc.page_count, max=MAX_PDF_PAGES_PER_CALL))

        def page_texts() -> tuple[str, list[int]]:
            parts: list[str] = []
            used = 0
            shown: list[int] = []
            for p in doc.wanted:
                if p not in doc.texts:
                    break
                block = f"--- Page {p} of {doc.page_count} ---\n{doc.texts[p]}"
                if used + len(block) > max_chars and shown:
                    break
                parts.append(block[:max_chars])
                used += len(block) + 2
                shown.append(p)
            text = "\n\n".join(parts)
            rest = [p for p in doc.wanted if p not in shown]
            if rest:
                text += (f"\n\n[Output truncated at the ~{max_chars // CHARS_PER_TOKEN:,}-token read budget after page "
                         f"{shown[-1]}. To read more, call Read with pages=\"{rest[0]}-{rest[-1]}\".]")
            return text, shown

        if pages is None:
            # The whole PDF goes to the model as a document block where the API takes one;
            # elsewhere its text stands in for it.
            if st.st_size > MAX_PDF_DOCUMENT_BYTES:
                raise ToolError(f"{given} is {_size(st.st_size)}; a PDF is sent whole only up to "
                                f"{_size(MAX_PDF_DOCUMENT_BYTES)}. Read it in parts with pages (e.g. pages: \"1-5\").")
            raw = opened.read_bytes()
            fallback = page_texts()[0] if doc is not None else f"Cannot read {rel}: {problem}."
            ctx.service(file_states).record_read(path, st, complete=True, fd=opened.fd)
            return ToolResult(
                ctx.texts("Read.pdf", path=given, size=size),
                data={"type": "pdf", "file": {"filePath": rel, "pageCount": doc.page_count if doc else 0,
                                              "originalSize": st.st_size}},
                documents=[Document(base64.b64encode(raw).decode("ascii"), "application/pdf", fallback)],
            )
        if doc is None:
            if "does not exist" in problem or "pages" in problem:
                first = int(pages.split("-")[0])
                count = int(problem.rsplit(" ", 2)[-2]) if problem.split()[-1] == "pages" else 0
                raise ToolError(ctx.texts("Read.pdf_outside", first=first, count=count, max=MAX_PDF_PAGES_PER_CALL,
                                          example=min(count, MAX_PDF_PAGES_PER_CALL)))
            raise ToolError(f"Cannot read {rel}: {problem}.")
        text, shown = page_texts()
        ctx.service(file_states).record_read(path, st, complete=len(shown) == doc.page_count, fd=opened.fd)
        head = ctx.texts("Read.pdf_pages", count=len(shown), path=given, size=size)
        return ToolResult(
            head + "\n\n" + text,
            data={"type": "pdf", "file": {"filePath": rel, "pageCount": doc.page_count, "pages": shown,
                                          "truncated": len(shown) < len(doc.wanted)}},
        )

    def _notebook(self, opened: Opened, ctx: ToolContext) -> ToolResult:
        from ..files.notebook import NotebookError, render_notebook

        path, st = opened.path, opened.st
        rel = ctx.workspace.relative(path)
        try:
            nb = render_notebook(opened.read_bytes())
        except NotebookError as e:
            raise ToolError(ctx.texts("Read.notebook_bad_json", reason=e.facts.get("detail", str(e)))) from None
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


def _ends_with_break(opened: Opened, st, fmt) -> bool:
    """Whether the file's last character is a line break (in its own encoding)."""
    unit = 2 if fmt.encoding.startswith("utf-16") else 1
    if st.st_size < unit:
        return False
    try:
        tail = opened.pread(unit, st.st_size - unit)
    except OSError:
        return False
    return tail in (b"\n", b"\n\x00", b"\x00\n")


def _short_size(n: int) -> str:
    """A size as Claude Code prints one: 873 bytes, 3.5KB, 1.2MB."""
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f}KB"
    return f"{n / (1024 * 1024):.1f}MB"
