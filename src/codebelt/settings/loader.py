"""Reading settings files, checking them against the schema, and merging them.

Highest first: explicit values (API / CLI arguments), the `--settings` file,
`.codebelt/settings.local.json`, `.codebelt/settings.json`, the parts codebelt reads of
`.claude/settings.local.json` and `.claude/settings.json` (`permissions`, `hooks`,
`disableAllHooks`), then `~/.claude/settings.json` and `~/.config/codebelt/settings.json`.
Scalars: the highest source wins. Permission rule lists, additional directories and hooks are
concatenated, each rule remembering the file it came from.

Each file is checked on its own, by its JSON keys alone, so a bad value is reported with the
file and the key that hold it when the session starts. The workspace's own files (the four in
the repository) are read into a narrower type (`narrowing.py`) unless the user trusts the
workspace (`trust.py`): they may only narrow what the files outside it allow; what they may not
set, and keys codebelt does not know, are ignored with a warning. Every file is read bounded
(`reading.py`).
"""

from __future__ import annotations

import copy
import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..errors import SettingsError
from . import plain
from .reading import MAX_BYTES, parse_json, read_bytes, read_json
from .trust import Trust, decide_trust

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .schema import SettingsModel

# pydantic, the schema's models and the narrowing of workspace files are imported where they are
# used: settings that `plain.check` settles (no file, or files of plain values) need none of them.

RULE_LISTS = ("allow", "ask", "deny")
CONCATENATED = {("permissions", k) for k in (*RULE_LISTS, "additionalDirectories")} | {("hooks",)}
USER_LABEL_HINT = "~/.config/codebelt/settings.json"
# Claude Code's keys codebelt understands; the rest of its files belong to Claude Code.
CLAUDE_PERMISSION_KEYS = ("allow", "ask", "deny", "defaultMode", "additionalDirectories")
CLAUDE_TOP_KEYS = ("hooks", "disableAllHooks")
# The workspace's own files, highest first.
WORKSPACE_FILES = (".codebelt/settings.local.json", ".codebelt/settings.json",
                   ".claude/settings.local.json", ".claude/settings.json")


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


@dataclass(frozen=True)
class Ignored:
    """A key of a workspace file that was not taken as written."""

    source: str  # the file
    key: str  # the dotted key as written, e.g. "permissions.allow"
    why: str  # "untrusted": only the user may set it | "unknown" | "limited": it would widen a value | "never"
    detail: str = ""  # for people
    value: Any = None  # as written (for "untrusted" and "limited")

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "key": self.key, "why": self.why, "detail": self.detail, "value": self.value}


def user_settings_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "codebelt" / "settings.json"


class Settings:
    """The merged, validated settings of one session, with where each value came from.

    Sections are attributes (`settings.bash.default_timeout_ms`, `settings.sandbox.mode`);
    `rules` lists every permission rule with its source; `warnings` lists what was ignored;
    `trust` says whether the workspace's own files were honoured in full, `ignored` which of
    their keys were not.
    """

    def __init__(self, layers: list[Layer] | list[tuple[str, Mapping[str, Any]]], warnings: list[str] | None = None,
                 *, trust: Trust | None = None, ignored: list[Ignored] | None = None):
        self.layers = [lay if isinstance(lay, Layer) else Layer(lay[0], lay[1]) for lay in layers]
        self.warnings: list[str] = list(warnings or [])
        self.trust = trust or Trust(root="", trusted=False)
        self.ignored: list[Ignored] = list(ignored or [])
        self.sources = [lay.label for lay in self.layers]
        # The files whose rules may only narrow: an untrusted workspace's (the permission engine
        # never lets their ask rules turn a deny into a question).
        self.narrowing_sources = frozenset(
            lay.label for lay in self.layers if lay.workspace and not self.trust.trusted)
        # Hooks are concatenated across files, each remembering its file and whether it is the
        # workspace's own (those only come from a trusted workspace).
        self.hook_layers: list[tuple[str, bool, dict]] = []
        for lay in self.layers:
            model = _check(lay.data, lay.label)
            if "hooks" in lay.data and (self.trust.trusted or not lay.workspace):
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
            # Claude Code's sandbox.filesystem.denyRead merges with the Read deny rules: here each
            # entry is one, for every tool and both sandboxes
            fs = (lay.data.get("sandbox") or {}).get("filesystem") or {}
            deny_read = fs.get("denyRead") if isinstance(fs, Mapping) else None
            if isinstance(deny_read, list):
                self.rules.extend(RuleSource("deny", f"Read({v})", lay.label) for v in deny_read if isinstance(v, str))
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
        self.raw = merged
        # the values: plain sections when `plain.check` settles them (then the pydantic model, which
        # holds the same values, is built only if asked for), else the pydantic model, checked now
        self._plain = plain.check(merged)
        self._model: SettingsModel | None = _validate(merged, "the merged settings") if self._plain is None else None

    @property
    def model(self) -> SettingsModel:
        """The merged settings as the pydantic model."""
        if self._model is None:
            self._model = _validate(self.raw, "the merged settings")
        return self._model

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("model",):
            raise AttributeError(name)
        values = self._plain
        return getattr(self.model if values is None else values, name)

    def get(self, dotted: str, default: Any = None) -> Any:
        """A value by its JSON key path (`"sandbox.limits.processes"`), defaults included."""
        node: Any = self.model if self._plain is None else self._plain
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

    def trust_notice(self) -> str | None:
        """One sentence for people when the workspace's own settings were not all honoured because
        it is not trusted: what was left out and how to trust it."""
        left_out = [i for i in self.ignored if i.why in ("untrusted", "limited")]
        if self.trust.trusted or not left_out:
            return None
        keys = ", ".join(dict.fromkeys(f"{i.key} ({i.source})" for i in left_out))
        return (f"this workspace ({self.trust.root}) is not trusted, so its own settings files may only narrow "
                f"access; ignored from them: {keys}. To honour them, {self.trust.hint()}")


