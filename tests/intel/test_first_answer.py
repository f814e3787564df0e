"""An LSP call does not wait for the refresh that is running (a first build, the one a session
starts over the last session's index) or due (a change was reported, or the last refresh is over
a second old) when its answer rests on a list of files: each is read from the stored index where
that matches the disk, from the disk where not. An answer that rests on every file (a search by
name) waits (bounded) for the refresh. Never the old answer. Each case: the project an earlier
session indexed, what changed on disk before the call, and the definition the call must find."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from codebelt.intel import index as index_module
from codebelt.intel.index import CodeIndex
from codebelt.tools import lsp as lsp_tool
from codebelt.tools.lsp import LSPInput, _from_index

SHAPES = "class Square:\n    def __init__(self, side):\n        self.side = side\n"
MAIN = "from shapes import Square\n\n\ndef report():\n    return Square(2)\n"
TS_SHAPES = "export class Square {\n  side = 2;\n}\n"
TS_MAIN = 'import { Square } from "./shapes";\n\n\nexport function report() {\n  return new Square();\n}\n'


@dataclass
class Case:
    files: dict[str, str]  # the project an earlier session indexed
    changes: dict[str, str | None] = field(default_factory=dict)  # then on disk: new text, or None to delete
    cursor: tuple[str, int, int] = ("main.py", 5, 12)  # file, line, character of the use asked about
    expected: list[tuple[str, int]] = field(default_factory=list)  # (file, line) of the answer
    at_once: bool = True  # answered without waiting for the refresh


CASES = {
    "unchanged: answered from the stored index": Case(
        {"main.py": MAIN, "shapes.py": SHAPES}, expected=[("shapes.py", 1)]),
    "the defining file changed: its new line, not the stored one": Case(
        {"main.py": MAIN, "shapes.py": SHAPES}, {"shapes.py": "\n\n" + SHAPES},
        expected=[("shapes.py", 3)]),
    "the defining file deleted: not the stored definition": Case(
        {"main.py": MAIN, "shapes.py": SHAPES, "lib/shapes.py": "\n" + SHAPES}, {"shapes.py": None},
        expected=[("lib/shapes.py", 2)], at_once=False),
    "a file unrelated to the answer changed: still answered at once": Case(
        {"main.py": MAIN, "shapes.py": SHAPES, "other.py": "x = 1\n"}, {"other.py": "x = 2\n"},
        expected=[("shapes.py", 1)]),
    "the file under the cursor now defines the name itself": Case(
        {"main.py": MAIN, "shapes.py": SHAPES},
        {"main.py": "class Square: pass\n\n\ndef report():\n    return Square(2)\n"},
        expected=[("main.py", 1)]),
    "a module file appeared that the import now means (relative import)": Case(
        {"pkg/__init__.py": "", "pkg/main.py": MAIN.replace("from shapes", "from .shapes"),
         "pkg/shapes/__init__.py": SHAPES},
        {"pkg/shapes.py": "\n\n\n" + SHAPES},
        cursor=("pkg/main.py", 5, 12), expected=[("pkg/shapes.py", 4)]),
    "a relative import whose module is unchanged: at once": Case(
        {"pkg/__init__.py": "", "pkg/main.py": MAIN.replace("from shapes", "from .shapes"),
         "pkg/shapes.py": SHAPES},
        cursor=("pkg/main.py", 5, 12), expected=[("pkg/shapes.py", 1)]),
    "a module file appeared nearer the root (absolute import found below a directory)": Case(
        {"main.py": MAIN, "lib/shapes.py": SHAPES}, {"shapes.py": "\n" + SHAPES},
        expected=[("shapes.py", 2)]),
    "an absolute import found below a directory, unchanged: a new file anywhere could be it": Case(
        {"main.py": MAIN, "lib/shapes.py": SHAPES}, expected=[("lib/shapes.py", 1)], at_once=False),
    "TypeScript: a relative import whose module is unchanged: at once": Case(
        {"main.ts": TS_MAIN, "shapes.ts": TS_SHAPES}, cursor=("main.ts", 5, 14), expected=[("shapes.ts", 1)]),
    "TypeScript: a module file appeared that the import now means": Case(
        {"main.ts": TS_MAIN, "shapes/index.ts": TS_SHAPES}, {"shapes.ts": "\n" + TS_SHAPES},
        cursor=("main.ts", 5, 14), expected=[("shapes.ts", 2)]),
    "a name found by name alone rests on every file: a new definition is found": Case(
        {"main.py": "def report(x):\n    return x.area()\n", "a.py": "class A:\n    def area(self):\n        pass\n"},
        {"b.py": "class B:\n    def area(self):\n        pass\n"},
        cursor=("main.py", 2, 14), expected=[("a.py", 2), ("b.py", 2)], at_once=False),
}


def write(root: Path, files: dict[str, str | None]) -> None:
    for rel, text in files.items():
        p = root / rel
        if text is None:
            p.unlink()
            continue
        existed = p.exists()
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        if existed:  # a later mtime however coarse the file system's clock
            st = p.stat()
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


class Session:
    """A session's index over the cache an earlier session left; its refreshes are held in
    their listing until `gate` is set, and the waits it is asked for are recorded."""

    def __init__(self, root: Path, cache: Path, ignored: tuple[str, ...] = (), include=None):
        self.gate = threading.Event()
        self.root = root

        def files():
            self.gate.wait(60)
            return sorted(p for p in root.rglob("*") if p.is_file() and p.relative_to(root).as_posix() not in ignored)

        self.index = CodeIndex(root, cache, list_files=files, workers=1, include=include)
        self.waits: list[float | None] = []
        real_wait = self.index.wait
        self.index.wait = lambda timeout=None: self.waits.append(timeout) or real_wait(timeout)

    def ask(self, cursor: tuple[str, int, int]):
        """The call, in a thread: the held refresh is let go once the call waits for it."""
        rel, line, character = cursor
        params = LSPInput(operation="goToDefinition", filePath=rel, line=line, character=character)
        got: list = []
        asking = threading.Thread(target=lambda: got.append(_from_index(self.index, params, self.root / rel, 10)))
        asking.start()
        while asking.is_alive() and not any(self.waits):
            asking.join(0.02)
        answered_at_once = bool(got) and not self.index.wait(0)  # the refresh is still held
        self.gate.set()
        asking.join(60)
        return got[0], answered_at_once


def earlier_session(root: Path, cache: Path, files: dict[str, str]) -> None:
    write(root, files)
    with CodeIndex(root, cache, list_files=lambda: sorted(p for p in root.rglob("*") if p.is_file()),
                   workers=1) as ix:
        ix.refresh()


def found(answer, root: Path) -> list[tuple[str, int]]:
    return sorted({(loc.path.relative_to(root).as_posix(), loc.line) for loc in answer.locations})


@pytest.mark.parametrize("name", list(CASES))
def test_the_first_call_of_a_session(tmp_path, name):
    """The session's refresh over the stored index is running (held) when the call comes."""
    case, root = CASES[name], tmp_path / "ws"
    earlier_session(root, tmp_path / "cache", case.files)
    write(root, case.changes)
    s = Session(root, tmp_path / "cache")
    try:
        s.index.start()
        answer, at_once = s.ask(case.cursor)
        assert found(answer, root) == case.expected
        assert at_once == case.at_once
        if at_once:
            assert "still being built" not in (answer.note or "")  # shown to match the disk
    finally:
        s.gate.set()
        s.index.close()


