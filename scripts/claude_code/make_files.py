"""Make the binary fixture files of the compatibility cases (images, PDFs, notebooks).

    .venv/bin/python scripts/claude_code/make_files.py

They are committed; this script says how they were made (Pillow for images, hand-written PDF
objects so text extraction has real text) and remakes them byte for byte.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from PIL import Image

OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "claude_code" / "files"


def images() -> None:
    Image.new("RGB", (40, 20), (200, 30, 30)).save(OUT / "small.png", optimize=True)
    Image.new("RGB", (3000, 1500), (30, 120, 200)).save(OUT / "large.png", optimize=True)
    Image.new("RGB", (64, 48), (10, 200, 10)).save(OUT / "photo.jpg", quality=80)
    Image.new("P", (16, 16), 3).save(OUT / "anim.gif")
    Image.new("RGB", (32, 32), (100, 100, 100)).save(OUT / "pic.webp", lossless=True)


def pdf(pages: list[str]) -> bytes:
    """A minimal PDF: one Helvetica text line per page."""
    objs: list[bytes] = []
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objs.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    font = 3 + 2 * n
    for i, text in enumerate(pages):
        page, content = 3 + 2 * i, 4 + 2 * i
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R "
                    f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode())
        stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def pdfs() -> None:
    (OUT / "two-pages.pdf").write_bytes(pdf(["First page says hello", "Second page says goodbye"]))
    (OUT / "twelve-pages.pdf").write_bytes(pdf([f"Page number {i}" for i in range(1, 13)]))
    (OUT / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")


def notebooks() -> None:
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), (250, 200, 0)).save(buf, "PNG", optimize=True)
    png = base64.b64encode(buf.getvalue()).decode()
    cells = [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n", "Some text."]},
        {"cell_type": "code", "execution_count": 1, "id": "calc", "metadata": {},
         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["3\n"]}],
         "source": ["x = 1 + 2\n", "print(x)"]},
        {"cell_type": "code", "execution_count": 2, "id": "result", "metadata": {},
         "outputs": [{"data": {"text/plain": ["42"]}, "execution_count": 2, "metadata": {},
                      "output_type": "execute_result"}],
         "source": ["6 * 7"]},
        {"cell_type": "code", "execution_count": 3, "id": "boom", "metadata": {},
         "outputs": [{"ename": "ZeroDivisionError", "evalue": "division by zero", "output_type": "error",
                      "traceback": ["Traceback (most recent call last)", "ZeroDivisionError: division by zero"]}],
         "source": ["1 / 0"]},
        {"cell_type": "code", "execution_count": None, "id": "empty", "metadata": {}, "outputs": [], "source": []},
    ]
    nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                                      "language_info": {"name": "python", "version": "3.11.0"}},
          "nbformat": 4, "nbformat_minor": 5}
    (OUT / "basic.ipynb").write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    # nbformat 4.4: no cell ids; two-space indent, no trailing newline
    old = json.loads(json.dumps(nb))
    old["nbformat_minor"] = 4
    for c in old["cells"]:
        del c["id"]
    (OUT / "no-ids.ipynb").write_text(json.dumps(old, indent=2))
    img = {"cells": [{"cell_type": "code", "execution_count": 1, "id": "plot", "metadata": {},
                      "outputs": [{"data": {"image/png": png, "text/plain": ["<Figure>"]}, "metadata": {},
                                   "output_type": "display_data"}],
                      "source": ["plot()"]}],
           "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    (OUT / "image.ipynb").write_text(json.dumps(img, indent=1) + "\n")


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    images()
    pdfs()
    notebooks()