_MISSING = object()


def _field(node: Any, key: str) -> Any:
    if isinstance(node, plain.Section):
        return node.by_key(key, _MISSING)
    if not hasattr(type(node), "model_fields"):  # not a pydantic model
        return node.get(key, _MISSING) if isinstance(node, Mapping) else _MISSING
    for name, info in type(node).model_fields.items():
        if (info.alias or name) == key:
            return getattr(node, name)
    return _MISSING


def _leaves(model: BaseModel, prefix: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    from pydantic import BaseModel

    for name, info in type(model).model_fields.items():
        key = info.alias or name
        if key == "$schema":
            continue
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from _leaves(value, (*prefix, key))
        else:
            yield ".".join((*prefix, key)), value


# -- checking ------------------------------------------------------------------------------------
def _check(data: Mapping[str, Any], label: str) -> Any:
    """`data` checked as settings: by `plain.check` when it can settle them (the same values
    pydantic gives), else by the schema's model (which words any error)."""
    checked = plain.check(data)
    return checked if checked is not None else _validate(data, label)


def _validate(data: Mapping[str, Any], label: str, model: type[BaseModel] | None = None) -> Any:
    """`data` checked against `model` (default: the settings schema), by JSON keys alone: pydantic
    would also take the Python field names (`ripgrep_path`), which no list of keys written in
    camelCase would catch."""
    from pydantic import ValidationError

    if model is None:
        from .schema import SettingsModel as model
    try:
        return model.model_validate(data, strict=True, by_alias=True, by_name=False)
    except ValidationError as e:
        raise SettingsError(f"{label}: {_describe(e.errors()[0], data)}") from None


def _describe(err: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    """One sentence naming the key and what it must be."""
    # "<bool>"/"<object>": which form of a two-form value (sandbox.network) was checked, not a key
    where = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("<"))]
    loc = [str(p) for p in where if not isinstance(p, int)]
    key = ""
    for p in where:  # hooks.PreToolUse[0].hooks[1].timeout
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
    if kind == "choice_type":
        return f"{key} {err['msg']}, got {shown}"
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
    from .schema import SettingsModel

    model: Any = SettingsModel
    for part in loc:
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        inner = _section_type(field.annotation) if field is not None else None
        if inner is None:
            return []
        model = inner
    return [f.alias or n for n, f in model.model_fields.items()]


def _section_type(annotation: Any) -> type[BaseModel] | None:
    """The settings section a field holds: its type, or the object form of a two-form value."""
    import typing

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _section_type(arg)
        if found is not None:
            return found
    return None


def _merge_into(base: dict[str, Any], over: Mapping[str, Any], path: tuple[str, ...]) -> None:
    """Deep-merge `over` into `base`; `over` wins for scalars. Concatenated lists are built apart."""
    for key, value in over.items():
        if (*path, key) in CONCATENATED:
            continue
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge_into(base[key], value, (*path, key))
        else:
            base[key] = copy.deepcopy(value)



