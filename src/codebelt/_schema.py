"""JSON Schemas for tool definitions, shaped as Claude Code declares its tools: self-contained
(no $ref), no titles, an optional parameter as its plain type left out of `required` (not
`anyOf [T, null]`), unknown parameters refused, draft 2020-12."""

from __future__ import annotations

from typing import Any

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _inline(node: Any, defs: dict[str, Any], plain: bool = True) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs[ref.split("/")[-1]]
            merged = {**_inline(target, defs), **{k: v for k, v in node.items() if k != "$ref"}}
            return _inline(merged, defs, plain)
        out = {}
        for k, v in node.items():
            if k in ("title", "$defs"):
                continue  # schema keywords only: property names are handled below
            if k == "properties" and isinstance(v, dict):
                out[k] = {name: _inline(prop, defs, plain) for name, prop in v.items()}
                if plain:
                    out[k] = {name: _optional_plain(prop) for name, prop in out[k].items()}
            else:
                out[k] = _inline(v, defs, plain)
        return out
    if isinstance(node, list):
        return [_inline(v, defs, plain) for v in node]
    return node


def _optional_plain(prop: Any) -> Any:
    """`anyOf [T, null]` with default null → T (being optional is said by `required`)."""
    if not isinstance(prop, dict):
        return prop
    variants = prop.get("anyOf")
    if isinstance(variants, list) and {"type": "null"} in variants:
        rest = [v for v in variants if v != {"type": "null"}]
        prop = {k: v for k, v in prop.items() if k != "anyOf"}
        if len(rest) == 1:
            prop = {**prop, **rest[0]} if "type" not in prop else {**rest[0], **prop}
        else:
            prop["anyOf"] = rest
    if "default" in prop and prop["default"] is None:
        prop = {k: v for k, v in prop.items() if k != "default"}
    return prop


def clean_schema(schema: dict[str, Any], *, output: bool = False) -> dict[str, Any]:
    """A self-contained schema (no $ref), as model APIs and MCP clients expect. An input schema
    is shaped as Claude Code declares its tools; an output schema (`output=True`) keeps null
    where a result field may be null."""
    defs = schema.get("$defs", {})
    body = _inline(schema, defs, plain=not output)
    if output:
        body.setdefault("type", "object")
        body.setdefault("properties", {})
        return body
    out: dict[str, Any] = {"$schema": DRAFT, "type": "object", "properties": {}}
    out.update({k: v for k, v in body.items() if k != "type"})
    out.setdefault("additionalProperties", False)
    return out
