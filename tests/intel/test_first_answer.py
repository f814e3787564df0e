"""A session's first LSP call over an index an earlier session stored does not wait for the
refresh the session started: it answers from the stored index when every file its answer rests
on is unchanged on disk, and waits (bounded) otherwise."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from codebelt.intel.index import CodeIndex
from codebelt.tools.lsp import LSPInput, _from_index

MAIN = "from shapes import Square\n\n\ndef report():\n    return Square(2)\n"
SHAPES = "class Square:\n    def __init__(self, side):\n        self.side = side\n"


def listing(root: Path, gate: threading.Event | None = None):
    def files():
        if gate is not None:
            gate.wait(60)  # the refresh is held here until the test lets it go
        return sorted(root.glob("*.py"))
    return files


def earlier_session(root: Path, cache: Path) -> None:
    with CodeIndex(root, cache, list_files=listing(root), workers=1) as ix:
        ix.refresh()


def held_refresh(root: Path, cache: Path, gate: threading.Event) -> tuple[CodeIndex, list]:
    """This session's index, its refresh started and held in its listing; the waits it is asked for."""
    ix = CodeIndex(root, cache, list_files=listing(root, gate), workers=1)
    waits: list[float | None] = []
    real_wait = ix.wait
    ix.wait = lambda timeout=None: waits.append(timeout) or real_wait(timeout)
    ix.start()
    return ix, waits


PARAMS = LSPInput(operation="goToDefinition", filePath="main.py", line=5, character=12)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "main.py").write_text(MAIN)
    (root / "shapes.py").write_text(SHAPES)
    return root


def test_answers_at_once_from_the_stored_index_when_its_files_are_unchanged(tmp_path):
    root, gate = project(tmp_path), threading.Event()
    earlier_session(root, tmp_path / "cache")
    ix, waits = held_refresh(root, tmp_path / "cache", gate)
    try:
        a = _from_index(ix, PARAMS, root / "main.py", 10)
        assert [(loc.path.name, loc.line) for loc in a.locations] == [("shapes.py", 1)]
        assert [w for w in waits if w] == [], "waited for the refresh with every file unchanged"
        assert not ix.wait(0)  # answered while the refresh was still held
    finally:
        gate.set()
        ix.close()


def test_waits_for_the_refresh_when_a_file_the_answer_rests_on_changed(tmp_path):
    root, gate = project(tmp_path), threading.Event()
    earlier_session(root, tmp_path / "cache")
    (root / "shapes.py").write_text("\n\n" + SHAPES)  # two lines down since it was indexed
    st = (root / "shapes.py").stat()
    os.utime(root / "shapes.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    ix, waits = held_refresh(root, tmp_path / "cache", gate)
    try:
        got = []
        asking = threading.Thread(target=lambda: got.append(_from_index(ix, PARAMS, root / "main.py", 10)))
        asking.start()
        for _ in range(600):
            if any(waits) or got:
                break
            threading.Event().wait(0.05)
        assert not got and any(waits), "answered from a stored index that no longer matches the file"
        gate.set()
        asking.join(60)
        assert [(loc.path.name, loc.line) for loc in got[0].locations] == [("shapes.py", 3)]
    finally:
        gate.set()
        ix.close()
