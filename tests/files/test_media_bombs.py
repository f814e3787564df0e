"""Read of images and PDFs that decode to far more than their size: every decode is bounded in
memory and time. Images are judged from their header (and JPEGs decoded at reduced DCT scale);
each image case also runs in a child process under RLIMIT_AS, so a decode that is not bounded
fails there. PDFs are read in a bounded child process. pytest-timeout guards the time."""

from __future__ import annotations

import io
import json
import os
import resource
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from PIL import Image as PILImage

from codebelt.files import pdf as pdf_mod

CHILD_MEMORY = 700 << 20  # what a child process may map while it reads one image


def _png_chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def png_bomb(width: int, height: int) -> bytes:
    """A grayscale PNG of `width` x `height` zero pixels, compressed row by row (a few hundred KB
    for 19,000 x 19,000: 361 MP, 1.4 GB once decoded to RGBA)."""
    comp = zlib.compressobj(9)
    row = b"\0" * (width + 1)
    idat = bytearray()
    for _ in range(height):
        idat += comp.compress(row)
    idat += comp.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", bytes(idat)) + _png_chunk(b"IEND", b"")


def gif_with_screen(width: int, height: int) -> bytes:
    """A GIF whose logical screen is `width` x `height` around one 1x1 frame."""
    head = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff"
    frame = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00"
    return head + frame + b"\x3b"


def encoded(mode: str, size: tuple[int, int], fmt: str, **kw) -> bytes:
    out = io.BytesIO()
    PILImage.new(mode, size, 90).save(out, fmt, **kw)
    return out.getvalue()


def animation(fmt: str, frames: int) -> bytes:
    out = io.BytesIO()
    images = [PILImage.new("RGB", (16, 16), (i % 256, 0, 0)) for i in range(frames)]
    images[0].save(out, fmt, save_all=True, append_images=images[1:], duration=10)
    return out.getvalue()


def read_in_child(path: Path, mime: str) -> dict:
    """load_image in a child process that may map at most CHILD_MEMORY bytes."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from codebelt.files.media import load_image, MediaError\n"
        "try:\n"
        f"    im = load_image(Path({str(path)!r}), {mime!r})\n"
        "    print(json.dumps({'size': [im.width, im.height], 'original': [im.original_width, im.original_height]}))\n"
        "except MediaError as e:\n"
        "    print(json.dumps({'error': str(e)}))\n"
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, preexec_fn=limit)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


# name, file name, bytes (made lazily), what the answer holds: ("error", substring) | ("size", original size)
IMAGES = [
    ("png 19000x19000 (a decompression bomb)", "bomb.png", lambda: png_bomb(19_000, 19_000),
     ("error", "19,000 x 19,000 pixels (361 MP); Read decodes at most 50 MP")),
    ("png 9000x9000, over the decode cap", "big.png", lambda: png_bomb(9_000, 9_000), ("error", "81 MP")),
    ("tiff named .png", "tiff.png", lambda: encoded("L", (64, 64), "TIFF"),
     ("error", "its content is not a PNG, JPEG, GIF or WebP image")),
    ("psd-like garbage named .jpg", "x.jpg", lambda: b"8BPS" + b"\0" * 100,
     ("error", "its content is not a PNG, JPEG, GIF or WebP image")),
    ("a jpeg named .png: shown as the jpeg it is", "photo.png", lambda: encoded("RGB", (3000, 2000), "JPEG"),
     ("size", [3000, 2000])),
    ("jpeg 10000x10000 baseline: decoded at 1/8", "base.jpg", lambda: encoded("L", (10_000, 10_000), "JPEG"),
     ("size", [10_000, 10_000])),
    ("jpeg 10000x10000 progressive: refused", "prog.jpg",
     lambda: encoded("L", (10_000, 10_000), "JPEG", progressive=True), ("error", "100 MP")),
    ("gif screen 30000x30000 around one pixel", "screen.gif", lambda: gif_with_screen(30_000, 30_000),
     ("error", "900 MP")),
    ("gif of 3000 frames: the first one", "many.gif", lambda: animation("GIF", 3000), ("size", [16, 16])),
    ("webp of 500 frames: the first one", "many.webp", lambda: animation("WEBP", 500), ("size", [16, 16])),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name,filename,make,expect", IMAGES, ids=[c[0] for c in IMAGES])
def test_image_decodes_are_bounded(session, ws, name, filename, make, expect):
    path = ws / filename
    path.write_bytes(make())
    mime = {"png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}[filename.rsplit(".", 1)[1]]
    child = read_in_child(path, mime)
    r = session.call("Read", {"file_path": filename})
    kind, value = expect
    if kind == "error":
        # not a PNG, JPEG, GIF or WebP by its first bytes: refused before any decoder runs (Claude Code's text)
        assert r.is_error and (value in r.text or "is not a valid PNG/JPEG/GIF/WebP" in r.text), r.text
        assert value in child.get("error", ""), child
    else:
        assert not r.is_error, r.text
        assert child["original"] == value and max(child["size"]) <= 1568, child
        assert r.data["file"]["originalWidth"] == value[0]


def test_an_image_file_over_the_size_cap_is_not_read(session, ws):
    path = ws / "huge.png"
    with open(path, "wb") as f:
        f.write(png_bomb(10, 10))
        f.truncate(100 << 20)  # sparse: 100 MB that costs no disk
    r = session.call("Read", {"file_path": "huge.png"})
    assert r.is_error and "up to 64 MB" in r.text


# -- PDFs --------------------------------------------------------------------------------------

def pdf(objects: list[bytes], root: int = 1) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root {root} 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def one_page(content: bytes, resources: bytes = b"<< /Font << /F1 4 0 R >> >>") -> bytes:
    return pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R /Resources " + resources + b" >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Length {len(content)} /Filter /FlateDecode >>\nstream\n".encode() + content + b"\nendstream",
    ])


def many_pages(n: int) -> bytes:
    kids = " ".join(f"{3 + i} 0 R" for i in range(n)).encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(n).encode() + b" >>"]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * n
    return pdf(objects)


def inflating(operators: bytes, total: int) -> bytes:
    comp = zlib.compressobj(6)
    body = bytearray(comp.compress(b"BT /F1 12 Tf "))
    block = operators * ((1 << 20) // len(operators))
    for _ in range(total // len(block)):
        body += comp.compress(block)
    return bytes(body + comp.compress(b" ET") + comp.flush())


@pytest.fixture
def tight_limits(monkeypatch):
    # The same limits, smaller, so the tests are quick: what they prove is that the limit acts.
    monkeypatch.setattr(pdf_mod, "CPU_SECONDS", 2)
    monkeypatch.setattr(pdf_mod, "WALL_SECONDS", 20)
    monkeypatch.setattr(pdf_mod, "MEMORY_BYTES", 400 << 20)


def shown(r) -> str:
    """The result's text and, for a whole PDF (a document block), the text that stands in for it."""
    return r.text + "".join("\n" + d.text for d in r.documents)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name,content,message", [
    ("a stream inflating to 256 MB of zeros (over pypdf's own 75 MB cap)", lambda: inflating(b"\0", 256 << 20), "Page 1"),
    ("10 MB of text operators", lambda: inflating(b"(ab) Tj 1 0 Td ", 10 << 20), "stopped"),
])
def test_pdf_content_bombs_are_bounded(session, ws, tight_limits, name, content, message):
    (ws / "bomb.pdf").write_bytes(one_page(content()))
    r = session.call("Read", {"file_path": "bomb.pdf"})
    assert message in shown(r), shown(r)[:500]
    # …and the next Read of a good PDF works as usual.
    (ws / "ok.pdf").write_bytes(one_page(zlib.compress(b"BT /F1 12 Tf 72 720 Td (fine) Tj ET")))
    assert "fine" in shown(session.call("Read", {"file_path": "ok.pdf"}))


