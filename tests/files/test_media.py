"""Read of images (downscaled with Pillow), PDFs (pypdf, page ranges) and notebooks."""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image as PILImage

from .conftest import make_pdf


def png(width, height, color=(200, 30, 30)) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


def decode(image) -> PILImage.Image:
    return PILImage.open(io.BytesIO(base64.b64decode(image.data)))


def test_small_image_passes_through(session, ws):
    data = png(40, 30)
    (ws / "dot.png").write_bytes(data)
    r = session.call("Read", {"file_path": "dot.png"})
    assert not r.is_error and len(r.images) == 1
    assert r.images[0].mime_type == "image/png" and base64.b64decode(r.images[0].data) == data
    assert r.text == ""  # as Claude Code: the image alone


@pytest.mark.parametrize("name,fmt,mime", [("big.png", "PNG", "image/png"), ("big.jpg", "JPEG", "image/jpeg"),
                                           ("big.webp", "WEBP", "image/webp"), ("big.gif", "GIF", "image/png")])
def test_large_image_downscaled_within_budget(session, ws, name, fmt, mime):
    out = io.BytesIO()
    PILImage.new("RGB", (4000, 1000), (10, 120, 200)).save(out, fmt)
    (ws / name).write_bytes(out.getvalue())
    r = session.call("Read", {"file_path": name})
    assert not r.is_error, r.text
    im = decode(r.images[0])
    assert r.images[0].mime_type == mime
    assert max(im.size) <= 2000 and im.size[0] * im.size[1] <= 4_000_000  # Claude Code's sizes
    assert abs(im.size[0] / im.size[1] - 4.0) < 0.05  # aspect ratio kept
    assert r.text == "[Image: original 4000x1000, displayed at 2000x500. Multiply coordinates by 2.00 to map to original image.]"


def test_pixel_budget_setting(make_session, ws):
    s = make_session(settings={"read": {"maxImagePixels": 10_000}})
    (ws / "sq.png").write_bytes(png(500, 500))
    im = decode(s.call("Read", {"file_path": "sq.png"}).images[0])
    assert im.size[0] * im.size[1] <= 10_000


def test_corrupt_image_is_an_error(session, ws):
    (ws / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    r = session.call("Read", {"file_path": "broken.png"})
    assert r.is_error and "cannot decode the image" in r.text


def test_pdf_as_a_document_with_its_text_beside(session, ws):
    (ws / "doc.pdf").write_bytes(make_pdf(["First page text", "Second page text", "Third"]))
    r = session.call("Read", {"file_path": "doc.pdf"})
    assert not r.is_error and r.text.startswith("PDF file read: doc.pdf (")
    [doc] = r.documents
    assert doc.mime_type == "application/pdf" and base64.b64decode(doc.data) == (ws / "doc.pdf").read_bytes()
    assert "--- Page 1 of 3 ---\nFirst page text" in doc.text and "--- Page 3 of 3 ---\nThird" in doc.text
    r = session.call("Read", {"file_path": "doc.pdf", "pages": "2"})
    assert r.text.startswith("PDF pages extracted: 1 page(s) from doc.pdf")
    assert "Second page text" in r.text and "First" not in r.text


@pytest.mark.parametrize("pages,shown,error", [
    ("3", [3], None), ("1-2", [1, 2], None), ("11-12", [11, 12], None), ("1-20", list(range(1, 13)), None),
    ("0", None, "Invalid pages parameter"), ("5-2", None, "Invalid pages parameter"),
    ("1,3-4", None, "not a list"), ("abc", None, "Invalid pages parameter"),
    ("30", None, "Requested page 30 is outside the document (PDF has 12 pages)"),
    ("1-99", None, "exceeds maximum of 20 pages per request"),
])
def test_pdf_page_ranges(session, ws, pages, shown, error):
    (ws / "long.pdf").write_bytes(make_pdf([f"Page body {i}" for i in range(1, 13)]))
    r = session.call("Read", {"file_path": "long.pdf", "pages": pages})
    if error:
        assert r.is_error and error in r.text
    else:
        assert not r.is_error and r.data["file"]["pages"] == shown
        for p in shown:
            assert f"Page body {p}" in r.text


def test_pdf_over_ten_pages_asks_for_range(session, ws):
    (ws / "long.pdf").write_bytes(make_pdf([f"Page body {i}" for i in range(1, 13)]))
    r = session.call("Read", {"file_path": "long.pdf"})
    assert r.is_error and r.text.startswith("This PDF has 12 pages, which is too many to read at once.")


def test_corrupt_pdf_goes_as_sent_and_its_text_says_so(session, ws):
    (ws / "bad.pdf").write_bytes(b"%PDF-1.4\ngarbage")
    r = session.call("Read", {"file_path": "bad.pdf"})  # as Claude Code: the API judges the document
    assert not r.is_error and "Cannot read bad.pdf" in r.documents[0].text
    r = session.call("Read", {"file_path": "bad.pdf", "pages": "1"})
    assert r.is_error and "Cannot read bad.pdf" in r.text


def notebook_json() -> dict:
    return {
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
        "cells": [
            {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["# Title\n", "Intro"]},
            {"cell_type": "code", "id": "c1", "execution_count": 1, "metadata": {}, "source": "print('hi')",
             "outputs": [{"output_type": "stream", "name": "stdout", "text": ["hi\n"]}]},
            {"cell_type": "code", "id": "c2", "execution_count": 2, "metadata": {}, "source": "1/0",
             "outputs": [{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                          "traceback": ["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"]}]},
            {"cell_type": "code", "id": "c3", "execution_count": 3, "metadata": {}, "source": "plot()",
             "outputs": [{"output_type": "display_data", "metadata": {},
                          "data": {"image/png": base64.b64encode(png(8, 8)).decode(), "text/plain": "<Figure>"}}]},
        ],
    }


def test_notebook_cells_outputs_and_images(session, ws):
    (ws / "nb.ipynb").write_text(json.dumps(notebook_json()))
    r = session.call("Read", {"file_path": "nb.ipynb"})
    assert not r.is_error
    t = r.text
    assert t.startswith('<cell id="m1"><cell_type>markdown</cell_type># Title\nIntro</cell id="m1">\n')
    assert "<cell id=\"c1\">print('hi')</cell id=\"c1\">\n\nhi\n" in t
    assert "ZeroDivisionError: division by zero" in t and "\x1b" not in t
    assert "<Figure>" in t and len(r.images) == 1 and r.images[0].mime_type == "image/png"
    assert r.data["file"]["cells"] == 4


def test_invalid_notebook_is_an_error(session, ws):
    (ws / "bad.ipynb").write_text("{not json")
    r = session.call("Read", {"file_path": "bad.ipynb"})
    assert r.is_error and r.text.startswith("Notebook file is not valid JSON (it may be truncated, corrupted, or still")


def test_at_most_twenty_pages_per_call():
    from codebelt.files.media import MediaError, parse_pages

    assert parse_pages("1-20", 30) == list(range(1, 21))
    with pytest.raises(MediaError, match="at most 20 pages"):
        parse_pages("1-21", 30)
    with pytest.raises(MediaError, match="at most 20 pages"):
        parse_pages("1-15,20-25", 30)
