"""Claude Code's LSP operations answered from the tree-sitter index: by name, instantly, for
every language with a grammar. A language server answers the same operations precisely
(`intel.lsp`); this is the answer while none runs.

Call hierarchy by name: the callers of a function are the definitions enclosing each place its
name is called; its callees are the names called inside its body, resolved to definitions.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import IntelError
from .index import CodeIndex
from .model import Answer, Location, Symbol, name_tier
from .resolve import definitions_at

OPERATIONS = (
    "goToDefinition", "findReferences", "hover", "documentSymbol", "workspaceSymbol",
    "goToImplementation", "prepareCallHierarchy", "incomingCalls", "outgoingCalls",
)
CALLABLE = frozenset({"function", "method", "constructor", "macro"})


def rank_symbols(symbols: list[Symbol], query: str) -> list[Symbol]:
    """A workspaceSymbol answer in the order a person looks for: exact names first, then names
    starting with the query, then names holding it, then looser matches — within each, shorter
    names first, and otherwise the order the answer came in (`name_tier`)."""
    q = query.strip()
    return sorted(symbols, key=lambda s: (name_tier(s.name, q), len(s.name)))


def enclosing(symbols: list[Symbol], line: int) -> Symbol | None:
    """The innermost definition whose lines contain `line`."""
    best = None
    for s in symbols:
        if s.line <= line <= max(s.end_line, s.line) and (best is None or s.line >= best.line):
            best = s
    return best


def answer(index: CodeIndex, operation: str, path: Path | None, line: int | None,
           character: int | None, query: str | None, limit: int) -> Answer:
    """One operation. Positions are 1-based; `limit` caps the entries gathered."""
    if operation == "workspaceSymbol":
        q = query or (_name_at(index, path, line, character) if path and line else None)
        if not q:
            raise IntelError("workspaceSymbol needs a query (or a filePath and line naming a symbol)")
        return index.workspace_symbols(q, limit=limit)
    if path is None:
        raise IntelError(f"{operation} needs filePath")
    if operation == "documentSymbol":
        return index.document_symbols(path, limit=limit)
    if line is None:
        raise IntelError(f"{operation} needs line (1-based)")
    name = _name_at(index, path, line, character)
    if name is None:
        where = f"line {line}" + (f", character {character}" if character else "")
        raise IntelError(f"no identifier at {where} of {path.name}; give the position of a symbol's name")
    if operation == "goToDefinition":
        return definitions_at(index, path, line, character, limit=limit)
    if operation == "goToImplementation":
        a = index.definitions(name, limit=limit)
        a.note = _join(a.note, f"tree-sitter cannot tell implementations from declarations: "
                               f"these are all the definitions named {name}")
        return a
    if operation == "findReferences":
        return index.references(name, limit=limit, include_definitions=True)
    if operation == "hover":
        a = definitions_at(index, path, line, character, limit=min(limit, 5))
        lines = []
        for s in a.symbols:
            where = f"{s.kind} {s.container + '.' if s.container else ''}{s.name}"
            lines.append(f"{where}\n    {s.signature}" if s.signature else where)
        a.hover = "\n".join(lines) if lines else f"{name}: no definition found in the index"
        return a
    if operation == "prepareCallHierarchy":
        target = _callable_at(index, path, line, name)
        return Answer(backend=index_backend(index), symbols=[target] if target else [],
                      total=1 if target else 0, note=index.note())
    if operation == "incomingCalls":
        return _incoming(index, _callable_at(index, path, line, name), name, limit)
    if operation == "outgoingCalls":
        target = _callable_at(index, path, line, name)
        if target is None:
            raise IntelError(f"no function or method named {name} is defined at line {line} of {path.name}")
        return _outgoing(index, target, limit)
    raise IntelError(f"unknown operation {operation!r}; expected one of {', '.join(OPERATIONS)}")


def index_backend(index: CodeIndex) -> str:
    return "tree-sitter"


def _name_at(index: CodeIndex, path: Path | None, line: int | None, character: int | None) -> str | None:
    if path is None or line is None:
        return None
    return index.identifier_at(path, line, character)


def _callable_at(index: CodeIndex, path: Path, line: int, name: str) -> Symbol | None:
    """The function the cursor names: its definition here, or the enclosing one, or the first
    definition of that name anywhere."""
    symbols = index.document_symbols(path, limit=10_000).symbols
    here = [s for s in symbols if s.name == name and s.line == line and s.kind in CALLABLE]
    if here:
        return here[0]
    defs = [s for s in index.definitions(name, limit=20).symbols if s.kind in CALLABLE]
    if defs:
        return defs[0]
    around = enclosing([s for s in symbols if s.kind in CALLABLE], line)
    return around


def _incoming(index: CodeIndex, target: Symbol | None, name: str, limit: int) -> Answer:
    refs = index.references(name, limit=max(limit * 4, 200))
    callers: dict[tuple, tuple[Symbol, list[Location]]] = {}
    per_file: dict[Path, list[Symbol]] = {}
    for loc in refs.locations:
        if loc.path not in per_file:
            try:
                per_file[loc.path] = index.document_symbols(loc.path, limit=10_000).symbols
            except IntelError:
                per_file[loc.path] = []
        caller = enclosing([s for s in per_file[loc.path] if s.kind in CALLABLE], loc.line)
        if caller is None:  # a call at the top level of a file: the file calls it
            caller = Symbol(loc.path.name, "module", loc.path, 1, 1, 1)
        if target is not None and caller == target:
            continue
        key = (caller.path, caller.line, caller.name)
        callers.setdefault(key, (caller, []))[1].append(loc)
        if len(callers) >= limit:
            break
    symbols = [c for c, _ in callers.values()]
    locations = [loc for _, locs in callers.values() for loc in locs]
    return Answer(backend="tree-sitter", symbols=symbols, locations=locations, total=len(symbols),
                  truncated=bool(refs.truncated), note=_join(index.note(), f"callers of {name}, by name"))


def _outgoing(index: CodeIndex, target: Symbol, limit: int) -> Answer:
    facts = index.file_facts(target.path)
    end = max(target.end_line, target.line)
    called: dict[str, tuple[int, int]] = {}
    for name, kind, line, char in facts.refs:
        if kind == "call" and target.line <= line <= end and name not in called:
            called[name] = (line, char)
    symbols: list[Symbol] = []
    spots = []
    for name, (line, char) in called.items():
        spots.append((target.path, line, char, line, char + len(name)))
        symbols += index.definitions(name, limit=3).symbols
        if len(symbols) >= limit:
            break
    return Answer(backend="tree-sitter", symbols=symbols[:limit], locations=index.locations(spots[:limit]),
                  total=len(called), truncated=len(called) > len(spots),
                  note=_join(index.note(), f"calls made by {target.name}, resolved by name"))


def _join(*parts: str | None) -> str | None:
    text = "; ".join(p for p in parts if p)
    return text or None
