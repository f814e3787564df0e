"""The byte fast path of apply_edits gives exactly what the text path gives."""

from __future__ import annotations

import codecs

from hypothesis import given, settings, strategies as st

from codebelt.files.codec import sniff
from codebelt.files.editing import EditSpec, _apply_on_text, _exact_on_bytes, snippet
from codebelt.files.matching import EditError

words = st.sampled_from(["a", "b", "é", "x\n", "\r\n", "ab", "\u2603", " "])


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(words, min_size=1, max_size=30), edits=st.lists(
    st.tuples(st.lists(words, min_size=1, max_size=3), st.lists(words, max_size=3), st.booleans()),
    min_size=1, max_size=3), bom=st.booleans())
def test_fast_path_equals_text_path(parts, edits, bom):
    raw = (codecs.BOM_UTF8 if bom else b"") + "".join(parts).encode()
    fmt = sniff(raw, at_eof=True)
    specs = [EditSpec("".join(o), "".join(n), r) for o, n, r in edits]
    fast = _exact_on_bytes(raw, fmt, specs)
    if fast is None:
        return
    text, counts, hows, _, _ = _apply_on_text(fmt.decode(raw), fmt, specs)
    assert fast[0] == fmt.encode(text)
    assert fast[1] == counts


def test_snippet_same_on_bytes_and_text():
    text = "\ufeffone\r\ntwo\r\nthree\r\nfour\r\n"
    data = text.encode()
    lo = data.index(b"three")
    assert snippet(data, lo, lo + 5, context=1) == snippet(text[1:], text.index("three") - 1,
                                                           text.index("three") + 4, context=1)
