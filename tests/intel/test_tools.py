"""The LSP and RepoMap tools and diagnostics after edits, through the Session, on the real
tree-sitter index (language servers are tested in test_lsp*.py)."""

from __future__ import annotations

import pytest

M = "def helper(x):\n    return x * 2\n\n\nclass Shape:\n    def area(self):\n        return helper(3)\n"
U = "from m import helper, Shape\n\n\ndef main():\n    print(helper(1), Shape().area())\n\n\nmain()\n"


@pytest.fixture
def proj(ws):
    (ws / "m.py").write_text(M)
    (ws / "u.py").write_text(U)
    (ws / "notes.txt").write_text("plain text\n")
    (ws / "secret.py").write_text("def helper():\n    pass\n")
    return ws


@pytest.fixture
def session(make_session, tmp_path, monkeypatch):
    """Tree-sitter only: language servers are switched off here (tests/intel/lsp/ has them)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def make(settings: dict | None = None, **kw):
        return make_session(mode="acceptEdits", settings={"lsp": {"enabled": False}, **(settings or {})}, **kw)

    return make


# (operation, input beyond operation, lines that must appear in the text)
CASES = [
    ("goToDefinition", {"filePath": "u.py", "line": 5, "character": 11}, ["m.py:1:5: function helper"]),
    ("goToDefinition", {"filePath": "u.py", "line": 8}, ["u.py:4:5: function main"]),  # no character: the first identifier
    ("findReferences", {"filePath": "m.py", "line": 1, "character": 5},
     ["m.py:1:5:", "m.py:7:16: return helper(3)", "u.py:1:15:", "u.py:5:11: print(helper(1), Shape().area())"]),
    ("hover", {"filePath": "u.py", "line": 5, "character": 23}, ["class Shape"]),
    ("documentSymbol", {"filePath": "m.py"}, ["m.py:1:5: function helper", "m.py:5:7: class Shape", "m.py:6:9: method area (in Shape)"]),
    ("workspaceSymbol", {"query": "are"}, ["m.py:6:9: method area (in Shape)"]),
    ("goToImplementation", {"filePath": "u.py", "line": 5, "character": 30}, ["m.py:6:9: method area"]),
    ("prepareCallHierarchy", {"filePath": "m.py", "line": 6, "character": 9}, ["m.py:6:9: method area"]),
    ("incomingCalls", {"filePath": "m.py", "line": 1, "character": 5}, ["method area (in Shape)", "function main"]),
    ("outgoingCalls", {"filePath": "m.py", "line": 6, "character": 9}, ["m.py:1:5: function helper"]),
]


@pytest.mark.parametrize("operation,inp,expected", CASES, ids=[f"{i}-{c[0]}" for i, c in enumerate(CASES)])
def test_operations(proj, session, operation, inp, expected):
    s = session()
    r = s.call("LSP", {"operation": operation, **inp})
    assert not r.is_error, r.text
    for line in expected:
        assert line in r.text, r.text
    assert r.data["backend"] == "tree-sitter"


def test_data_shape_and_paging(proj, session):
    s = session()
    r = s.call("LSP", {"operation": "findReferences", "filePath": "m.py", "line": 1, "character": 5, "head_limit": 2})
    assert len(r.data["locations"]) == 2 and r.data["truncated"] is True and r.data["total"] >= 4
    assert "offset=2" in r.text
    loc = r.data["locations"][0]
    assert set(loc) >= {"path", "line", "character", "end_line", "end_character", "text"} and not loc["path"].startswith("/")
    page2 = s.call("LSP", {"operation": "findReferences", "filePath": "m.py", "line": 1, "character": 5,
                           "head_limit": 2, "offset": 2})
    assert page2.data["locations"] and page2.data["locations"][0] != loc


def test_read_deny_rules_hide_files(proj, session):
    s = session(settings={"permissions": {"deny": ["Read(./secret.py)"]}})
    r = s.call("LSP", {"operation": "workspaceSymbol", "query": "helper"})
    assert "secret.py" not in r.text and "m.py:1:5" in r.text
    denied = s.call("LSP", {"operation": "documentSymbol", "filePath": "secret.py"})
    assert denied.is_error and "Read(./secret.py)" in denied.text
    assert "secret.py" not in s.call("RepoMap", {}).text


@pytest.mark.parametrize("inp,message", [
    ({"operation": "goToDefinition", "filePath": "m.py", "line": 99}, "line 99 is outside m.py"),
    ({"operation": "goToDefinition", "filePath": "m.py", "line": 1, "character": 500}, "character 500 is outside line 1"),
    ({"operation": "goToDefinition", "filePath": "nope.py", "line": 1}, "File does not exist"),
    ({"operation": "goToDefinition", "filePath": "notes.txt", "line": 1}, "no tree-sitter grammar reads notes.txt"),
    ({"operation": "goToDefinition", "filePath": "m.py"}, "needs line"),
    ({"operation": "workspaceSymbol"}, "needs query"),
    ({"operation": "hover", "filePath": "m.py", "line": 3}, "no identifier at line 3"),
    ({"operation": "teleport", "filePath": "m.py", "line": 1}, "operation"),
    ({"operation": "goToDefinition", "filePath": "m.py", "line": 0}, "line"),
])
def test_bad_input_gets_a_clear_answer(proj, session, inp, message):
    r = session().call("LSP", inp)
    assert r.is_error and message in r.text, r.text


def test_outside_the_workspace_needs_permission(proj, session, tmp_path):
    other = tmp_path / "elsewhere.py"
    other.write_text("def x():\n    pass\n")
    r = session().call("LSP", {"operation": "documentSymbol", "filePath": str(other)})
    assert r.is_error and "outside the workspace" in r.text


def test_repo_map_focus_and_budget(proj, session):
    s = session()
    r = s.call("RepoMap", {"mentions": ["Shape"], "max_tokens": 200})
    assert not r.is_error and "m.py" in r.text and "class Shape" in r.text
    assert r.data["tokens"] <= 200 and "m.py" in r.data["files"]


def test_diagnostics_after_edits(proj, session):
    s = session()
    s.call("Read", {"file_path": "m.py"})
    r = s.call("Edit", {"file_path": "m.py", "old_string": "    return x * 2", "new_string": "    return (x * 2"})
    assert "This change introduced problems" in r.text and r.data["diagnostics"][0]["path"] == "m.py"
    assert r.data["diagnostics"][0]["source"] == "tree-sitter"
    # an edit elsewhere in a file that is already broken reports nothing new
    r = s.call("Edit", {"file_path": "m.py", "old_string": "def helper", "new_string": "def helper2"})
    assert "introduced problems" not in r.text and "diagnostics" not in r.data
    w = s.call("Write", {"file_path": "new.py", "content": "def ok():\n    return 1\n"})
    assert "introduced" not in w.text
    bad = s.call("Write", {"file_path": "bad.py", "content": "class :\n"})
    assert "introduced problems" in bad.text


def test_diagnostics_can_be_switched_off(proj, session):
    s = session(settings={"intel": {"diagnostics": False}})
    bad = s.call("Write", {"file_path": "bad.py", "content": "class :\n"})
    assert not bad.is_error and "introduced" not in bad.text


def test_the_tools_are_read_only_and_listed(session, proj):
    specs = {t["name"]: t for t in session().tool_specs()}
    for name in ("LSP", "RepoMap"):
        assert specs[name]["read_only"] and specs[name]["concurrency_safe"]


def test_diagnostics_after_apply_patch(proj, session):
    s = session()
    patch = ("*** Begin Patch\n*** Update File: m.py\n@@\n def helper(x):\n-    return x * 2\n+    return (x * 2\n"
             "*** Add File: ok.py\n+x = 1\n*** End Patch\n")
    r = s.call("ApplyPatch", {"input": patch})
    assert not r.is_error and "This change introduced problems" in r.text
    assert [d["path"] for d in r.data["diagnostics"]] == ["m.py"]


# How each change reaches the files; every one must be seen by the next LSP call (workspace
# symbols, definitions and the repo map answer from the index, not from a fresh parse).
FRESHNESS_CASES = [
    ("Write", lambda ws, s: s.call("Write", {"file_path": str(ws / "n.py"), "content": "def fresh_one():\n    pass\n"})),
    ("Edit", lambda ws, s: (s.call("Read", {"file_path": str(ws / "m.py")}),
                            s.call("Edit", {"file_path": str(ws / "m.py"), "old_string": "def helper(x):",
                                            "new_string": "def fresh_one(x):"}))),
    ("Bash", lambda ws, s: s.call("Bash", {"command": "printf 'def fresh_one():\\n    pass\\n' > n.py"})),
]


@pytest.mark.parametrize("how,change", FRESHNESS_CASES, ids=[c[0] for c in FRESHNESS_CASES])
def test_the_index_sees_changes_made_through_the_session_at_once(proj, session, how, change):
    s = session(settings={"permissions": {"allow": ["Bash(printf:*)"]}})
    first = s.call("LSP", {"operation": "workspaceSymbol", "query": "fresh_one"})
    assert not first.is_error and "fresh_one" not in first.text
    results = change(proj, s)
    for r in results if isinstance(results, tuple) else (results,):
        assert not r.is_error, r.text
    again = s.call("LSP", {"operation": "workspaceSymbol", "query": "fresh_one"})
    assert "function fresh_one" in again.text, again.text


def test_the_index_sees_changes_made_outside_the_session(proj, session):
    import time

    s = session()
    assert "function gone_soon" not in s.call("LSP", {"operation": "workspaceSymbol", "query": "gone"}).text
    (proj / "ext.py").write_text("def gone_soon():\n    pass\n")  # another editor, a background job
    time.sleep(1.2)  # past the index's MAX_AGE: the next query looks at the disk again
    assert "function gone_soon" in s.call("LSP", {"operation": "workspaceSymbol", "query": "gone"}).text
    (proj / "ext.py").unlink()
    time.sleep(1.2)
    assert "function gone_soon" not in s.call("LSP", {"operation": "workspaceSymbol", "query": "gone"}).text
