"""A fixed workspace layout for the command table, and a permission engine built on it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from codebelt.permissions.engine import PermissionEngine
from codebelt.settings import Settings
from codebelt.workspace import Workspace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
_ESCAPES = re.compile(r"\\(\\|n|t|r|x[0-9a-fA-F]{2})")


def unescape(text: str) -> str:
    """The table's escapes: \\n \\t \\r \\\\ \\xHH; any other backslash is literal."""

    def repl(m: re.Match[str]) -> str:
        e = m.group(1)
        return {"\\": "\\", "n": "\n", "t": "\t", "r": "\r"}.get(e) or chr(int(e[1:], 16))

    return _ESCAPES.sub(repl, text)


def load_table(name: str = "commands.tsv", columns: int = 3) -> list[tuple[str, ...]]:
    """Rows of a fixture table: the command (escapes decoded), then the other columns as written."""
    rows = []
    for n, line in enumerate((FIXTURES / name).read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        assert len(parts) == columns, f"{name}:{n}: expected {columns} tab-separated columns, got {len(parts)}"
        rows.append((unescape(parts[0]), *parts[1:]))
    return rows


def build_layout(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "sub").mkdir()
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "nested" / ".git").mkdir(parents=True)
    (root / "dash").mkdir()
    (root / "dash" / "--pre=evil.sh").write_text("#!/bin/sh\nid\n")
    (root / "a.py").write_text("print('a')\n")
    (root / "README.md").write_text("# readme\n")
    (root / "src" / "main.py").write_text("def main(): pass\n")
    os.symlink("/etc/hosts", root / "link")
    os.symlink("/etc", root / "linkdir")  # a directory link leading out
    (root / "sub" / "deep" / "er").mkdir(parents=True)
    os.symlink("sub/deep/er", root / "deeplink")  # inside, but `cd deeplink; cd ../..` climbs out
    (root / "list").write_text("/etc/hosts\n")  # file names for --files0-from / xargs
    for d in ("bare/objects", "bare/refs"):  # a directory git would take as a bare repository
        (root / d).mkdir(parents=True)
    (root / "bare" / "HEAD").write_text("ref: refs/heads/main\n")
    # shapes git also accepts: objects and refs as executable files, a dangling HEAD symlink …
    (root / "bare2").mkdir()
    for name in ("objects", "refs"):
        (root / "bare2" / name).write_text("")
        os.chmod(root / "bare2" / name, 0o755)
    os.symlink("refs/heads/nowhere", root / "bare2" / "HEAD")
    # … and a commondir file pointing objects and refs elsewhere
    (root / "bare3").mkdir()
    (root / "bare3" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "bare3" / "commondir").write_text("../bare\n")
    return root


@pytest.fixture(scope="session")
def layout(tmp_path_factory) -> Path:
    return build_layout(Path(os.path.realpath(tmp_path_factory.mktemp("cls") / "ws")))


def make_engine(root: Path, mode: str = "default", settings: dict | None = None, **kw) -> PermissionEngine:
    data = {"sandbox": {"mode": "off"}, **(settings or {})}
    s = Settings([("test settings", data)])
    kw.setdefault("jail_available", lambda: True)  # the classifier's verdicts; test_unjailed covers the rest
    return PermissionEngine(s, Workspace(root), mode, **kw)
