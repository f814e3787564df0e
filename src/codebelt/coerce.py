"""Input coercion and validation messages, as Claude Code does them.

Models send "3" for 3, "true" for true and JSON text for arrays. Tool inputs validate strictly
(`ToolInput` is strict), after this coercion, which accepts what Claude Code accepts and no
more: a numeric string for a number, "true"/"false" for a boolean, an integral float for an
integer, JSON text where a list or object is expected — and null for an optional field, taken
as "not given" (OpenAI's strict function calling sends null for every optional field). "yes"
for a boolean or "abc" for a number stay as they are and fail validation.

Validation errors are worded as Claude Code's InputValidationError (texts of the compat
profile): unexpected parameters first, then missing and mistyped ones, then other problems, each
group in the schema's order.
"""

from __future__ import annotations

import json
import math
import re
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from .texts import Texts

_NUMBER = re.compile(r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$")


def _kinds(annotation: Any) -> set[Any]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        out: set[Any] = set()
        for a in typing.get_args(annotation):
            out |= _kinds(a)
        return out
    if origin is typing.Annotated:
        return _kinds(typing.get_args(annotation)[0])
    if origin is Literal:
        return {str}
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
        if value is None and not field.is_required():
            continue  # null for an optional field: not given
        if isinstance(value, str) and str not in kinds:
            text = value.strip()
            if (list in kinds or dict in kinds) and text[:1] in "[{":
                try:
                    value = json.loads(text)
                except json.JSONDecodeError:
                    pass
            elif bool in kinds and text.lower() in ("true", "false"):
                value = text.lower() == "true"
            elif (int in kinds or float in kinds) and _NUMBER.match(text):
                number = float(text)
                if float in kinds:
                    value = number
                elif math.isfinite(number) and number.is_integer():
                    value = int(number)
        elif isinstance(value, float) and int in kinds and float not in kinds and value.is_integer():
            value = int(value)
        elif isinstance(value, int) and not isinstance(value, bool) and float in kinds and int not in kinds:
            value = float(value)
        out[key] = value
    return out


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object"


def _expected(annotation: Any, given: Any) -> str:
    kinds = _kinds(annotation) - {type(None)}
    if int in kinds and float not in kinds and isinstance(given, float):
        return "int"
    for kind, name in ((bool, "boolean"), (int, "number"), (float, "number"), (str, "string"),
                       (list, "array"), (dict, "object")):
        if kind in kinds:
            return name
    return "unknown"


_TYPE_ERRORS = {"string_type", "int_type", "float_type", "bool_type", "list_type", "dict_type", "model_type",
                "int_parsing", "float_parsing", "bool_parsing", "int_from_float", "model_attributes_type",
                "dict_attributes_type", "is_instance_of"}


def describe_validation_error(tool: str, error: ValidationError, texts: Texts,
                              model: type[BaseModel] | None = None) -> str:
    """Claude Code's InputValidationError text for `error` (see the profile's common.* texts)."""
    order: dict[str, int] = {}
    if model is not None:
        for i, (name, f) in enumerate(model.model_fields.items()):
            order[f.alias or name] = order[name] = i
    issues: list[tuple[int, int, str, dict[str, Any]]] = []
    for e in error.errors():
        loc = [str(p) for p in e["loc"]]
        name = ".".join(loc) or "input"
        top = loc[0] if loc else ""
        kind = e["type"]
        field = model.model_fields.get(top) if model is not None else None
        if field is None and model is not None:
            field = next((f for f in model.model_fields.values() if f.alias == top), None)
        pos = order.get(top, len(order))
        if kind == "extra_forbidden":
            issues.append((0, pos, texts("common.issue_unexpected", name=name), {}))
        elif kind == "missing":
            issues.append((1, pos, texts("common.issue_missing", name=name), {}))
        elif kind in _TYPE_ERRORS and field is not None and len(loc) == 1:
            given = e.get("input")
            issues.append((1, pos, texts("common.issue_type", name=name, expected=_expected(field.annotation, given),
                                         given=_json_type(given)), {}))
        elif kind in _TYPE_ERRORS:  # inside a list or object: the item's own type
            given = e.get("input")
            expected = {"string_type": "string", "bool_type": "boolean", "list_type": "array",
                        "dict_type": "object", "model_type": "object"}.get(kind, "number")
            issues.append((1, pos, texts("common.issue_type", name=name, expected=expected,
                                         given=_json_type(given)), {}))
        elif kind == "literal_error":
            options = list(e.get("ctx", {}).get("expected", "").replace("'", "").split(" or "))
            options = [o.strip() for part in options for o in part.split(",") if o.strip()]
            message = texts("common.issue_enum", options="|".join(f'"{o}"' for o in options))
            raw = {"code": "invalid_value", "values": options, "path": loc, "message": message}
            issues.append((2, pos, texts("common.issue_other", name=name, message=message), raw))
        else:
            message = e.get("msg", "invalid")
            message = message.removeprefix("Value error, ")
            raw = {"code": "custom", "path": loc, "message": message}
            issues.append((2, pos, texts("common.issue_other", name=name, message=message), raw))
    issues.sort(key=lambda i: (i[0], i[1]))
    if len(issues) == 1 and issues[0][0] == 2:
        # Claude Code words no sentence of its own for these: it shows the validator's issue list
        return texts("common.invalid_raw", issues=json.dumps([issues[0][3]], indent=2, ensure_ascii=False))
    key = "common.invalid_one" if len(issues) == 1 else "common.invalid_many"
    return texts(key, tool=tool, issues="\n".join(i[2] for i in issues))
