"""The values code intelligence answers with, whichever backend (tree-sitter or a language
server) produced them. Lines and characters are 1-based, as editors show them; paths are
absolute (the tool layer makes them relative to the workspace root for display)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Location:
    path: Path
    line: int
    character: int
    end_line: int
    end_character: int
    text: str = ""  # the source line at `line`, stripped of its line ending

    def to_dict(self, display: str | None = None) -> dict[str, Any]:
        d = asdict(self)
        d["path"] = display if display is not None else str(self.path)
        return d


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str  # function | method | class | interface | struct | enum | module | variable | constant | field | type | macro …
    path: Path
    line: int
    character: int
    end_line: int
    container: str | None = None  # the enclosing symbol's name (a method's class)
    signature: str = ""  # the definition's first line, stripped

    def to_dict(self, display: str | None = None) -> dict[str, Any]:
        d = asdict(self)
        d["path"] = display if display is not None else str(self.path)
        return d


@dataclass(frozen=True)
class Diagnostic:
    path: Path
    line: int
    character: int
    end_line: int
    end_character: int
    severity: str  # error | warning | information | hint
    message: str
    source: str = ""  # "tree-sitter", "basedpyright", …
    code: str | None = None

    def key(self) -> tuple[str, str, str | None]:
        """Identity that survives line shifts: used to tell introduced problems from old ones."""
        return (self.severity, self.message, self.code)

    def to_dict(self, display: str | None = None) -> dict[str, Any]:
        d = asdict(self)
        d["path"] = display if display is not None else str(self.path)
        return d


@dataclass
class Answer:
    """One query's result: what was found, which backend found it, and whether it was cut."""

    backend: str  # "tree-sitter" | "lsp:<server>"
    locations: list[Location] = field(default_factory=list)
    symbols: list[Symbol] = field(default_factory=list)
    hover: str | None = None
    truncated: bool = False
    total: int | None = None
    note: str | None = None  # e.g. "the language server is still indexing; answered by tree-sitter"


def name_tier(name: str, query: str) -> int:
    """How well a symbol's name answers a workspace-symbol query, best first: 0 the name itself,
    1 the name in another case, 2 a name starting with it, 3 a name holding it, 4 anything
    else a server matched (its letters in order, say). Every answer is ranked by it, whoever
    found the names, so `get_domain` comes before `get_domain_literal`."""
    if name == query:
        return 0
    low, q = name.lower(), query.lower()
    if low == q:
        return 1
    if low.startswith(q):
        return 2
    return 3 if q in low else 4
