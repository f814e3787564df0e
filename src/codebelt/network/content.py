"""A fetched body as text for a model: HTML to Markdown (markdownify on BeautifulSoup, MIT), other
text as it is, binary content described rather than shown."""

from __future__ import annotations

from urllib.parse import urljoin

TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/x-javascript",
              "application/ld+json", "application/x-yaml", "application/yaml", "application/toml")
HTML_TYPES = ("text/html", "application/xhtml+xml")
# HTML converted at most: parsing and converting take seconds per MB on a busy machine, and a
# page's first 2 MB give far more Markdown than a result shows (the rest is saved to a file).
MAX_HTML = 2 << 20
# Elements whose text is no part of what a page says.
DROPPED = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "head")


def decode(body: bytes, charset: str | None) -> str:
    if charset:
        try:
            return body.decode(charset, errors="replace")
        except LookupError:
            pass
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        from charset_normalizer import from_bytes

        best = from_bytes(body[:200_000]).best()
        return body.decode(best.encoding if best else "latin-1", errors="replace")


def is_text(content_type: str) -> bool:
    return (not content_type or content_type.startswith("text/") or content_type in TEXT_TYPES
            or content_type.endswith("+json") or content_type.endswith("+xml"))


def html_to_markdown(html: str, base_url: str) -> tuple[str, str | None]:
    """(Markdown, the page's title). Links are made absolute against `base_url`."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else None
    for tag in soup.find_all(DROPPED):
        tag.decompose()
    for tag in soup.find_all(["a", "img"]):
        attr = "href" if tag.name == "a" else "src"
        value = tag.get(attr)
        if isinstance(value, str) and value and not value.startswith(("#", "data:", "javascript:")):
            tag[attr] = urljoin(base_url, value)
    try:
        markdown = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    except RecursionError:
        # the converter recurses once per level; html.parser leaves unclosed tags (20,000 `<p>`)
        # nested, deeper than Python's stack: the text alone, in order, is still the page
        markdown = soup.get_text("\n")
    lines = [line.rstrip() for line in markdown.splitlines()]
    out: list[str] = []
    for line in lines:  # at most one blank line in a row
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip(), title


def page_text(body: bytes, content_type: str, charset: str | None, url: str) -> tuple[str | None, str | None, bool]:
    """(text for the model, title, whether only the first MAX_HTML of the HTML was converted) —
    text None for binary content."""
    if content_type in HTML_TYPES or (not content_type and body.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html"))):
        html = decode(body, charset)
        cut = len(html) > MAX_HTML
        markdown, title = html_to_markdown(html[:MAX_HTML], url)
        return markdown, title, cut
    if is_text(content_type):
        return decode(body, charset), None, False
    return None, None, False
