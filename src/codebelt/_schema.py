"""JSON Schema clean-up for tool definitions: inline $defs, drop pydantic's titles."""

from __future__ import annotations

from typing import Any


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs[ref.split("/")[-1]]
            merged = {**_inline(target, defs), **{k: v for k, v in node.items() if k != "$ref"}}
            return _inline(merged, defs)
        out = {}
        for k, v in node.items():
            if k in ("title", "$defs"):
                continue  # schema keywords only: property names are handled below
            if k == "properties" and isinstance(v, dict):
                out[k] = {name: _inline(prop, defs) for name, prop in v.items()}
            else:
                out[k] = _inline(v, defs)
        return out
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A self-contained schema (no $ref), as model APIs and MCP clients expect."""
    defs = schema.get("$defs", {})
    out = _inline(schema, defs)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out
