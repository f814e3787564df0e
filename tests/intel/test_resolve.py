"""goToDefinition by scope from the tree-sitter index, checked use by use against a language
server's recorded answers (tests/fixtures/resolve/<language>/expected.json, made by record.py
there): the index must give exactly the server's places inside the project, and nothing where
the server points outside it (builtins, the standard library). A case the index is known to
answer differently carries `tree_sitter` (what it answers) and `why`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codebelt.intel.resolve import definitions_at

FIXTURES = Path(__file__).parent.parent / "fixtures" / "resolve"
LANGS = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").exists())
MIN_PRECISION = 0.95
MIN_RECALL = 0.95


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    from codebelt.intel.index import CodeIndex

    made = {}
    for lang in LANGS:
        ix = CodeIndex(FIXTURES / lang, tmp_path_factory.mktemp(f"resolve-{lang}"), workers=1)
        ix.refresh()
        made[lang] = ix
    yield made
    for ix in made.values():
        ix.close()


def _answer(ix, root: Path, case) -> list[str]:
    path, line, char = case["at"]
    a = definitions_at(ix, root / path, line, char)
    return sorted({f"{loc.path.relative_to(root)}:{loc.line}" for loc in a.locations})


@pytest.mark.parametrize("lang", LANGS)
def test_every_use_answers_as_the_server_does(lang, indexes):
    root = FIXTURES / lang
    cases = json.loads((root / "expected.json").read_text())["cases"]
    wrong = []
    hits = given = found = asked = 0
    for case in cases:
        got = _answer(indexes[lang], root, case)
        want = case.get("tree_sitter", case["expect"])
        if got != want:
            wrong.append(f"{case['at']} {case['name']}: index {got}, expected {want}")
        server = set(case["expect"])
        given += len(got)
        hits += len(server & set(got))
        if server:
            asked += 1
            found += bool(server & set(got))
    assert not wrong, "\n".join(wrong)
    assert hits / max(given, 1) >= MIN_PRECISION and found / max(asked, 1) >= MIN_RECALL


def test_known_differences_say_why():
    for lang in LANGS:
        for case in json.loads((FIXTURES / lang / "expected.json").read_text())["cases"]:
            assert ("tree_sitter" in case) == ("why" in case), case
