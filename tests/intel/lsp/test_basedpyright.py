"""The LSP tool and diagnostics after edits with a real basedpyright, on a fixture project whose
expected answers are data (tests/fixtures/lsp/python/expected.json)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.intel.lsp import detected

FIXTURE = Path(__file__).parents[2] / "fixtures" / "lsp" / "python"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())

pytestmark = pytest.mark.skipif(
    not any(s.name == "basedpyright" for s in detected()),
    reason="basedpyright-langserver is not installed (scripts/setup.sh installs it)",
)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lspproj") / "proj"
    shutil.copytree(FIXTURE, root)
    (root / "expected.json").unlink()
    return root.resolve()


@pytest.fixture(scope="module")
def session(project):
    with Session(project, mode="acceptEdits", settings={"lsp": {"requestTimeoutMs": 30_000}}) as s:
        _wait_for_server(s)  # the first answer waits for the start and analysis: once per module
        yield s


def _wait_for_server(s: Session) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = s.call("LSP", {"operation": "hover", "filePath": "main.py", "line": 6, "character": 17})
        if "lsp:basedpyright" in r.text:
            return
        time.sleep(0.5)
    pytest.fail(f"basedpyright did not answer within 60 s: {r.text}")


def locations(result) -> list[str]:
    return [f"{loc['path']}:{loc['line']}:{loc['character']}" for loc in result.data["locations"]]


def cases(operation: str):
    return [pytest.param(c, id=f"{operation}-{i}") for i, c in enumerate(EXPECTED[operation])]


@pytest.mark.parametrize("case", cases("goToDefinition") + cases("findReferences") + cases("goToImplementation"))
def test_locations(case, session):
    operation = next(op for op in ("goToDefinition", "findReferences", "goToImplementation") if case in EXPECTED[op])
    path, line, char = case["at"]
    r = session.call("LSP", {"operation": operation, "filePath": path, "line": line, "character": char})
    assert r.data["backend"] == "lsp:basedpyright", r.text
    found = locations(r)
    if "expect" in case:
        assert sorted(found) == sorted(case["expect"]), r.text
    else:
        assert set(found) & set(case["expect_any"]), r.text


@pytest.mark.parametrize("case", cases("hover"))
def test_hover(case, session):
    path, line, char = case["at"]
    r = session.call("LSP", {"operation": "hover", "filePath": path, "line": line, "character": char})
    assert r.data["backend"] == "lsp:basedpyright" and case["contains"] in r.data["hover"], r.text


@pytest.mark.parametrize("case", cases("documentSymbol"))
def test_document_symbols(case, session):
    r = session.call("LSP", {"operation": "documentSymbol", "filePath": case["file"]})
    got = [f"{s['kind']} {s['name']}" for s in r.data["symbols"]]
    for expected in case["expect"]:
        assert expected in got, (expected, got)


@pytest.mark.parametrize("case", cases("workspaceSymbol"))
def test_workspace_symbols(case, session):
    r = session.call("LSP", {"operation": "workspaceSymbol", "query": case["query"]})
    assert r.data["backend"] == "lsp:basedpyright", r.text
    got = [f"{s['path']}:{s['line']}:{s['character']}" for s in r.data["symbols"]]
    assert set(case["expect"]) <= set(got), got


@pytest.mark.parametrize("case", cases("workspaceSymbolOrder"))
def test_workspace_symbols_exact_names_first(case, session):
    r = session.call("LSP", {"operation": "workspaceSymbol", "query": case["query"]})
    assert r.data["backend"] == "lsp:basedpyright", r.text
    names = [s["name"] for s in r.data["symbols"]]
    first = len(case["expect_first"])
    assert names[:first] == case["expect_first"], names
    assert sorted(names[first:first + len(case["then"])]) == sorted(case["then"]), names
    assert all(names.index(a) > names.index(b) for a in case["after"] for b in case["then"]), names


@pytest.mark.parametrize("case", cases("incomingCalls") + cases("outgoingCalls"))
def test_call_hierarchy(case, session):
    operation = "incomingCalls" if case in EXPECTED["incomingCalls"] else "outgoingCalls"
    path, line, char = case["at"]
    r = session.call("LSP", {"operation": operation, "filePath": path, "line": line, "character": char})
    assert r.data["backend"] == "lsp:basedpyright", r.text
    names = {s["name"] for s in r.data["symbols"]}
    assert set(case["expect_names"]) <= names, r.text


def test_character_may_be_omitted(session):
    """Without character, the first identifier on the line that names a symbol: `total_area`
    on `def total_area(...)` after the keyword."""
    r = session.call("LSP", {"operation": "findReferences", "filePath": "pkg/shapes.py", "line": 14})
    assert r.data["backend"] == "lsp:basedpyright"
    assert "main.py:6:15" in locations(r), r.text


def test_library_definitions_outside_the_workspace_are_left_out(session):
    r = session.call("LSP", {"operation": "goToDefinition", "filePath": "pkg/shapes.py", "line": 15, "character": 12})
    assert r.data["locations"] == [] and "outside the workspace" in r.text, r.text  # `sum` is in typeshed


def test_bad_positions_get_clear_answers(session):
    r = session.call("LSP", {"operation": "goToDefinition", "filePath": "main.py", "line": 999, "character": 1})
    assert r.is_error and "line 999" in r.text
    r = session.call("LSP", {"operation": "hover", "filePath": "main.py", "line": 1, "character": 500})
    assert r.is_error and "character 500" in r.text


def test_diagnostics_report_what_an_edit_introduced(session, project):
    """The pre-existing type error in main.py is not reported; the new one is."""
    session.call("Read", {"file_path": "main.py"})
    r = session.call("Edit", {"file_path": "main.py", "old_string": 'return f"{total_area(squares):.1f}"',
                              "new_string": 'return total_area(squares)'})
    assert not r.is_error, r.text
    diags = r.data.get("diagnostics") or []
    assert any(d["source"] == "basedpyright" and d["line"] == 6 and d["severity"] == "error" for d in diags), r.text
    assert not any("pre-existing" in d["message"] or d["line"] == 9 for d in diags), diags
    # and an edit that fixes it reports nothing
    r = session.call("Edit", {"file_path": "main.py", "old_string": "return total_area(squares)",
                              "new_string": 'return f"{total_area(squares):.1f}"'})
    assert not r.data.get("diagnostics"), r.text


def test_open_documents_follow_the_disk(tmp_path, monkeypatch):
    """A file the server holds open (a query opened it) then changed by something other than
    codebelt's edit tools: answers must come from what the disk holds now, not the old text."""
    from codebelt.intel.lsp import client as client_module
    from codebelt.tools._services import lsp_manager

    monkeypatch.setattr(client_module, "MAX_OPEN_DOCUMENTS", 2)
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    with Session(root.resolve(), mode="acceptEdits", settings={"lsp": {"requestTimeoutMs": 30_000}}) as s:
        _wait_for_server(s)
        where = {"operation": "goToDefinition", "filePath": "main.py", "line": 6, "character": 17}
        assert locations(s.call("LSP", where)) == ["pkg/shapes.py:14:5"]
        s.call("LSP", {"operation": "documentSymbol", "filePath": "pkg/shapes.py"})  # now open
        shapes = root / "pkg" / "shapes.py"
        shapes.write_text("\n\n\n" + shapes.read_text())  # another editor adds three lines on top
        assert locations(s.call("LSP", where)) == ["pkg/shapes.py:17:5"]
        # at most MAX_OPEN_DOCUMENTS are held: the least recently used went back to the disk
        s.call("LSP", {"operation": "documentSymbol", "filePath": "pkg/__init__.py"})
        client = s._services.peek(lsp_manager).ready_clients()[0]
        assert len(client.open_documents()) == 2
        assert root.resolve() / "main.py" not in client.open_documents()
        # a file that is gone is closed rather than kept at its last text
        shapes.unlink()
        s.call("LSP", where)
        assert root.resolve() / "pkg" / "shapes.py" not in client.open_documents()