@pytest.mark.parametrize("name", list(CASES))
def test_a_call_after_a_reported_change(tmp_path, name):
    """Mid-session: the index is current, then a change is reported (a tool that writes ran),
    so a refresh is due when the call comes."""
    case, root = CASES[name], tmp_path / "ws"
    write(root, case.files)
    s = Session(root, tmp_path / "cache")
    try:
        s.gate.set()
        s.index.refresh()
        s.gate.clear()
        write(root, case.changes)
        s.index.mark_stale()
        answer, at_once = s.ask(case.cursor)
        assert found(answer, root) == case.expected
        assert at_once == case.at_once
    finally:
        s.gate.set()
        s.index.close()


RELATIVE = {"pkg/__init__.py": "", "pkg/main.py": MAIN.replace("from shapes", "from .shapes"),
            "pkg/shapes/__init__.py": SHAPES}


def test_a_cold_first_call_reads_the_files_its_answer_rests_on(tmp_path):
    """No index stored yet, its first build held: the answer is read from the files it names."""
    root = tmp_path / "ws"
    write(root, RELATIVE)
    s = Session(root, tmp_path / "cache")
    try:
        s.index.start()
        answer, at_once = s.ask(("pkg/main.py", 5, 12))
        assert found(answer, root) == [("pkg/shapes/__init__.py", 1)] and at_once
    finally:
        s.gate.set()
        s.index.close()


def test_a_cold_first_call_that_rests_on_every_file_says_the_index_is_being_built(tmp_path, monkeypatch):
    """By name or through a module it has not found, it waits (bounded) and says why the answer
    may be incomplete, never that the module is not in the workspace."""
    monkeypatch.setattr(lsp_tool, "FIRST_BUILD_WAIT_S", 0.05)
    root = tmp_path / "ws"
    write(root, {"main.py": MAIN, "lib/shapes.py": SHAPES})
    s = Session(root, tmp_path / "cache")
    try:
        s.index.start()
        params = LSPInput(operation="goToDefinition", filePath="main.py", line=5, character=12)
        a = _from_index(s.index, params, root / "main.py", 10)
        assert a.locations == []
        assert "still being built" in a.note and "first build is still running" in a.note
        assert "not in the workspace" not in a.note
    finally:
        s.gate.set()
        s.index.close()


