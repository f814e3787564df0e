"""A small project tree with known modification times, shared by the Glob and Grep tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

# path → (content, mtime). Newest first by mtime: docs/readme.md, src/util.py, src/deep/x.js,
# src/app.py, .hidden/secret.txt.
TREE: dict[str, tuple[bytes, int]] = {
    "src/app.py": (b"import os\ndef main():\n    print('hello')\n    return 0\n", 1_000_000),
    "src/util.py": (b"def helper():\n    return 'hello world'\n", 3_000_000),
    "src/deep/x.js": (b"function hello() {}\n", 2_000_000),
    "docs/readme.md": (b"Hello docs\nhello again\n", 4_000_000),
    ".hidden/secret.txt": (b"hello hidden\n", 500_000),
    "build/out.py": (b"hello build\n", 5_000_000),  # ignored by .gitignore
    "data.bin": (b"\x00\x01hello\x00binary", 6_000_000),  # binary: never searched
    ".git/config": (b"hello git\n", 7_000_000),  # VCS internals: never listed
    ".hg/store": (b"hello hg\n", 7_000_000),
    ".gitignore": (b"build/\n", 100),
}


def build_tree(root: Path, tree: dict[str, tuple[bytes, int]] = TREE) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for rel, (content, mtime) in tree.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content)
        os.utime(p, (mtime, mtime))
    return root


@pytest.fixture
def project(ws: Path) -> Path:
    return build_tree(ws)


@pytest.fixture
def s(project, make_session):
    return make_session(root=project)
