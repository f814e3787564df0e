"""Shared helpers for the code-intelligence tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codebelt.intel.index import CodeIndex

FIXTURES = Path(__file__).parent.parent / "fixtures" / "intel"


@pytest.fixture
def make_index(tmp_path: Path):
    made: list[CodeIndex] = []

    def factory(root: Path, **kw) -> CodeIndex:
        kw.setdefault("workers", 1)
        ix = CodeIndex(root, tmp_path / "cache" / str(len(made)), **kw)
        made.append(ix)
        return ix

    yield factory
    for ix in made:
        ix.close()


@pytest.fixture
def project(tmp_path: Path):
    """A copy of one fixture project, free to modify."""

    def copy(lang: str) -> Path:
        dst = tmp_path / "ws" / lang
        shutil.copytree(FIXTURES / lang, dst)
        (dst / "expected.json").unlink()
        return dst

    return copy
