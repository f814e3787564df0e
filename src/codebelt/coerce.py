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
from typing import TYPE_CHECKING, Any, Literal

from .texts import Texts
from .tool import REQUIRED, DeclaredInput

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

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
        if _is_model(annotation):
            return {dict}
        return {annotation}
    return set()


def _is_model(annotation: type) -> bool:
    """A pydantic model (an object), without importing pydantic when nothing did yet. Looked up
    with a default: another thread of the session (its background start) may be importing
    pydantic right now, and a module being imported has no `BaseModel` yet — nor can a model
    class exist before it does."""
    import sys

    base = getattr(sys.modules.get("pydantic.main"), "BaseModel", None)
    return base is not None and issubclass(annotation, base)


def _fields(model: Any) -> dict[str, tuple[str, Any, bool]]:
    """{name or alias: (name, annotation, required)} of a pydantic model or a tool's
    `DeclaredModel` (read from its declaration: the model is not built)."""
    declared = getattr(model, "declared_fields", None)
    if declared is not None:
        table = {}
        for name, (tp, param) in declared().items():
            table[name] = (name, tp, param.required)
            alias = param.kwargs.get("alias")
            if alias:
                table[alias] = (name, tp, param.required)
        return table
    table = {}
    for name, f in model.model_fields.items():
        table[name] = table[f.alias or name] = (name, f.annotation, f.is_required())
    return table


def coerce_input(model: Any, data: dict[str, Any]) -> dict[str, Any]:
    fields = _fields(model)
    out: dict[str, Any] = {}
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            out[key] = value
            continue
        _, annotation, required = field
        kinds = _kinds(annotation)
        if value is None and not required:
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


# Param arguments that only word the schema: nothing pydantic checks a value against.
_SCHEMA_ONLY = frozenset({"description", "json_schema_extra", "title", "examples"})
_SCALARS = (str, int, float, bool)
_plain_checks_cache: dict[type, dict[str, tuple[Any, Any]] | None] = {}


def _plain_check(annotation: Any) -> Any:
    """A predicate equal to pydantic's strict check of a value for `annotation`, or None when the
    annotation is not one modelled here: str, int, float, bool, a Literal of strings, each
    optionally `| None`. Only the exact JSON types pass (a str subclass, a bool for an int, an int
    for a float are left to pydantic)."""
    options: list[Any] = [annotation]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = list(typing.get_args(annotation))
    nullable = type(None) in options
    rest = [o for o in options if o is not type(None)]
    if len(rest) != 1:
        return None
    kind = rest[0]
    if typing.get_origin(kind) is Literal:
        allowed = typing.get_args(kind)
        if not all(type(a) is str for a in allowed):
            return None
        return lambda v: (v is None and nullable) or (type(v) is str and v in allowed)
    if kind not in _SCALARS:
        return None
    if kind is float:
        return lambda v: (v is None and nullable) or (type(v) is float and math.isfinite(v))
    return lambda v: (v is None and nullable) or type(v) is kind


def _plain_checks(declared: Any) -> dict[str, tuple[Any, Any]] | None:
    """{field: (default, check)} of a declared model whose every field has a plain check and no
    argument that constrains its value; None otherwise (then pydantic validates)."""
    if declared in _plain_checks_cache:
        return _plain_checks_cache[declared]
    checks: dict[str, tuple[Any, Any]] | None = {}
    for name, (tp, param) in declared.declared_fields().items():
        check = _plain_check(tp)
        if (check is None or set(param.kwargs) - _SCHEMA_ONLY
                or not (param.default is REQUIRED or param.default is None or type(param.default) in _SCALARS)):
            checks = None
            break
        checks[name] = (param.default, check)
    _plain_checks_cache[declared] = checks
    return checks


def plain_params(model: Any, data: dict[str, Any]) -> Any:
    """The params of a tool's `DeclaredInput` for `data` (already coerced) when a plain check
    settles them, without building the pydantic model; None when it cannot (a pydantic model, a
    field or value it does not model, anything invalid): pydantic then validates and words the
    error. What it accepts, pydantic accepts with the same values (tests/core/test_plain_params.py
    holds the two to that, case by case)."""
    if not (isinstance(model, type) and issubclass(model, DeclaredInput)):
        return None
    checks = _plain_checks(model)
    if checks is None:
        return None
    values: dict[str, Any] = {}
    for key, value in data.items():
        entry = checks.get(key) if type(key) is str else None
        if entry is None or not entry[1](value):
            return None
        values[key] = value
    for name, (default, _) in checks.items():
        if name not in values:
            if default is REQUIRED:
                return None
            values[name] = default
    return model(**values)


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
