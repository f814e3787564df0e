"""codec: encoding, BOM, line ending and binary detection, as a table; exact round trips."""

from __future__ import annotations

import codecs

import pytest

from codebelt.files.codec import BinaryFile, apply_eol, for_display, sniff

SNIFF_CASES = [
    # (name, bytes, encoding, bom, eol, note substring or None)
    ("ascii lf", b"a\nb\n", "utf-8", b"", "\n", None),
    ("utf8 crlf", "é\r\nü\r\n".encode(), "utf-8", b"", "\r\n", None),
    ("mixed", b"a\r\nb\nc\n", "utf-8", b"", "mixed", None),
    ("utf8 bom", codecs.BOM_UTF8 + b"x\r\n", "utf-8", codecs.BOM_UTF8, "\r\n", None),
    ("utf16le bom", codecs.BOM_UTF16_LE + "hi\r\nthere\r\n".encode("utf-16-le"), "utf-16-le",
     codecs.BOM_UTF16_LE, "\r\n", None),
    ("utf16be bom", codecs.BOM_UTF16_BE + "hi\nthere\n".encode("utf-16-be"), "utf-16-be",
     codecs.BOM_UTF16_BE, "\n", None),
    ("latin-1 legacy", "café naïve résumé\n".encode("latin-1") * 20, None, b"", "\n", "not UTF-8"),
    ("utf8 with a bad byte", "héllo wörld\n".encode() * 5 + b"\xff\n", "utf-8", b"", "\n", "not valid UTF-8"),
    ("no newline", b"single line", "utf-8", b"", "\n", None),
]


@pytest.mark.parametrize("name,data,encoding,bom,eol,note", SNIFF_CASES, ids=[c[0] for c in SNIFF_CASES])
def test_sniff(name, data, encoding, bom, eol, note):
    fmt = sniff(data, at_eof=True)
    if encoding:
        assert fmt.encoding == encoding
    else:
        assert fmt.encoding not in ("utf-8", "ascii")
    assert fmt.bom == bom
    assert fmt.eol == eol
    if note:
        assert note in (fmt.note or "")
    else:
        assert fmt.note is None
    # Whatever was detected must give back the same bytes.
    assert fmt.encode(fmt.decode(data)) == data


BINARY_CASES = [
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, "PNG image"),
    (b"\x7fELF\x02\x01\x01" + b"\x00" * 20, "ELF executable"),
    (b"%PDF-1.4\n", "PDF document"),
    (b"PK\x03\x04rest", "ZIP archive"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "WebP image"),
    (b"some text\x00with a NUL", "NUL bytes"),
    (b"\x00" * 4096, "NUL bytes"),
]


@pytest.mark.parametrize("data,kind", BINARY_CASES)
def test_binary_detection(data, kind):
    with pytest.raises(BinaryFile) as info:
        sniff(data)
    assert kind in info.value.kind


def test_truncated_multibyte_at_sample_end_is_not_an_error():
    data = "é".encode() * 10
    # The sample ends in the middle of a character: still UTF-8 when more bytes follow.
    assert sniff(data[:-1], at_eof=False).note is None


def test_invalid_utf8_survives_and_displays_replacement():
    data = "naïve ".encode() + b"ok \xff\xfe bytes\n"
    fmt = sniff(data, at_eof=True)
    assert fmt.encoding == "utf-8" and "not valid UTF-8" in fmt.note
    text = fmt.decode(data)
    assert fmt.encode(text) == data
    assert for_display(text) == "naïve ok \ufffd\ufffd bytes\n"


@pytest.mark.parametrize("data,shown", [
    ("café crème brûlée\n".encode("latin-1"), "café crème brûlée\n"),
    (b"junk \xff\xfe\n", "junk ÿþ\n"),  # no UTF-8 at all: a Western single-byte reading
])
def test_legacy_single_byte_files(data, shown):
    fmt = sniff(data, at_eof=True)
    assert fmt.note and "not UTF-8" in fmt.note
    assert fmt.decode(data) == shown
    assert fmt.encode(shown) == data


@pytest.mark.parametrize("text,expected", [
    ("a\nb", "a\r\nb"), ("a\r\nb\n", "a\r\nb\r\n"), ("none", "none"), ("\n\n", "\r\n\r\n"),
])
def test_apply_eol(text, expected):
    assert apply_eol(text, "\r\n") == expected
