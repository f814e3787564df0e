"""The ranked repository map: personalisation toward paths and mentions, and the budget."""

from __future__ import annotations

import pytest

from codebelt.errors import IntelError
from codebelt.intel.repomap import repo_map

from .conftest import FIXTURES

PROJECT = {
    "core.py": "class Engine:\n    def start(self):\n        return 1\n\n\n"
               "def make_engine():\n    return Engine()\n",
    "util.py": "def slugify(text):\n    return text.lower()\n\n\ndef clamp(x, lo, hi):\n"
               "    return max(lo, min(x, hi))\n",
    "feature.py": "from util import slugify, clamp\n\n\nclass Feature:\n"
                  "    def name(self):\n        return slugify(clamp('x', 1, 2))\n",
    "orphan.py": "def lonely_function():\n    return 0\n",
}
for i in range(6):  # many users make Engine the hub
    PROJECT[f"user{i}.py"] = ("from core import Engine, make_engine\n\n\n"
                              f"def use{i}():\n    e = make_engine()\n    Engine().start()\n"
                              "    return e.start()\n")


@pytest.fixture
def mapped(tmp_path, make_index):
    root = tmp_path / "proj"
    root.mkdir()
    for name, text in PROJECT.items():
        (root / name).write_text(text)
    ix = make_index(root)
    ix.refresh()
    return root, ix


def _top_names(result, n=2):
    return [s.name for s in result.symbols[:n]]


def test_the_hub_ranks_first_without_focus(mapped):
    root, ix = mapped
    m = repo_map(ix)
    assert m.symbols[0].path == root / "core.py"
    assert set(_top_names(m, 3)) >= {"Engine", "make_engine"}
    assert m.text.startswith("core.py:\n")
    assert m.note is None


def test_paths_pull_the_map_toward_a_file(mapped):
    root, ix = mapped
    plain = repo_map(ix)
    focused = repo_map(ix, paths=[root / "feature.py"])
    assert _top_names(focused) != _top_names(plain)
    # feature.py uses util.py: its definitions now lead
    assert focused.symbols[0].path == root / "util.py"
    assert set(_top_names(focused)) == {"slugify", "clamp"}
    also_relative = repo_map(ix, paths=["feature.py"])
    assert _top_names(also_relative) == _top_names(focused)


def test_mentions_pull_the_map_toward_a_name(mapped):
    root, ix = mapped
    m = repo_map(ix, mentions=["lonely_function"])
    assert m.symbols[0].name == "lonely_function"
    assert m.files[0] == root / "orphan.py"


def test_unknown_paths_are_noted(mapped):
    root, ix = mapped
    m = repo_map(ix, paths=[root / "nope.py"])
    assert m.note and "nope.py" in m.note


@pytest.mark.parametrize("budget", [16, 24, 40, 64, 1024])
def test_budget_is_respected(mapped, budget):
    root, ix = mapped
    m = repo_map(ix, max_tokens=budget)
    assert m.chars == len(m.text)
    assert m.tokens == -(-len(m.text) // 4) <= budget
    if budget >= 1024:
        assert len(m.symbols) == m.candidates  # everything fits
    else:
        assert len(m.symbols) < m.candidates


def test_shown_lines_are_the_definitions(mapped):
    root, ix = mapped
    m = repo_map(ix)
    for s in m.symbols:
        line = (s.path).read_text().splitlines()[s.line - 1]
        assert line.strip() == s.signature
        assert f"{s.line}: {s.signature}" in m.text


def test_map_over_the_language_fixtures(make_index):
    ix = make_index(FIXTURES / "java")
    ix.refresh()
    m = repo_map(ix, max_tokens=200)
    # Circle is defined once and used from Report.java: it outranks the uncalled Report
    names = [s.name for s in m.symbols]
    assert names.index("Circle") < names.index("Report")


def test_bad_budget(mapped):
    _, ix = mapped
    with pytest.raises(IntelError):
        repo_map(ix, max_tokens=0)


def test_empty_index(tmp_path, make_index):
    root = tmp_path / "empty"
    root.mkdir()
    ix = make_index(root)
    ix.refresh()
    m = repo_map(ix)
    assert m.text == "" and m.symbols == [] and m.note


def test_tests_and_names_defined_everywhere_rank_low(tmp_path, make_index):
    """Test helpers that the tests use over and over, and a method name many classes define
    (`write`) used through attributes everywhere: neither may lead the map; the class the code
    builds on does."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "core.py").write_text("class Command:\n    def invoke(self):\n        return 1\n")
    for i in range(5):
        (root / "pkg" / f"stream{i}.py").write_text(
            f"class Stream{i}:\n    def write(self, x):\n        return x\n\n"
            "    def __repr__(self):\n        return ''\n")
    for i in range(4):
        (root / "pkg" / f"use{i}.py").write_text(
            "from pkg.core import Command\n\n\ndef run(out):\n    c = Command()\n"
            + "    out.write(1)\n" * 8 + "    return c.invoke()\n")
    (root / "tests" / "helpers.py").write_text(
        "from pkg.core import Command\n\n\ndef make_command():\n    return Command()\n")
    for i in range(6):
        (root / "tests" / f"test_{i}.py").write_text(
            "from tests.helpers import make_command\n\n\ndef test_it():\n"
            + "    make_command().invoke()\n" * 6)
    ix = make_index(root)
    ix.refresh()
    m = repo_map(ix)
    names = [s.name for s in m.symbols]
    assert names[0] == "Command", names[:5]
    assert "make_command" not in names[:5], names[:5]
    top = m.symbols[0].rank
    assert all(s.rank < top / 5 for s in m.symbols if s.name == "write")
    assert not any(p.relative_to(root).as_posix().startswith("tests/") for p in m.files[:2])
    assert "__repr__" not in names[:5]
