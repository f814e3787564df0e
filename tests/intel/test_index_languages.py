"""One table-driven test over every fixture project: each language's symbols (kind, line,
container), definitions and references must match its expected.json."""

from __future__ import annotations

import json

import pytest

from codebelt.intel.languages import language_for

from .conftest import FIXTURES

LANGS = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").exists())


def test_every_required_language_has_a_fixture():
    required = {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp",
                "csharp", "ruby", "php", "kotlin", "swift", "bash"}
    assert required <= set(LANGS)


@pytest.mark.parametrize("lang", LANGS)
def test_language_fixture(lang, make_index):
    root = FIXTURES / lang
    expected = json.loads((root / "expected.json").read_text())
    ix = make_index(root)
    stats = ix.refresh()
    assert stats.failed == 0
    for name, symbols in expected["symbols"].items():
        assert language_for(name) == expected["language"]
        got = ix.document_symbols(root / name)
        assert got.backend == "tree-sitter"
        rows = sorted([s.name, s.kind, s.line, s.container] for s in got.symbols)
        assert rows == sorted(symbols), name
    for name, sites in expected["definitions"].items():
        ans = ix.definitions(name)
        assert sorted(f"{s.path.name}:{s.line}" for s in ans.symbols) == sorted(sites), name
        assert all(loc.text.strip() for loc in ans.locations)
    for name, sites in expected["references"].items():
        ans = ix.references(name)
        got = sorted(f"{loc.path.name}:{loc.line}:{loc.character}" for loc in ans.locations)
        assert got == sorted(sites), name
        for loc in ans.locations:  # the location points at the name itself
            assert loc.text[loc.character - 1:loc.end_character - 1] == name