@pytest.mark.parametrize("how", ["ignored", "denied"])
def test_a_file_the_index_leaves_out_is_not_read_for_an_answer(tmp_path, monkeypatch, how):
    """A module file that was on disk when the stored listing ran and was left out of it (an
    ignore file), or one that appeared since but a Read deny rule covers, stays out of the
    answer, as it is out of the index (a file that appeared since is read: the cases above)."""
    monkeypatch.setattr(index_module, "LISTED_SLACK_NS", 0)
    root = tmp_path / "ws"
    module = {"pkg/shapes.py": "\n" + SHAPES}
    write(root, {**RELATIVE, **(module if how == "ignored" else {})})
    s = Session(root, tmp_path / "cache", ignored=tuple(module),
                include=(lambda p: p.name != "shapes.py") if how == "denied" else None)
    try:
        s.gate.set()
        s.index.refresh()
        s.gate.clear()
        if how == "denied":
            write(root, module)
        s.index.mark_stale()
        answer, at_once = s.ask(("pkg/main.py", 5, 12))
        assert found(answer, root) == [("pkg/shapes/__init__.py", 1)] and at_once
    finally:
        s.gate.set()
        s.index.close()


def test_a_module_reached_through_a_linked_directory_is_not_read(tmp_path):
    """The listing follows no symbolic link, and an answer that reads files the index has not
    seen takes the same view: a module behind a linked directory (which may lead out of the
    workspace; no file is ever opened through a link) is not there, at once."""
    outside = tmp_path / "outside"
    root = tmp_path / "ws"
    write(root, RELATIVE)
    s = Session(root, tmp_path / "cache")
    try:
        s.gate.set()
        s.index.refresh()
        s.gate.clear()
        write(outside, {"shapes.py": "\n\n" + SHAPES})  # newer than the listing
        (root / "pkg" / "linked").symlink_to(outside, target_is_directory=True)
        (root / "pkg" / "main.py").write_text(MAIN.replace("from shapes", "from .linked.shapes"))
        s.index.mark_stale()
        answer, at_once = s.ask(("pkg/main.py", 5, 12))
        assert answer.locations == [] and at_once
        assert "not in the workspace" in answer.note
    finally:
        s.gate.set()
        s.index.close()



# Answers that rest on every file, asked while a refresh is due: (cursor or query, files written
# before the call, what the answer must hold once the refresh has run).
EVERY_FILE = {
    "findReferences": (("main.py", 5, 12), None, {"other.py": "from shapes import Square\n"},
                       [("main.py", 1), ("main.py", 5), ("other.py", 1), ("shapes.py", 1)]),
    "workspaceSymbol": (None, "Square", {"other.py": "class Square:\n    pass\n"}, [("other.py", 1), ("shapes.py", 1)]),
    "goToImplementation": (("main.py", 5, 12), None, {"other.py": "class Square:\n    pass\n"},
                           [("other.py", 1), ("shapes.py", 1)]),
}


@pytest.mark.parametrize("name", list(EVERY_FILE))
def test_an_answer_that_rests_on_every_file_is_computed_once(tmp_path, name, monkeypatch):
    """It waits for the refresh and is computed then, once: the attempt from the store stops
    where it first reads beyond a list of files instead of computing an answer it throws away.
    Counted: the reads of the whole index that went on to compute something, against the same
    call on the settled index."""
    cursor, query, changes, expected = EVERY_FILE[name]
    root = tmp_path / "ws"
    write(root, {"main.py": MAIN, "shapes.py": SHAPES})
    computed: list[int] = []
    real = CodeIndex._reading_everything

    def counted(self):
        real(self)  # raises when the answer from the store is to stop here
        computed.append(1)

    monkeypatch.setattr(CodeIndex, "_reading_everything", counted)
    s = Session(root, tmp_path / "cache")
    try:
        s.gate.set()
        s.index.refresh()
        write(root, changes)
        s.index.mark_stale()  # a tool wrote: a refresh is due
        if query is None:
            rel, line, character = cursor
            params, path = LSPInput(operation=name, filePath=rel, line=line, character=character), root / rel
        else:
            params, path = LSPInput(operation="workspaceSymbol", query=query), None
        answer = _from_index(s.index, params, path, 10)
        assert s.waits, "it waited for the refresh"
        got = answer.locations if name == "findReferences" else answer.symbols
        assert sorted({(x.path.relative_to(root).as_posix(), x.line) for x in got}) == expected
        while_due, computed[:] = len(computed), []
        assert s.index.settled()
        _from_index(s.index, params, path, 10)
        assert while_due == len(computed) >= 1
    finally:
        s.gate.set()
        s.index.close()
