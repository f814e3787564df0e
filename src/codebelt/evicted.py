"""The text that stands in for an output too large to return: where the whole output is, how to
read it, its first and last lines and how many were left out. One wording for every tool result
(`budget`) and every command output (`shell.execution.spool`)."""

from __future__ import annotations

from pathlib import Path


def notice(path: Path, size: str, total_lines: int, head: str, tail: str | None, omitted: int) -> str:
    """`size` is already worded ("12,345 characters", "300,000 bytes"); `tail` None: the head
    is all there is to show."""
    text = (
        f"Tool result too large ({size}, {total_lines:,} lines); the full output is saved "
        f"at {path}. Read it with Read using offset and limit, or search it with Grep.\n\n"
        f"--- first lines ---\n{head}"
    )
    if tail is not None:
        text += f"\n… {omitted:,} lines omitted …\n--- last lines ---\n{tail}"
    return text
