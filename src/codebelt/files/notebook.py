"""Jupyter notebooks for Read: every cell with its type, source and outputs.

Text outputs (streams, text/plain results, errors) are rendered as text; image outputs
(image/png, image/jpeg) are returned separately so Read can attach them as image blocks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import NotebookError

MAX_OUTPUT_CHARS = 10_000  # per output; long tracebacks and logs are cut
MAX_IMAGES = 8
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass
class RenderedNotebook:
    text: str
    cells: int
    language: str
    images: list[tuple[str, str]] = field(default_factory=list)  # (base64, mime)
    images_dropped: int = 0


def _join(src) -> str:
    return "".join(src) if isinstance(src, list) else str(src or "")


def _cut(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n… [output cut: {len(text) - MAX_OUTPUT_CHARS} more characters]"


def cell_ids(cells: list) -> list[str]:
    """Each cell's id; `cell-N` (from 0) for a cell without one (nbformat before 4.5)."""
    return [str(c.get("id")) if isinstance(c, dict) and c.get("id") else f"cell-{i}" for i, c in enumerate(cells)]


def load_notebook(raw: bytes) -> dict:
    try:
        nb = json.loads(raw)
    except ValueError as e:
        raise NotebookError(f"not valid JSON ({e})", reason="bad_json", detail=str(e)) from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError("not a valid notebook (no list of cells)", reason="bad_json", detail="no list of cells")
    return nb


def render_notebook(source: bytes | Path) -> RenderedNotebook:
    """The cells as Claude Code's Read shows them: `<cell id="…">` (with `<cell_type>` for
    other than code), the source, then each output on its own lines; output images apart. From
    the notebook's bytes (what the caller read through its open descriptor) or its path."""
    nb = load_notebook(source if isinstance(source, bytes) else source.read_bytes())
    cells = nb["cells"]
    meta = nb.get("metadata") or {}
    language = (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get(
        "language", "python"
    )
    items: list[str] = []
    images: list[tuple[str, str]] = []
    dropped = 0
    for cell, cid in zip(cells, cell_ids(cells)):
        if not isinstance(cell, dict):
            continue
        ctype = cell.get("cell_type", "code")
        kind = f"<cell_type>{ctype}</cell_type>" if ctype != "code" else ""
        items.append(f'<cell id="{cid}">{kind}{_join(cell.get("source"))}</cell id="{cid}">')
        for output in cell.get("outputs") or []:
            kind = output.get("output_type")
            if kind == "stream":
                items.append("\n" + _cut(_join(output.get("text"))))
            elif kind in ("execute_result", "display_data"):
                data = output.get("data") or {}
                if "text/plain" in data:
                    items.append("\n" + _cut(_join(data["text/plain"])))
                for mime in ("image/png", "image/jpeg"):
                    if mime in data:
                        if len(images) < MAX_IMAGES:
                            images.append((_join(data[mime]).replace("\n", ""), mime))
                        else:
                            dropped += 1
                        break
            elif kind == "error":
                tb = _ANSI.sub("", "\n".join(output.get("traceback") or []))
                items.append(f"\n{output.get('ename', '')}: {output.get('evalue', '')}\n" + _cut(tb))
    return RenderedNotebook("\n".join(items), len(cells), language, images, dropped)


# -- editing ---------------------------------------------------------------------------------------
@dataclass
class NotebookChange:
    data: bytes  # the new file
    action: str  # "updated" | "inserted" | "deleted"
    cell_id: str | None  # the cell edited or inserted (None: inserted into a notebook without ids)


def _format_of(raw: bytes) -> tuple[int | None, bool, bool]:
    """(indent, ends with a newline, escapes non-ASCII) of a notebook file as it was written."""
    text = raw.decode("utf-8", "replace")
    m = re.match(r"\{\r?\n([ \t]+)\S", text)
    indent = len(m.group(1).expandtabs(1)) if m else None
    return indent, text.endswith("\n"), bool(re.search(r"\\u[0-9a-fA-F]{4}", text)) and text.isascii()


def _source_like(new: str, old) -> object:
    """`new` in the shape the notebook keeps sources: a list of lines (Jupyter's) or one string."""
    if isinstance(old, list):
        return new.splitlines(keepends=True)
    return new


def edit_notebook(raw: bytes, *, mode: str, cell_id: str | None, new_source: str, cell_type: str | None,
                  new_id: str) -> NotebookChange:
    """Replace, insert or delete one cell, keeping the file's own formatting: indent, key order,
    trailing newline, how sources are stored; nbformat's minor version is left as it is (a
    cell inserted into a notebook whose cells have ids gets `new_id`). Raises NotebookError with a
    reason: bad_json, unknown_cell, need_id, need_type."""
    nb = load_notebook(raw)
    cells = nb["cells"]
    ids = cell_ids(cells)
    if mode == "insert" and not cell_type:
        raise NotebookError("cell_type is required to insert a cell", reason="need_type")
    if mode != "insert" and not cell_id:
        raise NotebookError("cell_id is required to replace or delete a cell", reason="need_id")
    index = None
    if cell_id:
        if cell_id not in ids:
            raise NotebookError(f"no cell with id {cell_id!r}", reason="unknown_cell", cell_id=cell_id)
        index = ids.index(cell_id)
    with_ids = any(isinstance(c, dict) and "id" in c for c in cells) or (
        nb.get("nbformat", 4) >= 4 and nb.get("nbformat_minor", 0) >= 5)
    lists = any(isinstance(c, dict) and isinstance(c.get("source"), list) for c in cells) or not cells
    if mode == "delete":
        del cells[index]
        action, result_id = "deleted", cell_id
    elif mode == "insert":
        cell: dict = {"cell_type": cell_type}
        if cell_type == "code":
            cell["execution_count"] = None
        if with_ids:
            cell["id"] = new_id
        cell["metadata"] = {}
        if cell_type == "code":
            cell["outputs"] = []
        cell["source"] = new_source.splitlines(keepends=True) if lists else new_source
        cells.insert(0 if index is None else index + 1, cell)
        action, result_id = "inserted", (new_id if with_ids else None)
    else:
        cell = cells[index]
        kind = cell_type or cell.get("cell_type", "code")
        cell["source"] = _source_like(new_source, cell.get("source", [] if lists else ""))
        if kind == "code":
            # a changed code cell's outputs no longer belong to it
            cell["execution_count"] = None
            cell["outputs"] = []
        else:
            cell.pop("execution_count", None)
            cell.pop("outputs", None)
        if kind != cell.get("cell_type"):
            cell["cell_type"] = kind
            if kind == "code":  # keep Jupyter's key order for the keys a code cell gains
                cell = dict(sorted(cell.items()))
                cells[index] = cell
        action, result_id = "updated", cell_id
    indent, newline, ascii_only = _format_of(raw)
    text = json.dumps(nb, indent=indent, ensure_ascii=ascii_only)
    return NotebookChange((text + ("\n" if newline else "")).encode("utf-8"), action, result_id)
