"""Sources that are not UTF-8 are decoded as their language's own tools would (Python by
PEP 263, other languages as an editor does: byte order marks, UTF-16), so names, positions
and quoted lines are right; a binary file with a source extension is skipped, and a workspace
symbol search says so."""

from __future__ import annotations

import codecs

import pytest

# file name, its text, how it is stored on disk, the name defined, its 1-based (line, character)
CASES = [
    ("latin1.py", "# -*- coding: latin-1 -*-\nx = 'é'; déjà = 1\ndef café(): return 'naïve'\n",
     lambda t: t.encode("latin-1"), "café", (3, 5)),
    ("cp1252.py", "# vim: set fileencoding=cp1252 :\ns = '€'; def_ = 0\nclass Größe: pass\n",
     lambda t: t.encode("cp1252"), "Größe", (3, 7)),
    ("koi8.py", "#!/usr/bin/env python\n# coding=koi8-r\nслово = 'привет'\n",
     lambda t: t.encode("koi8-r"), "слово", (3, 1)),
    ("bom.py", "def bommed(): pass\n", lambda t: codecs.BOM_UTF8 + t.encode(), "bommed", (1, 5)),
    ("utf16le.ts", "// ü\nexport function wide16(ä: number) { return ä }\n",
     lambda t: codecs.BOM_UTF16_LE + t.encode("utf-16-le"), "wide16", (2, 17)),
    ("utf16be.js", "const s = 'ß'; function bigEnd() {}\n",
     lambda t: codecs.BOM_UTF16_BE + t.encode("utf-16-be"), "bigEnd", (1, 25)),
    ("utf32.go", "package p\n// ✓\nfunc Thirty2() {}\n",
     lambda t: codecs.BOM_UTF32_LE + t.encode("utf-32-le"), "Thirty2", (3, 6)),
    ("nobom16.java", "class NoMark { void m() {} }\n", lambda t: t.encode("utf-16-le"),
     "NoMark", (1, 7)),
    # no coding line: Python itself would refuse the file; the index still reads its names
    ("stray.py", "s = 'caf\udce9'\ndef after_stray(): pass\n",
     lambda t: t.encode("utf-8", "surrogateescape"), "after_stray", (2, 5)),
    # a coding line naming no codec: read as UTF-8
    ("bogus.py", "# coding: no-such-codec\ndef bogus_codec(): pass\n", str.encode,
     "bogus_codec", (2, 5)),
]


@pytest.mark.parametrize("name,text,store,symbol,where", CASES, ids=[c[0] for c in CASES])
def test_decoded_as_the_language_would(tmp_path, make_index, name, text, store, symbol, where):
    root = tmp_path / "ws"
    root.mkdir()
    (root / name).write_bytes(store(text))
    ix = make_index(root)
    assert ix.refresh().failed == 0
    ans = ix.definitions(symbol)
    assert [(s.path.name, s.line, s.character) for s in ans.symbols] == [(name, *where)]
    loc = ans.locations[0]
    assert loc.text[loc.character - 1:loc.end_character - 1] == symbol
    assert "\ufffd" not in loc.text or name == "stray.py"
    # the position a caller gives (1-based characters) finds the same name
    assert ix.identifier_at(root / name, *where) == symbol
    assert [s.name for s in ix.document_symbols(root / name).symbols].count(symbol) == 1


def test_references_on_a_latin1_line_count_characters(tmp_path, make_index):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "m.py").write_bytes("# coding: latin-1\ndef f(): pass\nx = 'àéîõü'; f()\n".encode("latin-1"))
    ix = make_index(root)
    ix.refresh()
    [loc] = ix.references("f").locations
    assert (loc.line, loc.character) == (3, 14)
    assert loc.text == "x = 'àéîõü'; f()"


def test_a_binary_file_with_a_source_extension_is_skipped_and_searches_say_so(tmp_path, make_index):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "real.py").write_text("def needle_here(): pass\n")
    (root / "blob.py").write_bytes(b"def needle_hidden(): pass\n\0\0\x01\x02")
    (root / "image.ts").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    ix = make_index(root)
    stats = ix.refresh()
    assert stats.failed == 2
    ans = ix.workspace_symbols("needle")
    assert [s.name for s in ans.symbols] == ["needle_here"]
    assert ans.note is not None
    assert "2 source file(s) were skipped" in ans.note
    assert "blob.py (binary" in ans.note and "image.ts (binary" in ans.note
    # nothing skipped: no note
    (root / "blob.py").unlink()
    (root / "image.ts").unlink()
    ix.refresh()
    assert ix.workspace_symbols("needle").note is None
