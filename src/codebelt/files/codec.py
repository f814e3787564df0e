"""Text codec: what a file's bytes are (binary or text), and how to decode and re-encode them.

`sniff(head)` looks at the first bytes of a file and returns a `TextFormat` (encoding, BOM, line
ending) or raises `BinaryFile` with a detected type. Edit and Write use the same `TextFormat` to
write a file back exactly as it was: same encoding, same BOM, same line endings.

Invalid UTF-8 is decoded with `surrogateescape`, so the undecodable bytes survive an Edit
byte-for-byte; `for_display` turns them into U+FFFD for the model.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from ..errors import BinaryFile

SNIFF_BYTES = 64 * 1024  # how much of a file decides its encoding and line ending
BINARY_PROBE = 8 * 1024  # NUL bytes in this much of the head mean "binary"

BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# (offset, magic, description). Order matters where magics share a prefix.
MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "PNG image"),
    (0, b"\xff\xd8\xff", "JPEG image"),
    (0, b"GIF87a", "GIF image"),
    (0, b"GIF89a", "GIF image"),
    (0, b"%PDF-", "PDF document"),
    (0, b"PK\x03\x04", "ZIP archive (also .jar/.docx/.xlsx/.whl)"),
    (0, b"PK\x05\x06", "ZIP archive (empty)"),
    (0, b"\x1f\x8b", "gzip compressed data"),
    (0, b"BZh", "bzip2 compressed data"),
    (0, b"\xfd7zXZ\x00", "xz compressed data"),
    (0, b"(\xb5/\xfd", "zstd compressed data"),
    (0, b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
    (0, b"Rar!\x1a\x07", "RAR archive"),
    (0, b"\x7fELF", "ELF executable"),
    (0, b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (0, b"\xfe\xed\xfa\xcf", "Mach-O executable"),
    (0, b"\xca\xfe\xba\xbe", "Java class file or Mach-O universal binary"),
    (0, b"MZ", "Windows (PE/DOS) executable"),
    (0, b"\x00asm", "WebAssembly module"),
    (0, b"SQLite format 3\x00", "SQLite database"),
    (0, b"BM", None),  # too weak alone; checked with NULs below
    (0, b"ID3", "MP3 audio"),
    (0, b"OggS", "Ogg media"),
    (0, b"fLaC", "FLAC audio"),
    (0, b"wOFF", "WOFF font"),
    (0, b"wOF2", "WOFF2 font"),
    (0, b"\x00\x01\x00\x00\x00", "TrueType font"),
    (0, b"OTTO", "OpenType font"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "Microsoft Office (OLE) document"),
    (0, b"\x80\x04\x95", "Python pickle"),
    (257, b"ustar", "tar archive"),
    (4, b"ftyp", "MP4/QuickTime media"),
)


@dataclass(frozen=True)
class TextFormat:
    """How a text file is stored. `eol` is "\\n", "\\r\\n" or "mixed"; `note` explains a fallback."""

    encoding: str = "utf-8"
    bom: bytes = b""
    eol: str = "\n"
    note: str | None = None

    @property
    def ascii_compatible(self) -> bool:
        """Whether b"\\n" in the bytes is exactly a line feed (true for everything but UTF-16)."""
        return not self.encoding.startswith("utf-16")

    @property
    def errors(self) -> str:
        # surrogateescape keeps undecodable bytes; encoding them back restores the originals.
        return "surrogateescape" if self.ascii_compatible else "strict"

    def decode(self, data: bytes) -> str:
        if self.bom and data.startswith(self.bom):
            data = data[len(self.bom):]
        return data.decode(self.encoding, self.errors)

    def encode(self, text: str) -> bytes:
        """Text back to bytes (BOM included). Raises UnicodeEncodeError if the encoding can't hold it."""
        return self.bom + text.encode(self.encoding, self.errors)

    def describe(self) -> str:
        parts = [self.encoding + (" with BOM" if self.bom else "")]
        parts.append({"\n": "LF", "\r\n": "CRLF"}.get(self.eol, "mixed line endings"))
        return ", ".join(parts)


UTF8 = TextFormat()


def detect_binary(head: bytes) -> str | None:
    """The detected type of binary content, or None when `head` looks like text."""
    for offset, magic, kind in MAGIC:
        if kind and head[offset:offset + len(magic)] == magic:
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP image"
    if head[:4] == b"RIFF":
        return "RIFF media (WAV/AVI)"
    probe = head[:BINARY_PROBE]
    if any(probe.startswith(bom) for bom, enc in BOMS if enc.startswith("utf-16")):
        return None
    if b"\x00" in probe:
        return "binary data (contains NUL bytes)"
    return None


