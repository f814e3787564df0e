"""Semantic coercion: models send "3" for 3, "true" for True and JSON text for arrays.

Pydantic's lax mode already turns "3" into 3 and "true" into True; this adds what it does not:
"3.0" for an integer, a JSON string where a list or object is expected, and null for an
optional field. Then validation errors are turned into one sentence naming the bad fields.
"""

from __future__ import annotations

import json
import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

_FLOAT_INT = re.compile(r"^\s*[-+]?\d+(?:\.0*)?\s*$")


def _kinds(annotation: Any) -> set[type]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        out: set[type] = set()
        for a in typing.get_args(annotation):
            out |= _kinds(a)
        return out
    if origin is typing.Annotated:
        return _kinds(typing.get_args(annotation)[0])
    if origin in (list, tuple, set, frozenset):
        return {list}
    if origin is dict:
        return {dict}
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return {dict}
        return {annotation}
    return set()


def coerce_input(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    fields = model.model_fields
    by_alias = {(f.alias or name): name for name, f in fields.items()}
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = by_alias.get(key, key)
        field = fields.get(name)
        if field is None:
            out[key] = value
            continue
        kinds = _kinds(field.annotation)
        if value is None and type(None) in kinds | ({type(None)} if not field.is_required() else set()):
            continue  # null for an optional field: use its default
        if isinstance(value, str):
            if (list in kinds or dict in kinds) and str not in kinds and value.strip()[:1] in "[{":
                try:
                    value = json.loads(value)
                except json.JSONDecodeError:
                    pass
            elif int in kinds and float not in kinds and str not in kinds and _FLOAT_INT.match(value):
                value = int(float(value))
        elif isinstance(value, float) and int in kinds and float not in kinds and value.is_integer():
            value = int(value)
        out[key] = value
    return out


def describe_validation_error(tool: str, error: ValidationError) -> str:
    problems = []
    for e in error.errors()[:6]:
        loc = ".".join(str(p) for p in e["loc"]) or "input"
        kind = e["type"]
        if kind == "missing":
            problems.append(f"`{loc}` is required but missing")
        elif kind == "extra_forbidden":
            problems.append(f"`{loc}` is not a parameter of {tool}")
        else:
            got = e.get("input")
            shown = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
            if len(shown) > 60:
                shown = shown[:60] + "…"
            problems.append(f"`{loc}`: {e['msg']} (got {shown})")
    more = len(error.errors()) - len(problems)
    tail = f" and {more} more" if more > 0 else ""
    return f"Invalid input for {tool}: " + "; ".join(problems) + tail + ". Fix the parameters and call again."
