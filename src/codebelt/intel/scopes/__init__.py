"""What the name under a cursor refers to, as far as one file's syntax can tell: per language,
the bindings in the enclosing scopes, the imports a name comes through, and the class whose
member an attribute is. `resolve.py` turns a `Target` into definitions using the index."""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node


@dataclass(frozen=True)
class Import:
    """A name bound by an import: `module` as written ("..a.b", "./util", "net/http"), `name`
    the name imported from it (None: the module itself)."""

    module: str
    name: str | None
    line: int = 0  # where the import is (1-based), for notes


@dataclass
class Target:
    name: str
    spots: list[Node] = field(default_factory=list)  # bindings in this file: the answer itself
    imports: list[Import] = field(default_factory=list)  # look `name` up through these
    member_of: list[str] = field(default_factory=list)  # classes (types) it is a member of
    member: bool = False  # an attribute of something whose type syntax cannot tell
    member_in: Import | None = None  # `member_of` are types of this module (Go's `t *testing.T`)
    # a member of what a function returns (Go's `x, err := pkg.New()`): the function (its
    # module and name) and which of its results
    member_of_result: list[tuple[Import, int]] = field(default_factory=list)
    module_of: Import | None = None  # the name is a module: its file is the answer
    constructor: bool = False  # `new C()`: C's constructor is an answer too
    this_module: bool = False  # an attribute of the module itself (`__name__`): its file


def text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def walk(node: Node, stop: frozenset[str], limit: int = 200_000):
    """Nodes under `node` in source order, not entering nodes whose type is in `stop` (they are
    yielded themselves). Bounded: a hostile file cannot make a query walk forever."""
    stack = [node]
    seen = 0
    while stack and seen < limit:
        n = stack.pop()
        seen += 1
        yield n
        if n is not node and n.type in stop:
            continue
        stack.extend(reversed(n.children))
