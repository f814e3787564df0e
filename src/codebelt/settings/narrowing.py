"""How a workspace's own settings files may change a setting.

A repository's files (`.codebelt/settings*.json`, the parts of `.claude/settings*.json` codebelt
reads) may only narrow what the user's settings allow, unless the user trusts the workspace. Each
field of the schema says how with `setting(..., workspace=KIND)`:

- RULES  ask / deny rule lists: added to the user's (and an ask never turns a deny into a
         question: see `PermissionEngine.decide`).
- LOWER  a limit: lowered, never raised above the value below it (the user's, or the default).
         `unlimited` names the value meaning "no limit" (the highest), `fallback` the key whose
         value applies while this one is unset.
- OFF    a switch that can be turned off, never on.
- ORDER  one of values ordered narrowest first (the permission modes).
- ADD    a list of exclusions: the workspace's entries are added to the user's.
- ANY    behaviour that grants nothing either way.
- NEVER  not even from a trusted workspace (whether a workspace is trusted).
- CUSTOM a value with its own rule, `custom(value, base) -> (taken, why-not-all-taken | None)`
         (`sandbox.network`: names are narrowed by what both lists allow).

A field without one (allow rules, extra directories, program paths, the sandbox, hooks, caches,
language servers) is the user's: from an untrusted workspace it is ignored, with a warning that
says how to trust the workspace. A new setting is therefore the user's until someone decides how
a workspace may narrow it. Sections need no marker: a section is in the workspace's type when one
of its fields is.

`workspace_model(SettingsModel)` derives, from these markers, the narrower pydantic type a
workspace file is read into.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

_KINDS = ("rules", "lower", "off", "order", "add", "any", "never", "custom")


@dataclass(frozen=True)
class Narrowing:
    """How a workspace's files may set one field. Also the field's `json_schema_extra`: the
    published JSON Schema says, as `x-workspace`, what a workspace may do with each key."""

    kind: str
    unlimited: int | None = None
    fallback: str | None = None
    order: tuple[str, ...] = ()
    custom: Callable[[Any, Any], tuple[Any, str | None]] | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown narrowing kind {self.kind!r}")

    def __call__(self, schema: dict[str, Any]) -> None:
        schema["x-workspace"] = self.kind
        if self.order:
            schema["x-workspace-order"] = list(self.order)
        if self.unlimited is not None:
            schema["x-workspace-unlimited"] = self.unlimited

    def narrow(self, value: Any, base: Any) -> tuple[Any, bool]:
        """The value an untrusted workspace's `value` amounts to over `base` (the value below it),
        and whether the workspace asked for more than that."""
        if self.kind == "lower":
            if base is None:
                return value, False
            if self._rank(value) <= self._rank(base):
                return value, False
            return base, True
        if self.kind == "off":
            return (value and base), bool(value and not base)
        if self.kind == "order":
            if self.order.index(value) <= self.order.index(base):
                return value, False
            return base, True
        if self.kind == "add":
            return [*base, *(v for v in value if v not in base)], False
        if self.kind == "custom" and self.custom is not None:
            taken, why = self.custom(value, base)
            return taken, why is not None
        return value, False  # rules, any

    def _rank(self, value: int) -> float:
        return float("inf") if value == self.unlimited else value


RULES = Narrowing("rules")
LOWER = Narrowing("lower")
LOWER_OR_0 = Narrowing("lower", unlimited=0)  # 0 means "no limit"
OFF = Narrowing("off")
ADD = Narrowing("add")
ANY = Narrowing("any")
NEVER = Narrowing("never")


def narrowing_of(info: FieldInfo) -> Narrowing | None:
    extra = info.json_schema_extra
    return extra if isinstance(extra, Narrowing) else None


def section_of(info: FieldInfo) -> type[BaseModel] | None:
    """The model of a field that is a settings section, else None."""
    ann = info.annotation
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def field_by_alias(model: type[BaseModel], key: str) -> tuple[str, FieldInfo] | None:
    for name, info in model.model_fields.items():
        if (info.alias or name) == key:
            return name, info
    return None


_WORKSPACE_CONFIG = ConfigDict(extra="forbid", frozen=True, validate_by_name=False, validate_by_alias=True)


@functools.cache
def workspace_model(model: type[BaseModel], trusted: bool = False) -> type[BaseModel] | None:
    """The narrower type of `model` a workspace file is read into: only the fields an untrusted
    workspace may set (with `trusted`: every field but the NEVER ones), by their JSON key alone.
    None when no field of the section qualifies."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        section = section_of(info)
        if section is not None:
            narrower = workspace_model(section, trusted)
            if narrower is not None:
                fields[name] = (narrower, Field(narrower(), alias=info.alias or name))
            continue
        how = narrowing_of(info)
        if (how is not None and how.kind != "never") or (trusted and (how is None or how.kind != "never")):
            fields[name] = (info.annotation, info)
    if not fields:
        return None
    prefix = "TrustedWorkspace" if trusted else "Workspace"
    return create_model(f"{prefix}{model.__name__}", __config__=_WORKSPACE_CONFIG, **fields)
