"""Syntax errors as tree-sitter sees them (ERROR and MISSING nodes), and which of them an edit
introduced.

tree-sitter recovers from errors, so this is a quick "did the edit break the parse" check, not a
compiler: it reports where recovery happened, with the offending token.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tree_sitter import Node

from ..errors import IntelError
from .languages import check_language, language_for, parse
from .model import Diagnostic
from .sources import SourceSkipped, read_source

SOURCE = "tree-sitter"
DEFAULT_LIMIT = 50
MAX_BYTES = 4_000_000
MAX_TOKEN = 40  # characters of the offending token quoted in a message
MAX_VISITS = 1_000_000  # nodes walked at most: hostile input cannot make this loop long


def syntax_errors(source: Path | str | bytes, language: str | None = None, *,
                  path: Path | None = None, limit: int = DEFAULT_LIMIT) -> list[Diagnostic]:
    """Syntax errors of a file (`source` a Path) or of text (`source` str/bytes, `path` naming it
    in the diagnostics). The language defaults to the one the file name implies."""
    if isinstance(source, Path):
        path = source
        try:
            data = read_source(source, MAX_BYTES).data
        except SourceSkipped as e:
            raise IntelError(f"cannot check {source}: {e}") from e
    elif isinstance(source, str):
        data = source.encode("utf-8", "surrogatepass")
    elif isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        raise IntelError(f"syntax_errors takes a Path, str or bytes, not {type(source).__name__}")
    if len(data) > MAX_BYTES:
        raise IntelError(f"too large to check ({len(data)} bytes > {MAX_BYTES})")
    if language is None:
        language = language_for(path) if path is not None else None
        if language is None:
            raise IntelError("cannot tell the language: pass `language` or a path with a known "
                             "extension")
    check_language(language)
    where = path if path is not None else Path("<text>")
    tree = parse(language, data)
    if not tree.root_node.has_error:
        return []
    return _collect(tree.root_node, where, data, limit)


def _collect(root: Node, path: Path, data: bytes, limit: int) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    stack = [root]
    visits = 0
    while stack and len(out) < limit and visits < MAX_VISITS:
        node = stack.pop()
        visits += 1
        if node.is_missing:
            out.append(_diag(path, data, node, f"missing `{_short(node.type)}`"))
            continue
        if node.is_error and not any(c.has_error for c in node.children):
            # the innermost error region only: one diagnostic per region, not one per token
            token = _culprit(node)
            out.append(_diag(path, data, node, f"syntax error: unexpected {_describe(token)}",
                             start=token))
            continue
        if node.has_error:
            stack.extend(reversed(node.children))
    out.sort(key=lambda d: (d.line, d.character))
    return out


def _culprit(error: Node) -> Node:
    """The token the parser tripped on, as best tree-sitter lets us tell: complete, valid
    subtrees at the start of the region are context, the first token after them is the one
    that did not fit."""
    children = error.children
    i = 0
    while i < len(children) - 1 and children[i].child_count and not children[i].has_error:
        i += 1
    node = children[i] if children else error
    while node.child_count:
        node = node.child(0)
    return node


def _describe(token: Node) -> str:
    text = (token.text or b"").decode("utf-8", "replace").strip()
    if not text:
        return "end of input"
    return f"`{_short(text)}`"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TOKEN else text[: MAX_TOKEN - 1] + "…"


def _col(data: bytes, row_start: int, byte_col: int) -> int:
    return len(data[row_start : row_start + byte_col].decode("utf-8", "replace")) + 1


def _diag(path: Path, data: bytes, node: Node, message: str,
          start: Node | None = None) -> Diagnostic:
    (r0, c0), (r1, c1) = (start or node).start_point, node.end_point
    s0 = (start or node).start_byte - c0  # byte offset of the start row
    s1 = node.end_byte - c1
    return Diagnostic(path=path, line=r0 + 1, character=_col(data, s0, c0), end_line=r1 + 1,
                      end_character=_col(data, s1, c1), severity="error", message=message,
                      source=SOURCE, code=None)


def introduced(before: list[Diagnostic], after: list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics in `after` that `before` did not have, matched by `Diagnostic.key()` with
    multiplicity (so a problem that only moved lines is not new; a second copy of it is)."""
    left = Counter(d.key() for d in before)
    out = []
    for d in after:
        k = d.key()
        if left[k] > 0:
            left[k] -= 1
        else:
            out.append(d)
    return out