def sniff(head: bytes, *, at_eof: bool = False) -> TextFormat:
    """Encoding and line ending from the first bytes of a file; raises BinaryFile.

    `at_eof` says `head` is the whole file (so a multi-byte character cut at the end of the
    sample is a real error, not an artefact of sampling).
    """
    kind = detect_binary(head)
    if kind:
        raise BinaryFile(kind)
    for bom, enc in BOMS:
        if head.startswith(bom):
            sample = head[len(bom):]
            if enc.startswith("utf-16"):
                sample = sample[: len(sample) // 2 * 2]
                text = sample.decode(enc, "replace")
                return TextFormat(enc, bom, _eol(text.count("\r\n"), text.count("\n")))
            return TextFormat(enc, bom, _eol(sample.count(b"\r\n"), sample.count(b"\n")))
    eol = _eol(head.count(b"\r\n"), head.count(b"\n"))
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        decoder.decode(head, final=at_eof)
        return TextFormat("utf-8", b"", eol)
    except UnicodeDecodeError:
        pass
    legacy = _legacy_encoding(head)
    if legacy:
        return TextFormat(legacy, b"", eol, note=f"not UTF-8; decoded as {legacy}")
    bad = _count_invalid_utf8(head)
    return TextFormat(
        "utf-8", b"", eol,
        note=f"not valid UTF-8 ({bad}+ invalid byte{'s' if bad != 1 else ''} shown as \ufffd; "
        "they are kept unchanged on Edit)",
    )


def _eol(crlf: int, lf: int) -> str:
    if lf == 0 or crlf == 0:
        return "\n"
    return "\r\n" if crlf == lf else "mixed"


# A valid multi-byte UTF-8 sequence: its presence means "UTF-8 with a few bad bytes", not legacy.
_UTF8_MULTIBYTE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}"
)


# Legacy encodings we accept from charset-normalizer's guess (codecs.lookup names); in all of
# them b"\n" is only ever a line feed, so the line index stays valid.
LEGACY_ENCODINGS = frozenset({
    "cp1252", "iso8859-1", "iso8859-15", "cp1250", "cp1251", "iso8859-2", "iso8859-5", "koi8-r",
    "cp1253", "cp1254", "cp1257", "mac-roman", "cp437", "cp850",
    "shift_jis", "cp932", "euc_jp", "gb2312", "gbk", "gb18030", "big5", "euc_kr", "cp949",
})


def _legacy_encoding(head: bytes) -> str | None:
    """A single-byte legacy encoding for text with no UTF-8 sequences at all, else None."""
    if _UTF8_MULTIBYTE.search(head):
        return None
    guess = None
    high = len(head) - len(head.translate(None, bytes(range(0x80, 0x100))))
    try:
        if high < 64:  # too little evidence to tell cp1250 from cp1252: take the Western reading
            raise LookupError
        from charset_normalizer import from_bytes  # lazy: only for non-UTF-8 files

        best = from_bytes(head[:SNIFF_BYTES]).best()
        guess = best.encoding if best is not None else None
    except Exception:
        guess = None
    for enc in (guess, "cp1252"):
        if not enc:
            continue
        try:
            if codecs.lookup(enc).name not in LEGACY_ENCODINGS:
                continue  # a guess outside the common ones is more often wrong than right
            # Must round-trip exactly and keep b"\n" a line feed, or Edit would corrupt the file.
            if head.decode(enc).encode(enc) == head and "\n".encode(enc) == b"\n":
                return codecs.lookup(enc).name
        except (UnicodeError, LookupError):
            continue
    return "latin-1"  # every byte is a character: always round-trips


def _count_invalid_utf8(data: bytes) -> int:
    return len(_ESCAPED.findall(data.decode("utf-8", "surrogateescape")))


_ESCAPED = re.compile("[\udc80-\udcff]")


def for_display(text: str) -> str:
    """Replace surrogate-escaped bytes (from invalid UTF-8) with U+FFFD for the model."""
    return _ESCAPED.sub("\ufffd", text)


def apply_eol(text: str, eol: str) -> str:
    """Map bare LF to CRLF when the file is CRLF (model text arrives with LF)."""
    if eol != "\r\n" or "\n" not in text:
        return text
    return re.sub(r"(?<!\r)\n", "\r\n", text)


def endings_for(count: int, replaced: list[str], before: str | None, usual: str) -> list[str]:
    """The line endings of `count` lines written into a file whose lines end differently (mixed
    CRLF and LF) — one rule, so Edit and ApplyPatch write the same bytes for the same change:
    the k-th new line takes the ending of the k-th line it replaces (past the last, the last
    one's); lines that replace none (an insertion) take the ending of the line they follow,
    else the file's usual one. `replaced` lists the replaced lines' endings in order."""
    if replaced:
        return [replaced[min(k, len(replaced) - 1)] for k in range(count)]
    return [before or usual] * count
