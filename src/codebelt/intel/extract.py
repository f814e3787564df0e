"""Parse one file and pull out its definitions and references with the language's tags query.

Pure and picklable in both directions (bytes in, tuples out) so it can run in a worker process.
Positions are 1-based; characters count code points, not bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node, QueryCursor

from .languages import parse, tags_query

MAX_SYMBOLS = 20_000  # per file: a generated file must not flood the index
MAX_REFS = 100_000
MAX_SIGNATURE = 200
QUERY_MATCH_LIMIT = 4096  # tree-sitter's in-progress match cap: keeps pathological input bounded

# definitions that other definitions nest in and take their container name from
CONTAINER_KINDS = frozenset(
    {"class", "interface", "struct", "enum", "module", "trait", "namespace", "impl", "object",
     "union", "protocol", "record", "function", "method", "scope"}
)
# containers that turn a nested function into a method
CLASS_LIKE = frozenset(
    {"class", "interface", "struct", "enum", "trait", "impl", "object", "union", "protocol",
     "record", "module", "scope"}
)
# the more telling kind wins when several patterns capture the same name node
REF_PRIORITY = {"call": 0, "type": 1, "import": 2, "attribute": 3, "identifier": 4}

# a name node that is a string's contents: a type named in a string annotation
STRING_NODES = frozenset({"string_content"})
MAX_STRING_NAMES = 1000  # bytes of a string annotation looked into
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
SELF_MEMBER = "\0self"  # marks a definition whose container is the class around its method

SymbolRow = tuple[str, str, int, int, int, str | None, str]  # name kind line char end_line container sig
RefRow = tuple[str, str, int, int]  # name kind line char


@dataclass
class FileFacts:
    symbols: list[SymbolRow] = field(default_factory=list)
    refs: list[RefRow] = field(default_factory=list)
    truncated: bool = False  # a per-file cap was hit


class _Columns:
    """Byte column -> 1-based code point column, per line (ASCII lines take the fast path)."""

    def __init__(self, source: bytes):
        self.source = source
        self.starts: list[int] | None = None
        self.ascii = source.isascii()

    def _line_start(self, row: int) -> int:
        if self.starts is None:
            starts = [0]
            find = self.source.find
            i = find(b"\n")
            while i != -1:
                starts.append(i + 1)
                i = find(b"\n", i + 1)
            self.starts = starts
        return self.starts[row]

    def char(self, row: int, byte_col: int) -> int:
        if self.ascii:
            return byte_col + 1
        start = self._line_start(row)
        return len(self.source[start : start + byte_col].decode("utf-8", "replace")) + 1

    def line_text(self, row: int) -> str:
        start = self._line_start(row)
        end = self.source.find(b"\n", start)
        raw = self.source[start : end if end != -1 else len(self.source)]
        return raw.decode("utf-8", "replace").rstrip("\r")


def _text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if raw is not None else ""


def _is_constant_name(name: str) -> bool:
    return len(name) > 1 and name.upper() == name and any(c.isalpha() for c in name)


_DEF, _SCOPE, _REF, _NONE = range(4)
# language -> pattern index -> what the pattern captures, learnt from its first match: every
# match of a pattern has the same capture names, and looking at them once per pattern instead
# of once per match is most of the Python-level cost of a build
_ROLES: dict[str, dict[int, tuple[int, str, str]]] = {}


def _role(caps: dict) -> tuple[int, str, str]:
    for cap in caps:
        if cap.startswith("definition."):
            return (_DEF, cap, cap[11:])
        if cap == "scope":
            return (_SCOPE, cap, "scope")
        if cap.startswith("reference."):
            return (_REF, cap, cap[10:])
    return (_NONE, "", "")


def extract(source: bytes, language: str) -> FileFacts:
    tree = parse(language, source)
    cursor = QueryCursor(tags_query(language), match_limit=QUERY_MATCH_LIMIT)
    cols = _Columns(source)
    facts = FileFacts()

    # (start_byte, -end_byte, name, kind, name_node, explicit_container, is_symbol, node);
    # explicit_container is SELF_MEMBER for an attribute assigned on `self`
    defs: list[tuple[int, int, str, str, Node, str | None, bool, Node]] = []
    def_patterns: list[int] = []
    def_name_starts: set[int] = set()
    refs: dict[int, tuple[int, str, Node]] = {}  # name start byte -> (priority, kind, node)

    # several patterns may define the same name (a struct is also a type): the pattern written
    # first in the query wins
    best_def: dict[int, int] = {}  # name start byte -> index into defs
    roles = _ROLES.setdefault(language, {})
    for pattern, caps in cursor.matches(tree.root_node):
        names = caps.get("name")
        if not names:
            continue
        name_node = names[0]
        role = roles.get(pattern)
        if role is None:
            role = roles[pattern] = _role(caps)
        what, cap, kind = role
        if what != _REF and cap not in caps:  # a pattern whose captures vary: look each time
            what, cap, kind = _role(caps)
        if what == _REF:
            prio = REF_PRIORITY.get(kind, 5)
            key = name_node.start_byte
            old = refs.get(key)
            if old is None or prio < old[0]:
                refs[key] = (prio, kind, name_node)
        elif what == _DEF:
            node = caps[cap][0]
            explicit = caps.get("container")
            container = _text(explicit[0]) if explicit else SELF_MEMBER if "self" in caps else None
            entry = (node.start_byte, -node.end_byte, _text(name_node), kind,
                     name_node, container, True, node)
            key = name_node.start_byte
            seen = best_def.get(key)
            if seen is None:
                best_def[key] = len(defs)
                defs.append(entry)
                def_patterns.append(pattern)
            elif pattern < def_patterns[seen]:
                defs[seen] = entry
                def_patterns[seen] = pattern
            def_name_starts.add(key)
        elif what == _SCOPE:
            node = caps[cap][0]
            defs.append((node.start_byte, -node.end_byte, _text(name_node), "scope",
                         name_node, None, False, node))
            def_patterns.append(pattern)

    defs.sort(key=lambda d: (d[0], d[1]))
    stack: list[tuple[int, str, str]] = []  # (end_byte, name, kind) of open containers
    members: set[tuple[str | None, str]] = set()  # (class, name) of fields seen
    for start, neg_end, name, kind, name_node, explicit, is_symbol, node in defs:
        while stack and stack[-1][0] <= start:
            stack.pop()
        parent = stack[-1] if stack else None
        if explicit is SELF_MEMBER:
            # `self.x = …` in a method: a field of the class around the method, stated once
            owner = next((c for c in reversed(stack) if c[2] in CLASS_LIKE), None)
            if owner is None or (owner[1], name) in members:
                continue
            container = owner[1]
        else:
            container = explicit or (parent[1] if parent else None)
        if kind == "field":
            members.add((container, name))
        if is_symbol:
            if kind == "function" and (explicit or (parent and parent[2] in CLASS_LIKE)):
                kind = "method"
            elif kind == "variable" and _is_constant_name(name):
                kind = "constant"
            if len(facts.symbols) >= MAX_SYMBOLS:
                facts.truncated = True
            elif name:
                row, col = name_node.start_point
                # the signature is the definition's first line, from where the definition starts
                sig = cols.line_text(node.start_point[0]).strip()
                facts.symbols.append((name, kind, row + 1, cols.char(row, col),
                                      node.end_point[0] + 1, container, sig[:MAX_SIGNATURE]))
        if kind in CONTAINER_KINDS:
            stack.append((-neg_end, name, kind))

    for start_byte in sorted(refs):
        if start_byte in def_name_starts:
            continue  # a definition's own name is not a reference to it
        if len(facts.refs) >= MAX_REFS:
            facts.truncated = True
            break
        _, kind, node = refs[start_byte]
        if node.type in STRING_NODES:
            for name, row, col in _names_in_string(node):
                facts.refs.append((name, kind, row + 1, cols.char(row, col)))
            continue
        name = _text(node)
        if not name:
            continue
        row, col = node.start_point
        facts.refs.append((name, kind, row + 1, cols.char(row, col)))
    return facts


def _names_in_string(node: Node) -> list[tuple[str, int, int]]:
    """The identifiers in a one-line string that names types (`"Optional[Text]"`), with their
    0-based (row, byte column)."""
    raw = node.text or b""
    if node.start_point[0] != node.end_point[0] or len(raw) > MAX_STRING_NAMES:
        return []
    row, col = node.start_point
    s = raw.decode("utf-8", "replace")
    out = []
    for m in _IDENTIFIER.finditer(s):
        out.append((m.group(), row, col + len(s[:m.start()].encode("utf-8"))))
    return out

