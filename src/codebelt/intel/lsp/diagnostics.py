"""Problems a change introduced, as a running language server sees them.

Before the change the document is synced with its old text and the server's diagnostics for it
are taken if they come quickly; after it the new text is sent and the answer awaited for a
bounded time. Introduced = after minus before, matched by severity, message and code (a problem
that only moved is not new). Without a "before" (the server was slow), only errors on the lines
the change touched count. Nothing here waits longer than it is given, and a server that
misbehaves yields None (the caller falls back to tree-sitter), never an exception.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..model import Diagnostic
from ..syntax import introduced
from .client import LspClient
from .manager import LspManager

SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}
REPORTED = ("error", "warning")
MAX_BYTES = 1_000_000


@dataclass
class Prior:
    client: LspClient
    path: Path
    language_id: str
    old_text: str | None
    before: list[Diagnostic] | None  # None: the server did not answer in time


def _convert(path: Path, text: str, raw: list[dict], source: str) -> list[Diagnostic]:
    from .convert import utf16_to_chars

    lines = text.split("\n")
    out = []
    for d in raw:
        sev = SEVERITIES.get(d.get("severity") or 1, "error")
        if sev not in REPORTED:
            continue
        rng = d.get("range") or {}
        start, end = rng.get("start") or {}, rng.get("end") or {}
        line, end_line = int(start.get("line", 0)), int(end.get("line", 0))
        src = lines[line] if 0 <= line < len(lines) else ""
        end_src = lines[end_line] if 0 <= end_line < len(lines) else ""
        code = d.get("code")
        out.append(Diagnostic(path, line + 1, utf16_to_chars(src, int(start.get("character", 0))) + 1, end_line + 1,
                              utf16_to_chars(end_src, int(end.get("character", 0))) + 1, sev,
                              str(d.get("message", "")).strip(), d.get("source") or source,
                              None if code is None else str(code)))
    return out


def prepare(manager: LspManager, path: Path, old_text: str | None, wait: float) -> Prior | None:
    """Before the change: sync the old text and collect its diagnostics (≤ `wait`). None when no
    server runs for the file (one is started in the background for next time)."""
    if len(old_text or "") > MAX_BYTES:
        return None
    client, _ = manager.server_for(path)
    if client is None:
        return None
    language_id = manager.language_id(path)
    try:
        seq = client.current_seq()
        before = None
        if old_text is not None:
            uri = path.as_uri()
            known = client.texts.get(uri) == old_text and client.diagnostics.get(uri) is not None
            version = client.sync(path, old_text, language_id)
            published = client.diagnostics.get(uri) if known else client.wait_diagnostics(uri, version, seq, wait)
            if published is not None:
                before = _convert(path, old_text, published.diagnostics, client.name)
        else:
            before = []  # a new file had no problems
        return Prior(client, path, language_id, old_text, before)
    except Exception:  # noqa: BLE001 - diagnostics must never fail an edit
        return None


def after(prior: Prior | None, new_text: str, wait: float) -> list[Diagnostic] | None:
    """After the change: what it introduced, or None when the server gave no answer in time."""
    if prior is None or len(new_text) > MAX_BYTES or prior.client.dead:
        return None
    client = prior.client
    try:
        uri = prior.path.as_uri()
        seq = client.current_seq()
        deadline = time.monotonic() + wait
        version = client.sync(prior.path, new_text, prior.language_id)
        published = client.wait_diagnostics(uri, version, seq, max(0.0, deadline - time.monotonic()))
        if published is None:
            return None
        found = _convert(prior.path, new_text, published.diagnostics, client.name)
    except Exception:  # noqa: BLE001 - diagnostics must never fail an edit
        return None
    if prior.before is not None:
        return introduced(prior.before, found)
    lo, hi = _changed_lines(prior.old_text or "", new_text)
    return [d for d in found if d.severity == "error" and d.end_line >= lo and d.line <= hi]


def _changed_lines(old: str, new: str) -> tuple[int, int]:
    """1-based first and last line of `new` that differ from `old` (a common prefix and suffix)."""
    a, b = old.split("\n"), new.split("\n")
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a) - 1, len(b) - 1
    while end_a >= start and end_b >= start and a[end_a] == b[end_b]:
        end_a -= 1
        end_b -= 1
    return start + 1, max(start + 1, end_b + 1)
