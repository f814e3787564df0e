"""NotebookEdit: Claude Code's schema and texts, read-before-write, atomic writes, and the
notebook's own formatting kept (indent, key order, trailing newline, sources, nbformat)."""

from __future__ import annotations

import json
import os

import pytest

NB = {"cells": [
    {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n", "Text."]},
    {"cell_type": "code", "execution_count": 3, "id": "calc", "metadata": {"tags": ["x"]},
     "outputs": [{"name": "stdout", "output_type": "stream", "text": ["3\n"]}], "source": ["x = 1\n", "print(x)"]},
], "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}


def write(ws, name="n.ipynb", nb=NB, indent=1, newline=True, ensure_ascii=False):
    text = json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + ("\n" if newline else "")
    (ws / name).write_text(text, encoding="utf-8")
    return ws / name


def edit(s, **kw):
    return s.call("NotebookEdit", {"notebook_path": "n.ipynb", **kw})


def test_replace_keeps_formatting_and_resets_outputs(ws, make_session):
    path = write(ws, indent=2, newline=False)
    s = make_session(mode="acceptEdits")
    s.call("Read", {"file_path": "n.ipynb"})
    r = edit(s, cell_id="calc", new_source="y = 2\nprint(y)\n")
    assert not r.is_error and r.text == "Updated cell calc with y = 2\nprint(y)\n"
    raw = path.read_text()
    assert raw.startswith('{\n  "cells"') and not raw.endswith("\n")  # indent 2, no newline: as it was
    cell = json.loads(raw)["cells"][1]
    assert list(cell) == ["cell_type", "execution_count", "id", "metadata", "outputs", "source"]
    assert cell["source"] == ["y = 2\n", "print(y)\n"] and cell["outputs"] == [] and cell["execution_count"] is None
    assert cell["metadata"] == {"tags": ["x"]} and json.loads(raw)["nbformat_minor"] == 5


def test_insert_after_and_at_start_and_delete(ws, make_session):
    path = write(ws)
    s = make_session(mode="acceptEdits")
    s.call("Read", {"file_path": "n.ipynb"})
    r = edit(s, cell_id="intro", new_source="z = 3", cell_type="code", edit_mode="insert")
    new_id = r.text.split()[2]
    assert r.text == f"Inserted cell {new_id} with z = 3" and len(new_id) == 8
    r = edit(s, new_source="# Top", cell_type="markdown", edit_mode="insert")
    assert not r.is_error
    ids = [c["id"] for c in json.loads(path.read_text())["cells"]]
    assert ids[1:] == ["intro", new_id, "calc"]
    assert edit(s, cell_id="intro", new_source="", edit_mode="delete").text == "Deleted cell intro"
    assert [c.get("id") for c in json.loads(path.read_text())["cells"]][1:] == [new_id, "calc"]
    assert path.read_text().endswith("}\n")
    # the notebook still reads, with the new cells
    text = s.call("Read", {"file_path": "n.ipynb"}).text
    assert f'<cell id="{new_id}">z = 3</cell id="{new_id}">' in text


def test_notebook_without_ids_is_addressed_by_index(ws, make_session):
    old = json.loads(json.dumps(NB))
    old["nbformat_minor"] = 4
    for c in old["cells"]:
        del c["id"]
    path = write(ws, nb=old)
    s = make_session(mode="acceptEdits")
    assert '<cell id="cell-1">' in s.call("Read", {"file_path": "n.ipynb"}).text
    assert edit(s, cell_id="cell-1", new_source="a").text == "Updated cell cell-1 with a"
    r = edit(s, new_source="b", cell_type="markdown", edit_mode="insert")
    assert r.text == "Inserted a new cell with b"
    saved = json.loads(path.read_text())
    assert all("id" not in c for c in saved["cells"]) and saved["nbformat_minor"] == 4


@pytest.mark.parametrize("kw, text", [
    ({"cell_id": "nope", "new_source": "x"}, '<tool_use_error>Cell with ID "nope" not found in notebook.</tool_use_error>'),
    ({"new_source": "x"}, "<tool_use_error>Cell ID must be specified when not inserting a new cell.</tool_use_error>"),
    ({"cell_id": "calc", "new_source": "x", "edit_mode": "insert"},
     "<tool_use_error>Cell type is required when using edit_mode=insert.</tool_use_error>"),
])
def test_errors_leave_the_notebook_as_it_was(ws, make_session, kw, text):
    path = write(ws)
    before = path.read_bytes()
    s = make_session(mode="acceptEdits")
    s.call("Read", {"file_path": "n.ipynb"})
    r = edit(s, **kw)
    assert r.is_error and r.text == text and path.read_bytes() == before


def test_read_before_write_and_unchanged_since(ws, make_session):
    path = write(ws)
    s = make_session(mode="acceptEdits")
    r = edit(s, cell_id="calc", new_source="x")
    assert r.is_error and "has not been read yet" in r.text
    s.call("Read", {"file_path": "n.ipynb"})
    path.write_text(path.read_text() + " ")
    os.utime(path, (2_000_000_000, 2_000_000_000))
    r = edit(s, cell_id="calc", new_source="x")
    assert r.is_error and "modified since read" in r.text
    assert s.call("NotebookEdit", {"notebook_path": "a.txt", "cell_id": "c", "new_source": "x"}).text.startswith(
        "<tool_use_error>File must be a Jupyter notebook")


def test_a_broken_notebook_is_refused_untouched(ws, make_session):
    (ws / "n.ipynb").write_text("{not json")
    s = make_session(mode="acceptEdits")
    s.call("Read", {"file_path": "n.ipynb"})
    s.call("Bash", {"command": "true"})
    r = edit(s, cell_id="a", new_source="x")
    assert r.is_error and (ws / "n.ipynb").read_text() == "{not json"
