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


def render_notebook(source: bytes | Path) -> RenderedNotebook:
    """The notebook's cells and outputs from its bytes (what the caller read through its open
    descriptor) or, for a plain caller, its path."""
    try:
        nb = json.loads(source if isinstance(source, bytes) else source.read_bytes())
        cells = nb["cells"]
        if not isinstance(cells, list):
            raise TypeError("cells is not a list")
    except (ValueError, KeyError, TypeError) as e:
        raise NotebookError(f"not a valid notebook ({type(e).__name__}: {e})") from None
    meta = nb.get("metadata") or {}
    language = (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get(
        "language", "python"
    )
    out: list[str] = []
    images: list[tuple[str, str]] = []
    dropped = 0
    for i, cell in enumerate(cells, 1):
        ctype = cell.get("cell_type", "code")
        head = f'<cell {i} type="{ctype}"'
        if cell.get("id"):
            head += f' id="{cell["id"]}"'
        if ctype == "code" and cell.get("execution_count") is not None:
            head += f' execution_count="{cell["execution_count"]}"'
        out.append(head + ">")
        out.append(_join(cell.get("source")))
        for output in cell.get("outputs") or []:
            kind = output.get("output_type")
            if kind == "stream":
                out.append(f"<output stream={output.get('name', 'stdout')}>")
                out.append(_cut(_join(output.get("text"))).rstrip("\n"))
                out.append("</output>")
            elif kind in ("execute_result", "display_data"):
                data = output.get("data") or {}
                for mime in ("image/png", "image/jpeg"):
                    if mime in data:
                        if len(images) < MAX_IMAGES:
                            images.append((_join(data[mime]).replace("\n", ""), mime))
                            out.append(f"<output image {mime}: attached as image {len(images)}>")
                        else:
                            dropped += 1
                            out.append(f"<output image {mime}: not attached (image limit reached)>")
                        break
                if "text/plain" in data:
                    out.append("<output>")
                    out.append(_cut(_join(data["text/plain"])).rstrip("\n"))
                    out.append("</output>")
            elif kind == "error":
                tb = _ANSI.sub("", "\n".join(output.get("traceback") or []))
                out.append(f"<output error {output.get('ename', '')}: {output.get('evalue', '')}>")
                out.append(_cut(tb))
                out.append("</output>")
        out.append(f"</cell {i}>")
    return RenderedNotebook("\n".join(out), len(cells), language, images, dropped)
