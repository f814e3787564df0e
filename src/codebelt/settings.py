"""Settings: JSON files in Claude Code's format, merged from several places.

Highest first: explicit values (API dict / CLI), the `--settings` file, `.codebelt/settings.local.json`,
`.codebelt/settings.json`, the `permissions` blocks of `.claude/settings.local.json` and
`.claude/settings.json`, then `~/.config/codebelt/settings.json`. Scalars: the highest source wins.
Permission rule lists are concatenated, each rule remembering the file it came from.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .errors import SettingsError

RULE_LISTS = ("allow", "ask", "deny")

# What a checked-out repository may not set for itself in its own settings files: values that
# name a program codebelt runs outside the sandbox, or that switch every check off. These are
# honoured only from the user's file, the --settings file and the API; from the workspace they
# are dropped with a warning (`Settings.warnings`).
WORKSPACE_FORBIDDEN_KEYS = ("search.ripgrepPath", "search.useSystemRipgrep")
WORKSPACE_FORBIDDEN_VALUES = {"permissions.defaultMode": ("bypassPermissions",)}


@dataclass(frozen=True)
class RuleSource:
    behavior: str  # allow | ask | deny
    text: str  # the rule as written, e.g. "Bash(npm run test *)"
    source: str  # where it came from, for reasons a person can read


def user_settings_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "codebelt" / "settings.json"


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise SettingsError(f"cannot read settings file {path}: {e.strerror}") from e
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        raise SettingsError(
            f"settings file {path} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from e
    if not isinstance(data, dict):
        raise SettingsError(f"settings file {path} must hold a JSON object")
    return data


def _merge_into(base: dict[str, Any], over: Mapping[str, Any]) -> None:
    """Deep-merge `over` into `base`; `over` wins for scalars. Rule lists are handled apart."""
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge_into(base[key], value)
        else:
            base[key] = copy.deepcopy(value)


class Settings:
    """The merged settings, dotted access, and the permission rules with their sources."""

    def __init__(self, layers: list[tuple[str, Mapping[str, Any]]], warnings: list[str] | None = None):
        # layers: (source label, data), highest priority first.
        self.warnings: list[str] = list(warnings or [])
        self.sources = [label for label, _ in layers]
        for label, data in layers:
            if not isinstance(data.get("permissions", {}), Mapping):
                raise SettingsError(f"{label}: 'permissions' must be an object")
        self.data: dict[str, Any] = {}
        for _, data in reversed(layers):
            _merge_into(self.data, data)
        self.rules: list[RuleSource] = []
        extra_dirs: list[str] = []
        for label, data in layers:
            perms = data.get("permissions") or {}
            for behavior in RULE_LISTS:
                values = perms.get(behavior) or []
                if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                    raise SettingsError(f"{label}: permissions.{behavior} must be a list of strings")
                self.rules.extend(RuleSource(behavior, v, label) for v in values)
            dirs = perms.get("additionalDirectories") or []
            if isinstance(dirs, list):
                extra_dirs.extend(str(d) for d in dirs)
        self.data.setdefault("permissions", {})
        self.data["permissions"]["additionalDirectories"] = extra_dirs

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def set(self, dotted: str, value: Any) -> None:
        parts = dotted.split(".")
        node = self.data
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value


def load_settings(
    root: Path,
    explicit: Mapping[str, Any] | None = None,
    settings_file: Path | None = None,
    load_user: bool = True,
) -> Settings:
    layers: list[tuple[str, Mapping[str, Any]]] = []
    if explicit:
        if not isinstance(explicit, Mapping):
            raise SettingsError("settings must be a mapping in the settings-file format")
        layers.append(("session settings", explicit))
    if settings_file is not None:
        data = _read_json(settings_file)
        if data is None:
            raise SettingsError(f"settings file {settings_file} does not exist")
        layers.append((str(settings_file), data))
    warnings: list[str] = []
    for rel in (".codebelt/settings.local.json", ".codebelt/settings.json"):
        data = _read_json(root / rel)
        if data is not None:
            layers.append((rel, _untrusted(data, rel, warnings)))
    for rel in (".claude/settings.local.json", ".claude/settings.json"):
        data = _read_json(root / rel)
        if data is not None and isinstance(data.get("permissions"), Mapping):
            layers.append((rel, _untrusted({"permissions": data["permissions"]}, rel, warnings)))
    if load_user:
        path = user_settings_path()
        data = _read_json(path)
        if data is not None:
            layers.append((str(path).replace(os.path.expanduser("~"), "~", 1), data))
    return Settings(layers, warnings)


def _untrusted(data: Mapping[str, Any], label: str, warnings: list[str]) -> dict[str, Any]:
    """A workspace settings file without the keys a repository may not set for itself."""
    data = copy.deepcopy(dict(data))

    def pop(dotted: str, only: tuple[Any, ...] | None) -> None:
        *parents, last = dotted.split(".")
        node: Any = data
        for part in parents:
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, dict) and last in node and (only is None or node[last] in only):
            value = node.pop(last)
            warnings.append(
                f"ignored {dotted}={json.dumps(value)} in {label}: a workspace cannot set this for "
                "itself; put it in ~/.config/codebelt/settings.json or pass it explicitly"
            )

    for key in WORKSPACE_FORBIDDEN_KEYS:
        pop(key, None)
    for key, values in WORKSPACE_FORBIDDEN_VALUES.items():
        pop(key, values)
    return data
