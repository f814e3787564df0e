"""Settings checked without pydantic, when a plain check can settle them.

Building the pydantic settings model costs a `codebelt call` more than the rest of the call (the
import of pydantic and the first models, ~100 ms of CPU). Most calls need none of it: no settings
file at all, or files that hold only plain values (rules, modes, limits, switches). For those,
`check(data)` reads the data against `plain_schema.py` — the fields, types, bounds and defaults of
`schema.SettingsModel`, written out as data by `python -m codebelt.settings.plain --write` — and
returns the same values pydantic would, as `Section` objects with the models' attribute names.

Anything it does not model (hooks, language servers, the network object, domain lists, a key it
does not know, a value of the wrong type or out of bounds) makes it answer None: pydantic then
checks the data, and words any error, exactly as before. So it never accepts what pydantic
refuses, and an error is always pydantic's. `tests/core/test_plain_settings.py` holds the two to
that, field by field and value by value, and fails when `plain_schema.py` is not what the schema
generates now; and when schema.py changed since it was generated (its checksum), the plain check
is not used at all.
"""

from __future__ import annotations

import copy
import math
import zlib
from pathlib import Path
from typing import Any, Iterator

from .plain_schema import FIELDS, SCHEMA_CRC

_SCHEMA_FILE = Path(__file__).with_name("schema.py")
_usable: bool | None = None


def usable() -> bool:
    """Whether plain_schema.py was generated from schema.py as it is (checked once)."""
    global _usable
    if _usable is None:
        try:
            _usable = zlib.crc32(_SCHEMA_FILE.read_bytes()) == SCHEMA_CRC
        except OSError:
            _usable = False
    return _usable


class Section:
    """A settings section's values, read-only, by the schema's attribute names
    (`settings.bash.default_timeout_ms`), as the pydantic section model would hold them."""

    __slots__ = ("_values", "_aliases")

    def __init__(self, values: dict[str, Any], aliases: dict[str, str]) -> None:
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_aliases", aliases)  # JSON key -> attribute name

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("settings are read-only")

    def by_key(self, key: str, missing: Any) -> Any:
        """A value by its JSON key (`defaultTimeoutMs`)."""
        name = self._aliases.get(key)
        return missing if name is None else self._values[name]

    def dump(self) -> dict[str, Any]:
        """{attribute: value}, sections as dicts (as pydantic's `model_dump()`)."""
        return {k: v.dump() if isinstance(v, Section) else copy.deepcopy(v) for k, v in self._values.items()}

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self._values.items())

    def __repr__(self) -> str:
        return f"Section({self._values!r})"


def check(data: Any) -> Section | None:
    """The settings `data` (one file, or merged) as pydantic would read them, by JSON keys alone
    and strictly; None when a plain check cannot settle them (then pydantic must)."""
    if not usable() or type(data) is not dict:
        return None
    return _section(data, FIELDS)


def _section(data: dict[str, Any], fields: dict[str, Any]) -> Section | None:
    for key in data:
        if key not in fields:
            return None
    values: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    for key, (attr, kind, default) in fields.items():
        aliases[key] = attr
        if kind[0] == "section":
            given = data.get(key, {})
            if type(given) is not dict:
                return None
            inner = _section(given, kind[1])
            if inner is None:
                return None
            values[attr] = inner
        elif key in data:
            # a value of its own check; for a field it does not model, only its default (the merged
            # settings always hold `hooks: {}`), which pydantic takes as it is
            given = data[key]
            ok, value = _value(kind, given) if kind[0] != "other" else (
                type(given) is type(default) and given == default, copy.deepcopy(default))
            if not ok:
                return None
            values[attr] = value
        else:
            values[attr] = copy.deepcopy(default)
    return Section(values, aliases)


