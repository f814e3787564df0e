"""LSP results in codebelt's answer model: 1-based positions, absolute paths, the source line.

LSP positions count UTF-16 code units from 0; codebelt's are 1-based characters (code points),
as editors show them. Files outside the workspace root (a library's stub) are kept: the tool
layer decides what to show.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlparse

from ..model import Location, Symbol


@cache
def _kinds() -> dict[int, str]:
    """LSP SymbolKind numbers → names (lsprotocol's enumeration, loaded on first use)."""
    from lsprotocol.types import SymbolKind

    return {k.value: k.name.lower() for k in SymbolKind}


def kind_name(kind) -> str | None:
    return _kinds().get(kind)


def uri_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def utf16_to_chars(line: str, units: int) -> int:
    """A UTF-16 offset on `line` as a count of code points."""
    count = 0
    for i, ch in enumerate(line):
        if count >= units:
            return i
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(line)


def chars_to_utf16(line: str, chars: int) -> int:
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in line[:chars])


class Lines:
    """Source lines of files, read once per answer (bounded: large files are not read)."""

    MAX_BYTES = 5_000_000

    def __init__(self, read: Callable[[Path], list[str] | None] | None = None):
        self._cache: dict[Path, list[str]] = {}
        self._read = read or self._read_file

    def _read_file(self, path: Path) -> list[str] | None:
        from .documents import decode_lines

        try:
            if path.stat().st_size > self.MAX_BYTES:
                return None
            # decoded as the server decoded it (a latin-1 Python file by its coding line), so
            # its UTF-16 positions are counted on the same characters
            return decode_lines(path.read_bytes(), path)
        except OSError:
            return None

    def line(self, path: Path, index: int) -> str:
        if path not in self._cache:
            self._cache[path] = self._read(path) or []
        lines = self._cache[path]
        return lines[index] if 0 <= index < len(lines) else ""


def _position(lines: Lines, path: Path, pos: dict) -> tuple[int, int]:
    line = int(pos.get("line", 0))
    text = lines.line(path, line)
    return line + 1, utf16_to_chars(text, int(pos.get("character", 0))) + 1


def location(lines: Lines, item: dict[str, Any]) -> Location | None:
    """A Location or LocationLink (its target selection range)."""
    uri = item.get("uri") or item.get("targetUri")
    rng = item.get("range") or item.get("targetSelectionRange") or item.get("targetRange")
    path = uri_path(uri) if isinstance(uri, str) else None
    if path is None or not isinstance(rng, dict):
        return None
    line, char = _position(lines, path, rng.get("start") or {})
    end_line, end_char = _position(lines, path, rng.get("end") or {})
    return Location(path, line, char, end_line, end_char, lines.line(path, line - 1).rstrip("\r\n"))


def locations(lines: Lines, result: Any) -> list[Location]:
    items = result if isinstance(result, list) else [result] if isinstance(result, dict) else []
    return [loc for loc in (location(lines, i) for i in items if isinstance(i, dict)) if loc is not None]


def symbols(lines: Lines, result: Any, path: Path | None = None) -> list[Symbol]:
    """DocumentSymbol trees (for `path`) or flat SymbolInformation / WorkspaceSymbol lists."""
    out: list[Symbol] = []

    def walk(items: list, container: str | None) -> None:
        for s in items:
            if not isinstance(s, dict) or "name" not in s:
                continue
            kind = kind_name(s.get("kind")) or "symbol"
            if "location" in s:  # SymbolInformation / WorkspaceSymbol
                loc = s["location"]
                p = uri_path(loc.get("uri", ""))
                rng = loc.get("range")
                if p is None:
                    continue
                if rng is None:  # a WorkspaceSymbol without a range
                    out.append(Symbol(s["name"], kind, p, 1, 1, 1, s.get("containerName")))
                    continue
                line, char = _position(lines, p, rng["start"])
                end_line, _ = _position(lines, p, rng["end"])
                out.append(Symbol(s["name"], kind, p, line, char, end_line, s.get("containerName") or None,
                                  lines.line(p, line - 1).strip()))
            elif path is not None:  # DocumentSymbol
                rng = s.get("selectionRange") or s.get("range") or {}
                full = s.get("range") or rng
                line, char = _position(lines, path, rng.get("start") or {})
                end_line, _ = _position(lines, path, full.get("end") or {})
                out.append(Symbol(s["name"], kind, path, line, char, end_line, container,
                                  lines.line(path, line - 1).strip()))
                walk(s.get("children") or [], s["name"])

    walk(result if isinstance(result, list) else [], None)
    return out


def call_items(lines: Lines, result: Any, key: str | None = None) -> list[Symbol]:
    """CallHierarchyItems (`key` None) or incoming/outgoing calls (`key` "from" / "to")."""
    out: list[Symbol] = []
    for entry in result if isinstance(result, list) else []:
        item = entry.get(key) if key and isinstance(entry, dict) else entry
        if not isinstance(item, dict):
            continue
        p = uri_path(item.get("uri", ""))
        rng = item.get("selectionRange") or item.get("range")
        if p is None or not isinstance(rng, dict):
            continue
        line, char = _position(lines, p, rng["start"])
        end_line, _ = _position(lines, p, (item.get("range") or rng)["end"])
        out.append(Symbol(item.get("name", "?"), kind_name(item.get("kind")) or "function", p, line, char, end_line,
                          None, lines.line(p, line - 1).strip()))
    return out


def hover_text(result: Any) -> str | None:
    if not isinstance(result, dict):
        return None
    contents = result.get("contents")
    parts: list[str] = []
    for c in contents if isinstance(contents, list) else [contents]:
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, dict) and isinstance(c.get("value"), str):
            parts.append(c["value"])
    text = "\n".join(p.strip() for p in parts if p and p.strip())
    return text or None