# -- the workspace's own files -------------------------------------------------------------------
def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unknown(model: type[BaseModel], key: str, dotted: str) -> str:
    for name, info in model.model_fields.items():
        if name == key and info.alias and info.alias != name:
            return f"unknown setting {dotted}: settings files use the JSON key {info.alias!r}"
    keys = [info.alias or name for name, info in model.model_fields.items()]
    close = difflib.get_close_matches(key, keys, n=1)
    return f"unknown setting {dotted}" + (f"; did you mean {close[0]!r}?" if close else "")


def _split(node: Mapping[str, Any], full: type[BaseModel], narrow: type[BaseModel] | None,
           path: tuple[str, ...], label: str, ignored: list[Ignored]) -> dict[str, Any]:
    """What of a workspace file the narrower type `narrow` holds; the rest is recorded as ignored."""
    from .narrowing import field_by_alias, narrowing_of, section_of

    out: dict[str, Any] = {}
    for key, value in node.items():
        dotted = ".".join((*path, key))
        hit = field_by_alias(full, key)
        if hit is None:
            ignored.append(Ignored(label, dotted, "unknown", _unknown(full, key, dotted)))
            continue
        own = field_by_alias(narrow, key) if narrow is not None else None
        section = section_of(hit[1])
        if section is not None and isinstance(value, Mapping):  # each key of it said apart
            inner = _split(value, section, section_of(own[1]) if own else None, (*path, key), label, ignored)
            if own is not None:
                out[key] = inner
            continue
        if own is None:
            how = narrowing_of(hit[1])
            if how is not None and how.kind == "never":
                ignored.append(Ignored(label, dotted, "never", f"{dotted}: only the user's own settings can set it"))
            else:
                ignored.append(Ignored(label, dotted, "untrusted", f"{dotted}={_short(value)}", value))
            continue
        out[key] = value
    return out


def _narrow(node: Mapping[str, Any], model: type[BaseModel], path: tuple[str, ...], base: Settings,
            label: str, ignored: list[Ignored]) -> dict[str, Any]:
    """An untrusted workspace file's values over `base` (the settings below the workspace): each
    only as far as its field's narrowing allows."""
    from .narrowing import field_by_alias, narrowing_of, section_of

    out: dict[str, Any] = {}
    for key, value in node.items():
        hit = field_by_alias(model, key)
        assert hit is not None  # validated against the narrower type, which holds only fields of `model`
        info = hit[1]
        dotted = ".".join((*path, key))
        section = section_of(info)
        if section is not None:
            inner = _narrow(value, section, (*path, key), base, label, ignored)
            if inner:
                out[key] = inner
            continue
        how = narrowing_of(info)
        assert how is not None
        below, below_key = base.get(dotted), dotted
        if below is None and how.fallback:
            below, below_key = base.get(how.fallback), how.fallback
        taken, refused = how.narrow(value, below)
        if refused:
            ignored.append(Ignored(label, dotted, "limited", _refusal(how, dotted, value, below, base.source_of(below_key)),
                                   value))
            if how.kind != "custom":  # a custom rule may keep the narrowing part of a value
                continue
        if how.kind in ("rules", "any") or taken != below:
            out[key] = taken
    return out


def _refusal(how: Any, dotted: str, value: Any, below: Any, source: str) -> str:
    """Why a workspace's value was not taken, for people."""
    where = "the default" if source == "default" else source

    def shown(v: Any) -> str:
        return f"{_short(v)} (no limit)" if how.unlimited is not None and v == how.unlimited else _short(v)

    if how.kind == "lower":
        return f"{dotted}={shown(value)} is above {shown(below)} ({where}); a workspace may only lower it"
    if how.kind == "off":
        return f"{dotted}=true, but it is off ({where}); a workspace may only turn it off"
    if how.kind == "custom" and how.custom is not None:
        return f"{how.custom(value, below)[1]} ({where})"
    narrower = how.order[: how.order.index(below) + 1]
    return (f"{dotted}={_short(value)} allows more than {_short(below)} ({where}); a workspace may only choose "
            f"{' or '.join(narrower)}")