def _value(kind: tuple, value: Any) -> tuple[bool, Any]:
    """(whether pydantic's strict check of `kind` surely accepts `value`, the value it gives)."""
    name = kind[0]
    if name in ("bool", "int", "float", "str", "literal") and value is None:
        return kind[1], None
    if name == "bool":
        return type(value) is bool, value
    if name == "str":
        return type(value) is str, value
    if name == "literal":
        return type(value) is str and value in kind[2], value
    if name in ("int", "float"):
        if name == "int" and type(value) is not int:
            return False, None
        if name == "float":
            if type(value) not in (int, float) or not math.isfinite(value):
                return False, None
            value = float(value)
        ge, gt, le, lt = kind[2:]
        inside = ((ge is None or value >= ge) and (gt is None or value > gt)
                  and (le is None or value <= le) and (lt is None or value < lt))
        return inside, value
    if name == "globs" and type(value) is str:  # one glob for a list of one
        return True, [value]
    if name in ("strlist", "globs"):
        return type(value) is list and all(type(v) is str for v in value), list(value) if type(value) is list else None
    return False, None  # "other": pydantic's


# -- generating plain_schema.py from the pydantic schema ------------------------------------------
def generate() -> tuple[dict[str, Any], int]:
    """(FIELDS, SCHEMA_CRC) as the schema defines them now (imports pydantic)."""
    from .schema import SettingsModel

    return _fields_of(SettingsModel, SettingsModel()), zlib.crc32(_SCHEMA_FILE.read_bytes())


def _fields_of(model: Any, instance: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    validated = model.__pydantic_decorators__.field_validators
    checked = {f for dec in validated.values() for f in dec.info.fields}
    for attr, info in model.model_fields.items():
        key = info.alias or attr
        default = getattr(instance, attr)
        section = _section_model(info.annotation)
        if section is not None and not info.metadata and attr not in checked:
            if section.__pydantic_decorators__.model_validators:
                out[key] = (attr, ("other",), default.model_dump())
            else:
                out[key] = (attr, ("section", _fields_of(section, default)), None)
            continue
        kind = ("other",) if attr in checked else _kind(info)
        out[key] = (attr, kind, _plain_default(default))
    return out


def _plain_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


def _section_model(annotation: Any) -> Any:
    from pydantic import BaseModel

    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _kind(info: Any) -> tuple:
    """The plain check of a field (see `_value`), or ("other",) when it has none."""
    import types
    import typing

    import annotated_types
    from pydantic.functional_validators import BeforeValidator

    from .schema import _str_list

    bounds = {"ge": None, "gt": None, "le": None, "lt": None}
    before = False
    for m in info.metadata:
        if isinstance(m, (annotated_types.Ge, annotated_types.Gt, annotated_types.Le, annotated_types.Lt)):
            name = type(m).__name__.lower()
            bounds[name] = getattr(m, name)
        elif isinstance(m, BeforeValidator) and m.func is _str_list:
            before = True
        else:
            return ("other",)
    annotation = info.annotation
    options = list(typing.get_args(annotation)) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else [annotation]
    nullable = type(None) in options
    rest = [o for o in options if o is not type(None)]
    if len(rest) != 1:
        return ("other",)
    tp = rest[0]
    if before:
        return ("globs",) if tp == list[str] and not nullable else ("other",)
    if tp == list[str] and not nullable:
        return ("strlist",)
    if typing.get_origin(tp) is typing.Literal and all(type(a) is str for a in typing.get_args(tp)):
        return ("literal", nullable, tuple(typing.get_args(tp)))
    if tp in (int, float):
        return (tp.__name__, nullable, bounds["ge"], bounds["gt"], bounds["le"], bounds["lt"])
    if any(v is not None for v in bounds.values()):
        return ("other",)
    if tp in (bool, str):
        return (tp.__name__, nullable)
    return ("other",)


def render() -> str:
    """plain_schema.py's text, from the schema as it is now."""
    import pprint

    fields, crc = generate()
    return ('"""The settings schema as data, for `plain.py`: generated from schema.py by\n'
            '`python -m codebelt.settings.plain --write`; do not edit. {JSON key: (attribute, check, default)}."""\n\n'
            f"SCHEMA_CRC = {crc}\n\n"
            f"FIELDS = {pprint.pformat(fields, width=118, sort_dicts=False)}\n")


if __name__ == "__main__":  # pragma: no cover
    import sys

    target = Path(__file__).with_name("plain_schema.py")
    if sys.argv[1:] == ["--write"]:
        target.write_text(render())
        print(f"wrote {target}")
    else:
        sys.stdout.write(render())
