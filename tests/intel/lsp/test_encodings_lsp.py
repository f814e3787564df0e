"""What a language server is sent and what its answers point at are decoded as the language's
own tools would: a latin-1 Python file with a coding line reaches basedpyright as the text it
holds, and positions (UTF-16 for the server, characters for the caller) land on the right names,
also after characters outside the BMP. A binary file with a source extension is not sent, and a
workspace symbol search the server answers says which files nobody could search."""

from __future__ import annotations

import time

import pytest

from codebelt import Session
from codebelt.intel.lsp import detected

pytestmark = pytest.mark.skipif(
    not any(s.name == "basedpyright" for s in detected()),
    reason="basedpyright-langserver is not installed (scripts/setup.sh installs it)",
)

ACCENTS = "# -*- coding: latin-1 -*-\ndef café(naïve: int) -> int:\n    return naïve\n\n\nx = 'àéîõü'; y = café(1)\n"
EMOJI = "from accents import café\ns = '😀😀'; z = café(2)\n"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    root = (tmp_path_factory.mktemp("enc") / "proj").resolve()
    root.mkdir()
    (root / "accents.py").write_bytes(ACCENTS.encode("latin-1"))
    (root / "emoji.py").write_text(EMOJI, encoding="utf-8")
    (root / "blob.py").write_bytes(b"def hidden_in_blob(): pass\n\0\0\x01\x02")
    with Session(root, settings={"lsp": {"requestTimeoutMs": 30_000}}) as s:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            r = s.call("LSP", {"operation": "hover", "filePath": "accents.py", "line": 6, "character": 18})
            if "lsp:basedpyright" in r.text:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"basedpyright did not answer within 90 s: {r.text}")
        yield s


def where(r) -> list[str]:
    return sorted(f"{loc['path']}:{loc['line']}:{loc['character']}" for loc in r.data["locations"])


def test_definition_in_a_latin1_file(session):
    r = session.call("LSP", {"operation": "goToDefinition", "filePath": "accents.py", "line": 6, "character": 18})
    assert r.data["backend"] == "lsp:basedpyright", r.text
    assert where(r) == ["accents.py:2:5"], r.text
    assert r.data["locations"][0]["text"] == "def café(naïve: int) -> int:"


def test_hover_names_the_accented_function(session):
    r = session.call("LSP", {"operation": "hover", "filePath": "accents.py", "line": 6, "character": 18})
    assert r.data["backend"] == "lsp:basedpyright", r.text
    assert "café" in r.data["hover"] and "naïve" in r.data["hover"], r.text


def test_positions_after_characters_outside_the_bmp(session):
    # '😀' is two UTF-16 code units for the server, one character for the caller
    r = session.call("LSP", {"operation": "goToDefinition", "filePath": "emoji.py", "line": 2, "character": 15})
    assert where(r) == ["accents.py:2:5"], r.text
    r = session.call("LSP", {"operation": "findReferences", "filePath": "accents.py", "line": 2, "character": 5})
    assert r.data["backend"] == "lsp:basedpyright", r.text
    assert {"accents.py:2:5", "accents.py:6:18", "emoji.py:1:21", "emoji.py:2:15"} <= set(where(r)), r.text


def test_a_binary_source_file_is_not_sent_and_searches_say_what_was_skipped(session):
    r = session.call("LSP", {"operation": "documentSymbol", "filePath": "blob.py"})
    assert r.is_error and "blob.py: binary (NUL bytes in a file with a source extension)" in r.text, r.text
    r = session.call("LSP", {"operation": "workspaceSymbol", "query": "café"})
    assert r.data["backend"] == "lsp:basedpyright", r.text
    assert [s["name"] for s in r.data["symbols"]][:1] == ["café"], r.text
    assert "1 source file(s) were skipped and not searched: blob.py (binary" in r.text, r.text