@pytest.mark.timeout(120)
def test_pdf_with_thousands_of_pages(session, ws, tight_limits):
    (ws / "long.pdf").write_bytes(many_pages(5_000))
    r = session.call("Read", {"file_path": "long.pdf"})
    assert r.is_error and "This PDF has 5000 pages, which is too many to read at once" in r.text
    r = session.call("Read", {"file_path": "long.pdf", "pages": "4999-5000"})
    assert not r.is_error and "--- Page 5000 of 5000 ---" in r.text, r.text
    r = session.call("Read", {"file_path": "long.pdf", "pages": "1-1000000000"})
    assert r.is_error and "exceeds maximum of 20 pages per request" in r.text


@pytest.mark.timeout(120)
@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_pdf_with_deeply_nested_objects(session, ws, tight_limits, depth):
    resources = b"<< /Font << /F1 4 0 R >> /Deep " + b"[" * depth + b"]" * depth + b" >>"
    (ws / "deep.pdf").write_bytes(one_page(zlib.compress(b"BT /F1 12 Tf 72 720 Td (deep) Tj ET"), resources))
    r = session.call("Read", {"file_path": "deep.pdf"})
    # An answer: the page, or an error that says what happened; never a crash or a hang.
    text = shown(r)
    assert "--- Page 1 of 1 ---" in text or "Cannot read deep.pdf: " in text, text[:500]


def test_a_cancelled_pdf_read_stops_the_reader(ws, tight_limits):
    import threading

    path = ws / "slow.pdf"
    path.write_bytes(one_page(inflating(b"(ab) Tj 1 0 Td ", 20 << 20)))
    flag = threading.Event()
    threading.Timer(0.5, flag.set).start()
    with pytest.raises(pdf_mod.MediaError, match="cancelled"):  # not "CPU time": the cancel acted first
        pdf_mod.read_pdf(path, None, 100_000, cancelled=flag.is_set)
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _is_reader(p, path)]


def _is_reader(pid: str, path: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return str(path).encode() in cmdline and b"codebelt.files.pdf" in cmdline
