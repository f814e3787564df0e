"""view_image (Codex's profile): a local image, attached for the model to look at, as Codex
does — PNG, JPEG and WebP as they are (Codex keeps the original resolution), other formats
converted to PNG — with Codex's texts for what cannot be shown."""

from __future__ import annotations

import base64
import io
from typing import Any


from ..errors import PathError
from ..permissions.requests import PathRequest
from ..tool import Image, ToolContext, ToolError, ToolResult
from ._codex import CodexTool, CodexInput, codex_texts
from ._services import shell_cwd

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "description": "Local filesystem path to an image file."}},
    "required": ["path"],
    "additionalProperties": False,
}
MAX_BYTES = 64 << 20
MAX_PIXELS = 50_000_000
KEPT = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


class ViewImageInput(CodexInput):
    path: str


class ViewImage(CodexTool):
    name = "view_image"
    description = codex_texts().description("view_image")
    Input = ViewImageInput
    read_only = True
    concurrency_safe = True
    permission_family = "read"
    search_hint = "look at an image file"
    schema = SCHEMA
    rules_as = "Read"

    def hook_view(self, raw: dict[str, Any]) -> tuple[str, dict[str, Any], tuple[str, ...]]:
        # Reading a file, as Read does: a hook written for Read finds the path in `file_path`.
        return "view_image", {**raw, "file_path": raw.get("path", "")}, ("Read",)

    def from_hook_input(self, updated: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
        path = updated.get("file_path", updated.get("path", raw.get("path")))
        return {**raw, "path": path}

    def _path(self, params: ViewImageInput, ctx: ToolContext):
        base, _ = ctx.service(shell_cwd).current(consume=False)
        return ctx.resolve(params.path, base)

    def permission_requests(self, params: ViewImageInput, ctx: ToolContext) -> list:
        try:
            return [PathRequest("read", self._path(params, ctx))]
        except PathError:
            return []

    def run(self, params: ViewImageInput, ctx: ToolContext) -> ToolResult:
        from PIL import Image as PILImage

        texts = codex_texts(ctx)
        path = self._path(params, ctx)
        if not path.exists():
            raise ToolError(texts("view_image.not_found", path=params.path))
        if not path.is_file():
            raise ToolError(texts("view_image.not_a_file", path=params.path))
        if path.stat().st_size > MAX_BYTES:
            raise ToolError(texts("view_image.too_large", mb=MAX_BYTES >> 20))
        data = path.read_bytes()
        try:
            with PILImage.open(io.BytesIO(data)) as img:
                fmt = img.format or ""
                if img.width * img.height > MAX_PIXELS:
                    raise ToolError(texts("view_image.too_many_pixels", width=img.width, height=img.height,
                                          limit=MAX_PIXELS))
                if fmt in KEPT:
                    mime = KEPT[fmt]
                else:  # GIF, BMP, TIFF …: its first frame as PNG
                    out = io.BytesIO()
                    img.convert("RGBA").save(out, "PNG")
                    data, mime = out.getvalue(), "image/png"
        except ToolError:
            raise
        except Exception:  # noqa: BLE001 - whatever the decoder says, the file is not an image it reads
            raise ToolError(texts("view_image.invalid")) from None
        # Codex shows the image at its original resolution
        return ToolResult(text="", images=[Image(base64.b64encode(data).decode("ascii"), mime, "original")],
                          data={"path": str(path), "mime_type": mime})