def _workspace_layer(data: Mapping[str, Any], label: str, trusted: bool, base: Settings,
                     ignored: list[Ignored]) -> dict[str, Any]:
    """A workspace file as taken: its narrower type's keys (all but trust with `trusted`),
    checked, and (untrusted) each value narrowed against the settings below it."""
    from .narrowing import workspace_model
    from .schema import SettingsModel

    narrow = workspace_model(SettingsModel, trusted)
    kept = _split(data, SettingsModel, narrow, (), label, ignored)
    checked = _validate(kept, label, narrow)
    if trusted:
        return kept
    return _narrow(checked.model_dump(by_alias=True, exclude_unset=True), SettingsModel, (), base, label, ignored)


def _claude_part(data: Mapping[str, Any], label: str) -> dict[str, Any] | None:
    """The keys of a Claude Code settings file codebelt reads (the rest is Claude Code's)."""
    perms = data.get("permissions")
    if perms is not None and not isinstance(perms, Mapping):
        raise SettingsError(f"{label}: 'permissions' must be an object")
    out: dict[str, Any] = {k: data[k] for k in CLAUDE_TOP_KEYS if k in data}
    if perms is not None:
        out["permissions"] = {k: v for k, v in perms.items() if k in CLAUDE_PERMISSION_KEYS}
    return out or None


def _read_workspace_file(root: Path, rel: str, warnings: list[str]) -> dict[str, Any] | None:
    """A workspace file's JSON. One that cannot be read safely (a FIFO, a device, a directory, a
    huge file) is left out with a warning: a checkout must not stop or hang the session."""
    try:
        raw = read_bytes(root / rel, rel)
    except SettingsError as e:
        warnings.append(f"{e} (a settings file must be a regular file of at most {MAX_BYTES // (1 << 20)} MB)")
        return None
    return None if raw is None else parse_json(raw, rel)


def _describe_ignored(ignored: list[Ignored]) -> list[str]:
    """Warnings for people about single keys (what trust would honour is summed up once, in
    `Settings.trust_notice`)."""
    return [f"{i.source}: ignored {i.detail}" for i in ignored if i.why != "untrusted"]


def load_settings(
    root: Path,
    explicit: Mapping[str, Any] | None = None,
    settings_file: Path | None = None,
    load_user: bool = True,
    overrides: Mapping[str, Any] | None = None,
    trust_workspace: bool = False,
) -> Settings:
    """The session's settings. `overrides` (from API or CLI arguments such as `mode=`) win over
    everything and are labelled as such. `trust_workspace` honours the workspace's own files in
    full, as listing it in the user's `trustedWorkspaces` does."""
    above: list[Layer] = []  # what the user passed for this session
    if overrides:
        above.append(Layer("session arguments", overrides))
    if explicit:
        if not isinstance(explicit, Mapping):
            raise SettingsError("settings must be a mapping in the settings-file format")
        above.append(Layer("session settings", explicit))
    if settings_file is not None:
        data = read_json(settings_file)
        if data is None:
            raise SettingsError(f"settings file {settings_file} does not exist")
        above.append(Layer(str(settings_file), data))
    below: list[Layer] = []  # the user's own files
    if load_user:
        data = read_json(Path(os.path.expanduser("~/.claude/settings.json")), "~/.claude/settings.json")
        part = _claude_part(data, "~/.claude/settings.json") if data is not None else None
        if part is not None:
            below.append(Layer("~/.claude/settings.json", part))
        path = user_settings_path()
        label = str(path).replace(os.path.expanduser("~"), "~", 1)
        data = read_json(path, label)
        if data is not None:
            below.append(Layer(label, data))
    warnings: list[str] = []
    outside = Settings(above + below)  # checks them, and is where trust can come from
    trust = decide_trust(root, outside.trusted_workspaces, trust_workspace, warnings)
    base = Settings(below)
    ignored: list[Ignored] = []
    layers: list[Layer] = []
    for rel in WORKSPACE_FILES:
        data = _read_workspace_file(root, rel, warnings)
        if data is not None and rel.startswith(".claude/"):
            data = _claude_part(data, rel)
        if data is not None:
            layers.append(Layer(rel, _workspace_layer(data, rel, trust.trusted, base, ignored), workspace=True))
    warnings += _describe_ignored(ignored)
    settings = Settings(above + layers + below, warnings, trust=trust, ignored=ignored)
    notice = settings.trust_notice()
    if notice:
        settings.warnings.append(notice)
    return settings
