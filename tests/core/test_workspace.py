"""Workspace path resolution and containment, as a table."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codebelt.errors import PathError
from codebelt.workspace import Workspace


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "out-link").symlink_to(tmp_path / "outside")
    (root / "in-link").symlink_to(root / "src")
    (root / "loop").symlink_to(root / "loop")
    return root


# (path as given, inside?, relative form or None to skip)
CASES = [
    ("src/a.py", True, "src/a.py"),
    ("./src/../src/a.py", True, "src/a.py"),
    ("ROOT/src/a.py", True, "src/a.py"),
    (".", True, "."),
    ("..", False, None),
    ("src/../../x", False, None),
    ("out-link/x", False, None),
    ("in-link/x", True, "src/x"),
    ("/etc/passwd", False, "/etc/passwd"),
    ("~", False, None),
    ("missing/deeper/file", True, "missing/deeper/file"),
]


@pytest.mark.parametrize("given,inside,rel", CASES)
def test_resolution(tree, given, inside, rel):
    ws = Workspace(tree)
    p = ws.resolve(given.replace("ROOT", str(tree)))
    assert p.is_absolute()
    assert ws.is_inside(p) is inside
    if rel is not None:
        assert ws.relative(p) == rel


def test_symlink_loop_does_not_hang(tree):
    ws = Workspace(tree)
    p = ws.resolve("loop/x")
    assert isinstance(p, Path)


@pytest.mark.parametrize("bad", ["", "   ", "\\\\host\\share", "//host/share/file", "a\x00b"])
def test_unusable_paths(tree, bad):
    with pytest.raises(PathError):
        Workspace(tree).resolve(bad)


def test_triple_slash_is_an_ordinary_absolute_path(tree):
    assert Workspace(tree).resolve("///etc") == Path("/etc")


@pytest.mark.parametrize(
    "rel,protected",
    [(".git/hooks/pre-commit", True), (".git/config", True), (".git", True), (".codebelt/x", True),
     (".claude/settings.json", True), (".env", True), ("sub/.env.production", True),
     ("src/a.py", False), (".github/workflows/ci.yml", False), (".gitignore", False),
     (".vscode/launch.json", True), (".husky/pre-push", True), ("a/.cargo/config.toml", True),
     (".gitmodules", True), (".bash_profile", True), (".envrc", True), (".mcp.json", True),
     ("docs/bashrc.md", False), (".vscodeignore", False), ("envrc", False)],
)
def test_protected_paths(tree, rel, protected):
    ws = Workspace(tree)
    assert (ws.protected_reason(ws.resolve(rel)) is not None) is protected


@pytest.mark.parametrize(
    "rel,protected",
    [(".bashrc", True), (".ssh/authorized_keys", True), (".config/codebelt/settings.json", True),
     (".local/bin/git", True), (".local/state/codebelt/audit.db", True), ("bin/ls", True),
     ("projects/app/main.py", False), ("notes.txt", False)],
)
def test_a_workspace_holding_the_home_directory_protects_its_configuration(tmp_path, monkeypatch, rel, protected):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for root in (home, tmp_path):  # the home directory itself, or a root above it
        ws = Workspace(root)
        assert (ws.protected_reason(ws.resolve(home / rel)) is not None) is protected
