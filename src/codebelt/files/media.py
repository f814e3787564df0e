"""Images and PDFs for Read. Pillow and pypdf are imported inside the functions that need them,
so reading a text file never loads them.
"""

from __future__ import annotations

import base64
import io
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import MediaError

IMAGE_MIME = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
# Anthropic's guidance: images over ~1568 px on the long edge or ~1.15 MP are downscaled by the
# API anyway (costing latency); base64 payloads over 5 MB are refused.
MAX_IMAGE_EDGE = 1568
MAX_IMAGE_PIXELS = 1_150_000
MAX_IMAGE_BYTES = 3_750_000  # raw bytes whose base64 stays under 5 MB

MAX_PDF_PAGES_PER_CALL = 20
PDF_PAGES_WITHOUT_RANGE = 10


@dataclass
class LoadedImage:
    data: str  # base64
    mime_type: str
    width: int
    height: int
    original_width: int
    original_height: int
    byte_size: int

    @property
    def downscaled(self) -> bool:
        return (self.width, self.height) != (self.original_width, self.original_height)


def fit(width: int, height: int, max_edge: int, max_pixels: int) -> tuple[int, int]:
    """The largest size with the same aspect ratio inside both budgets."""
    scale = min(1.0, max_edge / max(width, height), (max_pixels / (width * height)) ** 0.5)
    return max(1, int(width * scale)), max(1, int(height * scale))


def load_image(
    path: Path, mime_type: str, max_edge: int = MAX_IMAGE_EDGE, max_pixels: int = MAX_IMAGE_PIXELS
) -> LoadedImage:
    """The image as base64, downscaled (Pillow) when over the pixel or byte budget."""
    raw = path.read_bytes()
    try:
        from PIL import Image as PILImage

        PILImage.MAX_IMAGE_PIXELS = 20_000 * 20_000  # refuse decompression bombs beyond this
        with PILImage.open(io.BytesIO(raw)) as im:
            w, h = im.size
            target = fit(w, h, max_edge, max_pixels)
            if target == (w, h) and len(raw) <= MAX_IMAGE_BYTES:
                return LoadedImage(base64.b64encode(raw).decode("ascii"), mime_type, w, h, w, h, len(raw))
            im.seek(0)
            frame = im.convert("RGBA" if im.mode in ("RGBA", "LA", "P") else "RGB")
            frame = frame.resize(target, PILImage.Resampling.LANCZOS)
            out = io.BytesIO()
            if mime_type == "image/jpeg":
                frame.convert("RGB").save(out, "JPEG", quality=85)
            elif mime_type == "image/webp":
                frame.save(out, "WEBP", quality=85)
            else:  # PNG, and GIF (its first frame) becomes PNG
                frame.save(out, "PNG", optimize=True)
                mime_type = "image/png"
            data = out.getvalue()
            return LoadedImage(
                base64.b64encode(data).decode("ascii"), mime_type, *target, w, h, len(raw)
            )
    except MediaError:
        raise
    except Exception as e:  # Pillow raises many types for corrupt input
        if type(e).__name__ == "UnidentifiedImageError":  # its message names an in-memory object
            raise MediaError("cannot decode the image: its content is not a PNG, JPEG, GIF or WebP image") from None
        raise MediaError(f"cannot decode the image ({type(e).__name__}: {e})") from None


_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_pages(spec: str, page_count: int) -> list[int]:
    """'3', '1-5', '1,3-4' → 1-based page numbers (in order, no duplicates)."""
    pages: list[int] = []
    for part in spec.split(","):
        m = _RANGE.match(part)
        if not m:
            raise MediaError(
                f'invalid pages value {spec!r}: use a page ("3"), a range ("1-5") or a list ("1,3-4")'
            )
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) else first
        if first < 1 or last < first:
            raise MediaError(f"invalid page range {part.strip()!r}: pages start at 1 and ranges go up")
        if first > page_count:
            raise MediaError(f"page {first} does not exist: the PDF has {page_count} pages")
        for p in range(first, min(last, page_count) + 1):
            if p not in pages:
                pages.append(p)
    if len(pages) > MAX_PDF_PAGES_PER_CALL:
        raise MediaError(
            f"{len(pages)} pages requested; at most {MAX_PDF_PAGES_PER_CALL} pages per call. "
            "Ask for a smaller range."
        )
    return pages


def open_pdf(source):
    """A PdfReader over `source`: an open binary file (read through its descriptor) or a path."""
    try:
        from pypdf import PdfReader

        reader = PdfReader(source if hasattr(source, "read") else str(source))
        if reader.is_encrypted:
            try:
                reader.decrypt("")
            except Exception:
                raise MediaError("the PDF is encrypted with a password") from None
        len(reader.pages)
        return reader
    except MediaError:
        raise
    except Exception as e:
        raise MediaError(f"cannot parse the PDF ({type(e).__name__}: {e})") from None


def pdf_page_text(reader, page: int) -> str:
    try:
        text = reader.pages[page - 1].extract_text() or ""
    except Exception as e:
        return f"(text extraction failed on this page: {type(e).__name__})"
    text = text.strip()
    return text or "(no extractable text on this page; it may be a scanned image)"
