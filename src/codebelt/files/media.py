"""Images and PDFs for Read. Pillow and pypdf are imported inside the functions that need them,
so reading a text file never loads them.
"""

from __future__ import annotations

import base64
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
# Decoding is bounded by these, whatever a file declares: at most this many pixels decoded
# (4 bytes each: 200 MB), and files up to this size read at all.
MAX_DECODE_PIXELS = 50_000_000
MAX_IMAGE_FILE_BYTES = 64 * 1024 * 1024

MAX_PDF_PAGES_PER_CALL = 20
PDF_PAGES_WITHOUT_RANGE = 10


def sniff_image(head: bytes) -> str | None:
    """The image type the first bytes say (png, jpeg, gif, webp), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


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
    source: Any, mime_type: str, max_edge: int = MAX_IMAGE_EDGE, max_pixels: int = MAX_IMAGE_PIXELS,
    max_decode_pixels: int = MAX_DECODE_PIXELS,
) -> LoadedImage:
    """The image as base64, downscaled (Pillow) when over the pixel or byte budget. `source`: an
    open file (`files.beneath.Opened`, read through its descriptor) or a path.

    Bounded whatever the file holds: only the PNG, JPEG, GIF and WebP decoders are reached, the
    one its first bytes name (a `.png` that is really a TIFF or a PSD is refused, never handed to
    another of Pillow's decoders; a JPEG named `.png` is shown as the JPEG it is); the size comes
    from the header, before any pixel is decoded; JPEGs are decoded at 1/2 to 1/8 scale when that is
    enough (DCT scaling); anything that would still decode to more than `max_decode_pixels`
    (a 100 KB PNG can declare 19,000 x 19,000 pixels: 1.4 GB) is refused; only the first frame
    of an animation is decoded."""
    opened = hasattr(source, "fd")
    size = source.st.st_size if opened else source.stat().st_size
    if size <= MAX_IMAGE_FILE_BYTES:
        # (an open file is read only up to the cap, in case it grew since it was opened)
        raw = source.read_bytes(MAX_IMAGE_FILE_BYTES + 1) if opened else source.read_bytes()
        size = len(raw)
    if size > MAX_IMAGE_FILE_BYTES:
        raise MediaError(
            f"the file is {size / 2**20:,.0f} MB; Read shows images up to {MAX_IMAGE_FILE_BYTES // 2**20} MB. "
            "Make a smaller copy with an image tool and read that")
    sniffed = _sniff(raw)
    if sniffed is None:
        raise MediaError("cannot decode the image: its content is not a PNG, JPEG, GIF or WebP image")
    mime_type = sniffed
    try:
        from PIL import Image as PILImage

        # The format's own plugin, not Image.open: no other decoder is tried, and the size is
        # judged below against our cap (after JPEG's scaled decode), not Pillow's global one.
        im = _opener(mime_type)(io.BytesIO(raw))
        with im:
            w, h = im.size
            target = fit(w, h, max_edge, max_pixels)
            if target == (w, h) and len(raw) <= MAX_IMAGE_BYTES:
                return LoadedImage(base64.b64encode(raw).decode("ascii"), mime_type, w, h, w, h, len(raw))
            decoded = w * h
            if im.format in ("JPEG", "MPO"):
                im.draft("RGB", target)  # decode at the smallest DCT scale still >= the target
                if not _jpeg_has_several_scans(raw):
                    # (A progressive or multi-scan JPEG is buffered whole by libjpeg, as DCT
                    # coefficients, whatever the scale: it is judged at full size.)
                    decoded = im.size[0] * im.size[1]
            if decoded > max_decode_pixels:
                raise MediaError(
                    f"the image is {w:,} x {h:,} pixels ({w * h / 1e6:,.0f} MP); Read decodes at most "
                    f"{max_decode_pixels / 1e6:,.0f} MP (a small file can declare a huge picture, a "
                    "decompression bomb). Downscale it with an image tool first")
            im.seek(0)
            frame = im.convert("RGBA" if im.mode in ("RGBA", "LA", "P", "PA") else "RGB")
            frame = frame.resize(target, PILImage.Resampling.LANCZOS, reducing_gap=3.0)
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
        raise MediaError(f"cannot decode the image ({type(e).__name__}: {e})") from None


def _jpeg_has_several_scans(raw: bytes) -> bool:
    """Whether a JPEG's first image has more than one scan (progressive, or non-interleaved
    baseline): libjpeg then keeps every DCT coefficient of the whole picture in memory. The
    segments before the first scan are skipped by their lengths (an EXIF thumbnail is a whole
    JPEG inside APP1); after it, 0xFF in entropy-coded data is stuffed, so a marker is a marker."""
    i, n = 2, len(raw)
    while i + 4 <= n:
        if raw[i] != 0xFF:
            return True  # not the layout we expect: be careful
        marker = raw[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xC2, 0xC6, 0xCA, 0xCE):  # SOF of a progressive process
            return True
        length = int.from_bytes(raw[i + 2:i + 4], "big")
        if marker == 0xDA:  # the first scan: look for a second one
            j = i + 2 + length
            while True:
                j = raw.find(b"\xff", j)
                if j < 0 or j + 1 >= n:
                    return False
                nxt = raw[j + 1]
                if nxt == 0xDA:
                    return True
                if nxt == 0xD9:  # end of image
                    return False
                j += 1
        i += 2 + length
    return True


def _sniff(raw: bytes) -> str | None:
    """The image type the content is, by its magic bytes: PNG, JPEG, GIF or WebP, else None."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return None


def _opener(mime_type: str):
    from PIL import GifImagePlugin, JpegImagePlugin, PngImagePlugin, WebPImagePlugin

    return {
        "image/png": PngImagePlugin.PngImageFile,
        "image/jpeg": JpegImagePlugin.jpeg_factory,  # JPEG, or MPO (multi-picture, from cameras)
        "image/gif": GifImagePlugin.GifImageFile,
        "image/webp": WebPImagePlugin.WebPImageFile,
    }[mime_type]


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
                if len(pages) > MAX_PDF_PAGES_PER_CALL:  # before "1-1000000" is listed whole
                    raise MediaError(
                        f"more than {MAX_PDF_PAGES_PER_CALL} pages requested; at most "
                        f"{MAX_PDF_PAGES_PER_CALL} pages per call. Ask for a smaller range."
                    )
    return pages
