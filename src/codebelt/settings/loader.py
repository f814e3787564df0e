"""Reading settings files, checking them against the schema, and merging them.

Highest first: explicit values (API / CLI arguments), the `--settings` file,
`.codebelt/settings.local.json`, `.codebelt/settings.json`, the `permissions` blocks of
`.claude/settings.local.json` and `.claude/settings.json`, then `~/.config/codebelt/settings.json`.
Scalars: the highest source wins. Permission rule lists and additional directories are
concatenated, each rule remembering the file it came from.

Each file is checked on its own, so a bad value is reported with the file and the key that hold
it, when the session starts. A workspace's own files may set only the keys the schema allows them
(see `schema.py`); other keys are dropped with a warning.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from pydantic import BaseModel, ValidationError

from ..errors import SettingsError
from .schema import WORKSPACE_FORBIDDEN_VALUES, SettingsModel

RULE_LISTS = ("allow", "ask", "deny")
CONCATENATED = {("permissions", k) for k in (*RULE_LISTS, "additionalDirectories")} | {("hooks",)}
USER_LABEL_HINT = "~/.config/codebelt/settings.json"
# Claude Code's keys codebelt understands; the rest of its files belong to Claude Code.
CLAUDE_PERMISSION_KEYS = ("allow", "ask", "deny", "defaultMode", "additionalDirectories")
CLAUDE_TOP_KEYS = ("hooks", "disableAllHooks")


@dataclass(frozen=True)
class RuleSource:
    behavior: str  # allow | ask | deny
    text: str  # the rule as written, e.g. "Bash(npm run test *)"
    source: str  # where it came from, for reasons a person can read


@dataclass(frozen=True)
class Layer:
    label: str  # a file path (shown to people) or "session settings"
    data: Mapping[str, Any]  # as read, less what a workspace may not set
    workspace: bool = False  # from the repository's own files


def user_settings_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "codebelt" / "settings.json"


class Settings:
    """The merged, validated settings of one session, with where each value came from.

    Sections are attributes (`settings.bash.default_timeout_ms`, `settings.sandbox.mode`);
    `rules` lists every permission rule with its source; `warnings` lists what was ignored.
    """

    def __init__(self, layers: list[Layer] | list[tuple[str, Mapping[str, Any]]], warnings: list[str] | None = None):
        self.layers = [lay if isinstance(lay, Layer) else Layer(lay[0], lay[1]) for lay in layers]
        self.warnings: list[str] = list(warnings or [])
        self.sources = [lay.label for lay in self.layers]
        # Hooks are concatenated across files, each remembering its file and whether it is the
        # workspace's own (those run only in a trusted workspace).
        self.hook_layers: list[tuple[str, bool, dict]] = []
        for lay in self.layers:
            model = _validate(lay.data, lay.label)
            if "hooks" in lay.data:
                self.hook_layers.append((lay.label, lay.workspace, model.hooks))
        merged: dict[str, Any] = {}
        for lay in reversed(self.layers):
            _merge_into(merged, lay.data, ())
        self.rules: list[RuleSource] = []
        extra_dirs: list[str] = []
        for lay in self.layers:
            perms = lay.data.get("permissions") or {}
            for behavior in RULE_LISTS:
                self.rules.extend(RuleSource(behavior, v, lay.label) for v in perms.get(behavior) or [])
            extra_dirs.extend(str(d) for d in perms.get("additionalDirectories") or [])
        perms = merged.setdefault("permissions", {})
        for behavior in RULE_LISTS:
            perms[behavior] = [r.text for r in self.rules if r.behavior == behavior]
        perms["additionalDirectories"] = extra_dirs
        hooks: dict[str, list] = {}
        for lay in self.layers:
            for event, groups in (lay.data.get("hooks") or {}).items():
                hooks.setdefault(event, []).extend(groups)
        merged["hooks"] = hooks
        self.model: SettingsModel = _validate(merged, "the merged settings")
        self.raw = merged

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("model",):
            raise AttributeError(name)
        return getattr(self.model, name)

    def get(self, dotted: str, default: Any = None) -> Any:
        """A value by its JSON key path (`"sandbox.limits.processes"`), defaults included."""
        node: Any = self.model
        for part in dotted.split("."):
            node = _field(node, part)
            if node is _MISSING:
                return default
        return node

    def source_of(self, dotted: str) -> str:
        """The file (or "default") the effective value of a key comes from."""
        path = tuple(dotted.split("."))
        for lay in self.layers:
            node: Any = lay.data
            for part in path:
                node = node.get(part, _MISSING) if isinstance(node, Mapping) else _MISSING
            if node is not _MISSING:
                return lay.label
        return "default"

    def leaves(self) -> Iterator[tuple[str, Any]]:
        """(dotted key, value) of every setting, defaults included, in schema order."""
        yield from _leaves(self.model, ())

    def to_json(self) -> dict[str, Any]:
        return self.model.model_dump(mode="json", by_alias=True, exclude={"schema_"})


_MISSING = object()


def _field(node: Any, key: str) -> Any:
    if not isinstance(node, BaseModel):
        return node.get(key, _MISSING) if isinstance(node, Mapping) else _MISSING
    for name, info in type(node).model_fields.items():
        if (info.alias or name) == key:
            return getattr(node, name)
    return _MISSING


def _leaves(model: BaseModel, prefix: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    for name, info in type(model).model_fields.items():
        key = info.alias or name
        if key == "$schema":
            continue
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from _leaves(value, (*prefix, key))
        else:
            yield ".".join((*prefix, key)), value


# -- reading and checking ------------------------------------------------------------------------
def _read_json(path: Path, label: str | None = None) -> dict[str, Any] | None:
    label = label or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise SettingsError(f"cannot read settings file {label}: {getattr(e, 'strerror', None) or e}") from e
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        raise SettingsError(
            f"settings file {label} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from e
    if not isinstance(data, dict):
        raise SettingsError(f"settings file {label} must hold a JSON object")
    return data


def _validate(data: Mapping[str, Any], label: str) -> SettingsModel:
    try:
        return SettingsModel.model_validate(data, strict=True)
    except ValidationError as e:
        raise SettingsError(f"{label}: {_describe(e.errors()[0], data)}") from None


def _describe(err: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    """One sentence naming the key and what it must be."""
    loc = [str(p) for p in err["loc"] if not isinstance(p, int)]
    key = ""
    for p in err["loc"]:  # hooks.PreToolUse[0].hooks[1].timeout
        if p == "[key]":
            continue  # pydantic's marker for a bad dict key: the key is named by the value shown
        key += f"[{p}]" if isinstance(p, int) else ("." if key else "") + str(p)
    kind = err["type"]
    given = err.get("input")
    shown = json.dumps(given) if isinstance(given, (str, int, float, bool, type(None))) else type(given).__name__
    if kind == "extra_forbidden":
        parent = _schema_keys(loc[:-1])
        close = difflib.get_close_matches(loc[-1], parent, n=1)
        hint = f"; did you mean {'.'.join([*loc[:-1], close[0]])}?" if close else (
            f"; known keys here: {', '.join(parent)}" if parent else "")
        return f"unknown setting {key}{hint}"
    if kind == "value_error":
        return f"{key}: {str(err['msg']).removeprefix('Value error, ')}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"'{key}' must be an object" if key else "settings must be a JSON object"
    if kind in ("list_type",) or (kind == "string_type" and any(isinstance(p, int) for p in err["loc"])):
        return f"{key} must be a list of strings"
    if kind == "literal_error":
        return f"{key} must be {err['ctx']['expected']}, got {shown}"
    if kind in ("bool_type", "bool_parsing"):
        return f"{key} must be true or false, got {shown}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{key} must be an integer, got {shown}"
    if kind in ("string_type",):
        return f"{key} must be a string, got {shown}"
    if kind in ("greater_than_equal", "greater_than"):
        bound = err["ctx"].get("ge", err["ctx"].get("gt"))
        rel = ">=" if kind == "greater_than_equal" else ">"
        return f"{key} must be {rel} {bound}, got {shown}"
    return f"{key}: {err['msg']}, got {shown}"


def _schema_keys(loc: list[str]) -> list[str]:
    model: Any = SettingsModel
    for part in loc:
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None or not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return []
        model = field.annotation
    return [f.alias or n for n, f in model.model_fields.items()]


def _merge_into(base: dict[str, Any], over: Mapping[str, Any], path: tuple[str, ...]) -> None:
    """Deep-merge `over` into `base`; `over` wins for scalars. Concatenated lists are built apart."""
    for key, value in over.items():
        if (*path, key) in CONCATENATED:
            continue
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge_into(base[key], value, (*path, key))
        else:
            base[key] = copy.deepcopy(value)


def _workspace_allowed(loc: tuple[str, ...]) -> bool:
    """Whether the schema lets a workspace's own files set this key (unknown keys: yes, so that
    validation can name them)."""
    model: Any = SettingsModel
    for part in loc:
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return True
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if extra.get("x-workspace") is False:
            return False
        ann = field.annotation
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return True
        model = ann
    return True


def _untrusted(data: Mapping[str, Any], label: str, warnings: list[str]) -> dict[str, Any]:
    """A workspace settings file without what a repository may not set for itself."""
    out = copy.deepcopy(dict(data))

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        for key in list(node):
            loc = (*path, key)
            value = node[key]
            forbidden = WORKSPACE_FORBIDDEN_VALUES.get(loc, ())
            if not _workspace_allowed(loc) or (forbidden and value in forbidden):
                del node[key]
                warnings.append(
                    f"ignored {'.'.join(loc)}={json.dumps(value)} in {label}: a workspace cannot set this "
                    f"for itself; put it in {USER_LABEL_HINT} or pass it explicitly"
                )
            elif isinstance(value, dict):
                walk(value, loc)

    walk(out, ())
    return out


def _claude_top(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: data[k] for k in CLAUDE_TOP_KEYS if k in data}


def load_settings(
    root: Path,
    explicit: Mapping[str, Any] | None = None,
    settings_file: Path | None = None,
    load_user: bool = True,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """The session's settings. `overrides` (from API or CLI arguments such as `mode=`) win over
    everything and are labelled as such."""
    layers: list[Layer] = []
    if overrides:
        layers.append(Layer("session arguments", overrides))
    if explicit:
        if not isinstance(explicit, Mapping):
            raise SettingsError("settings must be a mapping in the settings-file format")
        layers.append(Layer("session settings", explicit))
    if settings_file is not None:
        data = _read_json(settings_file)
        if data is None:
            raise SettingsError(f"settings file {settings_file} does not exist")
        layers.append(Layer(str(settings_file), data))
    warnings: list[str] = []
    for rel in (".codebelt/settings.local.json", ".codebelt/settings.json"):
        data = _read_json(root / rel, rel)
        if data is not None:
            layers.append(Layer(rel, _untrusted(data, rel, warnings), workspace=True))
    for rel in (".claude/settings.local.json", ".claude/settings.json"):
        data = _read_json(root / rel, rel)
        if data is not None and "permissions" in data:
            perms = data["permissions"]
            if not isinstance(perms, Mapping):
                raise SettingsError(f"{rel}: 'permissions' must be an object")
            taken = {k: v for k, v in perms.items() if k in CLAUDE_PERMISSION_KEYS}
            layers.append(Layer(rel, _untrusted({"permissions": taken, **_claude_top(data)}, rel, warnings), workspace=True))
        elif data is not None and any(k in data for k in CLAUDE_TOP_KEYS):
            layers.append(Layer(rel, _untrusted(_claude_top(data), rel, warnings), workspace=True))
    if load_user:
        claude = Path(os.path.expanduser("~/.claude/settings.json"))
        data = _read_json(claude, "~/.claude/settings.json")
        if data is not None:
            perms = data.get("permissions")
            if perms is not None and not isinstance(perms, Mapping):
                raise SettingsError("~/.claude/settings.json: 'permissions' must be an object")
            taken = {k: v for k, v in (perms or {}).items() if k in CLAUDE_PERMISSION_KEYS}
            layers.append(Layer("~/.claude/settings.json", {"permissions": taken, **_claude_top(data)}))
        path = user_settings_path()
        label = str(path).replace(os.path.expanduser("~"), "~", 1)
        data = _read_json(path, label)
        if data is not None:
            layers.append(Layer(label, data))
    return Settings(layers, warnings)
