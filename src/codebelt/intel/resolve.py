"""goToDefinition from the tree-sitter index, by scope rather than by name alone.

The file under the cursor is parsed and the language's scope rules (`scopes/`) say what the name
there refers to: a binding in this file (a local, a parameter, a definition), a name imported
from a module (followed through aliases and re-exports: `__init__.py` importing from its
submodules, TypeScript `export … from`), a member of a known class (`self.x`, `this.x`, a
receiver whose assignment or annotation names its class; base classes followed), or a module.
Only when syntax cannot tell are definitions found by name, ranked by nearness (this file, the
files it imports, its directory) and kind (members for `obj.name`, top-level names otherwise),
and cut to the nearest tier that has any.

Every step is bounded: re-exports are followed at most MAX_HOPS deep and MAX_FILES files are
parsed per answer.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node

from .index import CodeIndex
from .languages import language_for, parse
from .model import Answer, Symbol
from .scopes import Import, Target, text
from .scopes import go as go_scopes
from .scopes import python as py_scopes
from .scopes import typescript as ts_scopes

MAX_HOPS = 8
MAX_FILES = 32  # files parsed per answer while following imports
MAX_CANDIDATES = 500
MEMBER_KINDS = frozenset({"method", "field", "property", "constructor"})
TYPE_KINDS = frozenset({"class", "interface", "struct", "enum", "trait", "type", "union",
                        "record", "protocol", "object"})
SCOPED = {"python": py_scopes, "typescript": ts_scopes, "tsx": ts_scopes,
          "javascript": ts_scopes, "go": go_scopes}


@dataclass
class _Parsed:
    rel: str
    language: str
    root: Node
    data: bytes


@dataclass
class _Work:
    """One answer's state: files parsed so far (bounded) and what was found."""

    index: CodeIndex
    origin: str
    parsed: dict[str, _Parsed | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def parse(self, rel: str) -> _Parsed | None:
        if rel in self.parsed:
            return self.parsed[rel]
        if len(self.parsed) >= MAX_FILES:
            return None
        lang = language_for(rel)
        got = None
        if lang is not None:
            try:
                data = self.index.source_bytes(self.index.absolute(rel))
                got = _Parsed(rel, lang, parse(lang, data).root_node, data)
            except Exception:  # an unreadable file is one that cannot be followed
                got = None
        self.parsed[rel] = got
        return got


def definitions_at(index: CodeIndex, path: Path, line: int, character: int | None, *,
                   limit: int = 50) -> Answer:
    """Where the name at (line, character) of `path` is defined (1-based positions)."""
    rel = index.relative(path)
    lang = language_for(path)
    found = index.identifier_node(path, line, character)
    if found is None or lang is None:
        return index.definitions("", limit=1)  # an empty answer with the index's note
    node, data, name = found
    scopes = SCOPED.get(lang)
    if rel is None or scopes is None:
        return _by_name(index, name, rel, None, member=_looks_like_member(node), limit=limit)
    work = _Work(index, rel)
    root = node
    while root.parent is not None:
        root = root.parent
    work.parsed[rel] = _Parsed(rel, lang, root, data)
    target = scopes.target(root, node, name)
    spots: list[tuple[str, int, int, int]] = []  # rel, line, char, length
    symbols: list[Symbol] = []
    for b in target.spots:
        spots.append((rel, b.start_point[0] + 1, _char(data, b), len(text(b))))
    if target.this_module:
        spots.append((rel, 1, 1, 0))
    if target.module_of is not None:
        for f in _module_files(index, lang, rel, target.module_of.module):
            spots.append((f, 1, 1, 0))
    external = []
    for imp in target.imports:
        found = _through_import(work, scopes, lang, rel, imp, target.name, 0)
        if found is None:
            external.append(imp)
        else:
            symbols += found
    if target.constructor:
        for cls in [s for s in symbols if s.kind in TYPE_KINDS] + [
                s for s in index.definitions_in(name, sorted({r for r, *_ in spots}))
                if s.kind in TYPE_KINDS]:
            symbols += [m for m in index.definitions_in("constructor", [index.relative(cls.path) or ""])
                        if m.container == cls.name]
    if target.member_in is not None and not symbols:
        files = _module_files(index, lang, rel, target.member_in.module)
        if not files:  # a member of a type whose module is not in the workspace
            a = _answer(index, [], [], limit)
            a.note = _join(a.note, f"{name} is a member of {target.member_in.name} from "
                                   f"{target.member_in.module} (line {target.member_in.line}), "
                                   f"which {_outside(index)}")
            return a
        symbols += _members(work, scopes, target.member_of, target.name, rel, within=files)
    elif target.member_of and not symbols:
        symbols += _members(work, scopes, target.member_of, target.name, rel)
    if target.member_of_result and not symbols:
        found, outside = _members_of_results(work, scopes, lang, rel, target)
        if not found and len(outside) == len(target.member_of_result):
            a = _answer(index, [], [], limit)  # `fi, err := os.Stat(p)`: a type from outside
            where = ", ".join(sorted({f"{i.module}.{i.name} (line {i.line})" for i in outside}))
            a.note = _join(a.note, f"{name} is a member of what {where} returns, which {_outside(index)}")
            return a
        symbols += found
    symbols = _visible(index, scopes, rel, name, symbols)
    if spots:  # bindings the index knows as definitions are answered as symbols (kind, signature)
        known = {(index.relative(s.path), s.line, s.character): s
                 for s in index.definitions_in(name, sorted({r for r, *_ in spots}))}
        symbols += [known[(r, ln, ch)] for r, ln, ch, _ in spots if (r, ln, ch) in known]
    if spots or symbols:
        return _answer(index, symbols, spots, limit)
    if external and not target.member_of and not target.member:
        a = _answer(index, [], [], limit)
        where = ", ".join(sorted({f"{i.module} (line {i.line})" for i in external}))
        a.note = _join(a.note, f"{name} is imported from {where}, which {_outside(index)}")
        return a
    return _by_name(index, name, rel, work, member=target.member, limit=limit, scopes=scopes)


def _members_of_results(work: _Work, scopes, lang: str, rel: str,
                        target: Target) -> tuple[list[Symbol], list[Import]]:
    """Members named like `target` of the types the functions it was assigned from return, and
    those functions whose module is not in the workspace."""
    index = work.index
    out: list[Symbol] = []
    outside: list[Import] = []
    for imp, which in target.member_of_result:
        fns = _through_import(work, scopes, lang, rel, imp, imp.name or "", 0)
        if fns is None:
            outside.append(imp)
        for fn in fns or []:
            frel = index.relative(fn.path) or ""
            parsed = work.parse(frel) if fn.kind == "function" else None
            if parsed is None:
                continue
            via, typ = scopes.result_type(parsed.root, fn.line, which)
            if typ is None:
                continue
            files = (_module_files(index, lang, frel, via.module) if via is not None
                     else scopes.member_files(index, [frel]))
            if files:
                out += _members(work, scopes, [typ], target.name, rel, within=files)
    return out, outside


def _visible(index: CodeIndex, scopes, rel: str | None, name: str,
             symbols: list[Symbol]) -> list[Symbol]:
    """Drop definitions the language's own rules hide from `rel` (Go: test files, testdata,
    another package's unexported names)."""
    rule = getattr(scopes, "visible", None)
    if rule is None or rel is None:
        return symbols
    return [s for s in symbols if rule(rel, index.relative(s.path) or "", name)]


def _char(data: bytes, node: Node) -> int:
    """1-based character (code point) column of `node`."""
    start = data.rfind(b"\n", 0, node.start_byte) + 1
    return len(data[start:node.start_byte].decode("utf-8", "replace")) + 1


def _answer(index: CodeIndex, symbols: list[Symbol], spots: list[tuple[str, int, int, int]],
            limit: int) -> Answer:
    seen = set()
    uniq = []
    for s in symbols:
        key = (s.path, s.line, s.character)
        if key not in seen:
            seen.add(key)
            uniq.append(s)
    locs = [(index.absolute(r), ln, ch, ln, ch + n) for r, ln, ch, n in spots
            if (index.absolute(r), ln, ch) not in seen]
    locs += [(s.path, s.line, s.character, s.line, s.character + len(s.name)) for s in uniq]
    locs = sorted(set(locs), key=lambda s: (str(s[0]), s[1], s[2]))
    total = len(locs)
    return Answer(backend="tree-sitter", symbols=uniq[:limit],
                  locations=index.locations(locs[:limit]), total=total,
                  truncated=total > limit, note=index.note())


def _through_import(work: _Work, scopes, lang: str, rel: str, imp: Import, name: str,
                    hops: int) -> list[Symbol] | None:
    """Definitions of what `imp` imports (or of `name` inside the module it names); None when
    the module is not in the workspace."""
    files = _module_files(work.index, lang, rel, imp.module)
    if not files:
        return None
    wanted = imp.name if imp.name not in (None, "*") else name
    out: list[Symbol] = []
    for f in files:
        out += _exported(work, scopes, lang, f, wanted, hops)
    if not out and imp.name not in (None, "*") and lang == "python":
        # `from pkg import mod`: a submodule, not a name defined in pkg/__init__.py
        sub = _module_files(work.index, lang, rel, _pyjoin(imp.module, imp.name))
        if sub:
            if wanted == name and imp.name == name:
                return [_module_symbol(work.index, f) for f in sub]
    return out


def _pyjoin(module: str, name: str) -> str:
    return module + name if module.endswith(".") else f"{module}.{name}"


def _module_symbol(index: CodeIndex, rel: str) -> Symbol:
    return Symbol(posixpath.basename(rel), "module", index.absolute(rel), 1, 1, 1)


def _exported(work: _Work, scopes, lang: str, rel: str, name: str, hops: int) -> list[Symbol]:
    """Top-level definitions of `name` in module `rel`, following re-exports."""
    if hops > MAX_HOPS:
        return []
    index = work.index
    if name == "default" and hasattr(scopes, "default_name"):
        parsed = work.parse(rel)
        local = scopes.default_name(parsed.root) if parsed is not None else None
        if local is None:
            return []
        name = local
    own = [s for s in index.definitions_in(name, [rel]) if _top_level(s, lang)]
    if own:
        return own
    parsed = work.parse(rel)
    if parsed is None:
        return []
    out: list[Symbol] = []
    reexports = scopes.reexports(parsed.root, name)
    for imp in reexports:
        found = _through_import(work, scopes, lang, rel, imp, name, hops + 1)
        if found:
            out += found
            if imp.name != "*":
                break
    return out


def _top_level(s: Symbol, lang: str) -> bool:
    if lang == "go":  # a package clause names no definition
        return s.kind not in ("method", "field", "module")
    return s.container is None


def _members(work: _Work, scopes, classes: list[str], name: str, rel: str,
             within: list[str] | None = None) -> list[Symbol]:
    """Members named `name` of the classes named in `classes` or their bases (nearest class
    definitions first); `within`: the classes are defined in these files."""
    index = work.index
    seen: set[str] = set()
    todo = list(dict.fromkeys(classes))
    out: list[Symbol] = []
    while todo and len(seen) < 64:
        cls = todo.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        defs = [s for s in index.definitions_in(cls, within) if s.kind in TYPE_KINDS]
        defs = _nearest(index, defs, rel)
        paths = {index.relative(s.path) for s in defs}
        if hasattr(scopes, "member_files"):
            paths = set(scopes.member_files(index, sorted(p for p in paths if p)))
        members = [s for s in index.definitions_in(name, sorted(p for p in paths if p))
                   if s.container == cls and s.kind not in TYPE_KINDS - {"type"}
                   or (s.container == cls and s.kind in ("class", "enum"))]
        if members:
            out += members
            break
        for d in defs:
            parsed = work.parse(index.relative(d.path) or "")
            if parsed is not None:
                todo += scopes.class_bases(parsed.root, d.line)
    return out


def _nearest(index: CodeIndex, syms: list[Symbol], rel: str) -> list[Symbol]:
    """Of several definitions, those nearest `rel`: this file, else its directory's tree, else
    all."""
    here = [s for s in syms if index.relative(s.path) == rel]
    if here:
        return here
    d = posixpath.dirname(rel)
    while True:
        near = [s for s in syms if (index.relative(s.path) or "").startswith(d + "/" if d else "")]
        if near and (d or len(near) == len(syms)):
            return near
        if not d:
            return syms
        d = posixpath.dirname(d)


def _by_name(index: CodeIndex, name: str, rel: str | None, work: _Work | None, *,
             member: bool, limit: int, scopes=None) -> Answer:
    """Definitions by name when scope cannot tell: members for `obj.name`, other definitions
    for a bare name, cut to the nearest tier that has any. Where a language's scopes are exact
    about bare names (Go: a bare name is local, its package's or imported), a bare name is
    never answered with a member."""
    syms = _visible(index, scopes, rel, name, index.definitions_in(name, None, limit=MAX_CANDIDATES))
    if member:
        members = [s for s in syms if s.kind in MEMBER_KINDS or s.container]
        syms = members or syms
    else:
        top = [s for s in syms if s.kind not in MEMBER_KINDS]
        syms = top if top or getattr(scopes, "BARE_NAMES_EXACT", False) else syms
    if rel is not None and syms:
        tiers: list[list[Symbol]] = [[], [], []]
        d = posixpath.dirname(rel)
        for s in syms:
            r = index.relative(s.path) or ""
            tiers[0 if r == rel else 1 if posixpath.dirname(r) == d else 2].append(s)
        syms = next(t for t in tiers if t)
    a = _answer(index, syms, [], limit)
    a.note = _join(a.note, f"found by name: syntax does not tell which {name} this is")
    return a


def _looks_like_member(node: Node) -> bool:
    p = node.parent
    return p is not None and p.type in ("attribute", "member_expression", "selector_expression",
                                        "field_expression", "scoped_identifier")


def _module_files(index: CodeIndex, lang: str, rel: str, module: str) -> list[str]:
    if lang == "python":
        return _python_module(index, rel, module)
    if lang in ("typescript", "tsx", "javascript"):
        return ts_scopes.module_files(index.all_paths(), rel, module)
    if lang == "go":
        return go_scopes.package_files(index.all_paths(), rel, module, index.go_module(rel))
    return []


def _python_module(index: CodeIndex, rel: str, module: str) -> list[str]:
    paths = index.all_paths()
    dotted = module.lstrip(".")
    level = len(module) - len(dotted)
    parts = [p for p in dotted.split(".") if p]
    if level:
        base = posixpath.dirname(rel)
        for _ in range(level - 1):
            base = posixpath.dirname(base)
        stem = posixpath.join(base, *parts) if parts else base
        cands = [f"{stem}.py", f"{stem}.pyi", f"{stem}/__init__.py", f"{stem}/__init__.pyi"]
        if not parts:
            cands = [f"{stem}/__init__.py", f"{stem}/__init__.pyi"]
        return [c.lstrip("/") for c in cands if c.lstrip("/") in paths][:1]
    if not parts:
        return []
    stem = "/".join(parts)
    # several copies (src/ and build/, vendored): the one nearest the root
    return index.shortest_ending([f"{stem}.py", f"{stem}/__init__.py", f"{stem}.pyi", f"{stem}/__init__.pyi"])[:2]


def _outside(index: CodeIndex) -> str:
    """What a module the index does not have is: outside the workspace, or not indexed yet."""
    if index.complete():
        return "is not in the workspace"
    return "the code index has not found (its first build is still running)"


def _join(*parts: str | None) -> str | None:
    return "; ".join(p for p in parts if p) or None
