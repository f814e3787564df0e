"""Output budgets: results larger than a tool's `max_result_chars` are evicted to a file.

The model gets the path, the first and last lines, and how many lines were left out, so it can
Read or Grep the rest. Tools with `max_result_chars = None` bound their own output.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from .evicted import notice

if TYPE_CHECKING:
    from .tool import Tool, ToolResult

HEAD_LINES = 40
TAIL_LINES = 40
PREVIEW_CHARS = 4_000  # per end: one enormous line must not bring the flood back


def _clip(text: str, limit: int, from_end: bool) -> str:
    if len(text) <= limit:
        return text
    return ("…" + text[-limit:]) if from_end else (text[:limit] + "…")


def eviction_notice(path: Path, text: str, total_chars: int | None = None) -> str:
    """The text that replaces an evicted result: where it is, plus head and tail."""
    lines = text.splitlines()
    total_chars = len(text) if total_chars is None else total_chars
    head = _clip("\n".join(lines[:HEAD_LINES]), PREVIEW_CHARS, False)
    tail = None
    if len(lines) > HEAD_LINES + TAIL_LINES:
        tail = _clip("\n".join(lines[-TAIL_LINES:]), PREVIEW_CHARS, True)
    omitted = max(0, len(lines) - HEAD_LINES - TAIL_LINES)
    return notice(path, f"{total_chars:,} characters", len(lines), head, tail, omitted)


def evict(text: str, results_dir: Path, tool_name: str) -> tuple[Path, str]:
    path = results_dir / f"{tool_name.lower()}-{uuid.uuid4().hex[:10]}.txt"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    return path, eviction_notice(path, text)


def apply(tool: "Tool", result: "ToolResult", results_dir: Path) -> "ToolResult":
    limit = tool.max_result_chars
    if limit is None or len(result.text) <= limit:
        return result
    path, notice = evict(result.text, results_dir, tool.name)
    data = dict(result.data or {})
    data.update({"truncated": True, "isIncomplete": True, "outputPath": str(path)})
    result.text = notice
    result.data = data
    return result
