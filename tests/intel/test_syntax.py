"""Syntax diagnostics from tree-sitter ERROR/MISSING nodes, and telling new ones from old."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebelt.errors import IntelError, UnknownLanguage
from codebelt.intel.syntax import introduced, syntax_errors

CASES = [
    # (language, source, [(line, character, message)])
    ("python", "x = 1\n", []),
    ("python", "print(1))\n", [(1, 9, "syntax error: unexpected `)`")]),
    ("python", "def f(x:\n    return x)\n", [(2, 5, "syntax error: unexpected `return`")]),
    ("go", "package a\nfunc f() {\n\treturn 1\n", [(4, 1, "missing `}`")]),
    ("rust", "fn main() { let x = 1 }\n", [(1, 22, "missing `;`")]),
    ("c", "int main() { return 0 }\n", [(1, 22, "missing `;`")]),
    ("javascript", "function f( { return 1; }\n", [(1, 22, "syntax error: unexpected `1`")]),
    ("python", "é = (1))\n", [(1, 8, "syntax error: unexpected `)`")]),  # characters, not bytes
]


@pytest.mark.parametrize("lang,src,want", CASES)
def test_syntax_errors(lang, src, want):
    got = syntax_errors(src, lang)
    assert [(d.line, d.character, d.message) for d in got] == want
    for d in got:
        assert (d.severity, d.source) == ("error", "tree-sitter")
        assert (d.end_line, d.end_character) >= (d.line, d.character)


def test_every_fixture_parses_cleanly():
    fixtures = Path(__file__).parent.parent / "fixtures" / "intel"
    files = [p for p in fixtures.rglob("*") if p.is_file() and p.suffix != ".json"]
    assert len(files) > 30
    for p in files:
        assert syntax_errors(p) == [], p


def test_path_input_names_the_file(tmp_path):
    p = tmp_path / "broken.ts"
    p.write_text("export function f( {\n")
    got = syntax_errors(p)
    assert got and all(d.path == p for d in got)


def test_errors_are_capped():
    src = "".join(f"x{i} = ((\n" for i in range(500))
    assert len(syntax_errors(src, "python", limit=7)) <= 7


def test_bad_input():
    with pytest.raises(UnknownLanguage):
        syntax_errors("x", "cobol")
    with pytest.raises(IntelError):
        syntax_errors("x")  # no language, no path
    with pytest.raises(IntelError):
        syntax_errors(Path("/nonexistent/file.py"))
    with pytest.raises(IntelError):
        syntax_errors(42)  # type: ignore[arg-type]


def test_introduced_ignores_moved_errors_and_counts_copies():
    before = syntax_errors("print(1))\nx = 2\n", "python")
    moved = syntax_errors("\n\n\nprint(1))\nx = 2\n", "python")
    assert len(before) == 1 and moved[0].line == 4
    assert introduced(before, moved) == []
    doubled = syntax_errors("print(1))\nprint(2))\n", "python")
    new = introduced(before, doubled)
    assert len(new) == 1 and new[0].message == "syntax error: unexpected `)`"
    fixed = syntax_errors("print(1)\n", "python")
    assert introduced(before, fixed) == []
    broke = syntax_errors("def f(:\n", "python")
    assert introduced([], broke) == broke
