"""The texts a model reads, as data: one table per profile, rendered by one renderer.

A profile (`compat.profile`) is a TOML file beside this module holding, per tool, the result and
error texts and the tool's description, as the program a model was trained on words them
(`claude-code.toml`: Claude Code's current release, recorded from the real program by
scripts/claude_code/record.py). Tools never spell a text out: they name it (`"Edit.updated"`)
and pass the facts (`path=…`); the profile says how it reads. A profile may `extends` another
and override single texts, so an older release — or another program's tool set — is a table,
not a fork.

Templates are `str.format` strings over named facts; `{{` and `}}` are literal braces.

Besides texts a profile holds, under `[profile]`, the built-in tools it leaves out (`without`:
an older release's profile leaves out the tools that release did not have) and the row format of
Read (`Read.row`), and, per tool, `[Tool.parameters]`: descriptions of input parameters where that
release words them otherwise. Only the profile in use is read, when a session first needs it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
DEFAULT_PROFILE = "claude-code"


def profiles() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.toml"))


class Texts:
    """The rendered texts of one profile: `texts("Read.empty")`, `texts("Edit.updated", path=p)`."""

    def __init__(self, name: str, table: dict[str, dict[str, Any]]):
        self.name = name
        self._table = table

    def template(self, key: str) -> str | None:
        section, _, item = key.partition(".")
        value = self._table.get(section, {}).get(item)
        return value if isinstance(value, str) else None

    def has(self, key: str) -> bool:
        return self.template(key) is not None

    def __call__(self, key: str, **facts: Any) -> str:
        template = self.template(key)
        if template is None:
            raise KeyError(f"profile {self.name!r} has no text {key!r}")
        return template.format(**facts) if facts or "{" in template else template

    def get(self, key: str, default: str | None = None, **facts: Any) -> str | None:
        """The text, or `default` when this profile has none for `key`."""
        return self(key, **facts) if self.has(key) else default

    def description(self, tool: str) -> str | None:
        value = self._table.get(tool, {}).get("description")
        return value if isinstance(value, str) else None

    def parameters(self, tool: str) -> dict[str, str]:
        """Descriptions of `tool`'s input parameters, where this profile words them."""
        value = self._table.get(tool, {}).get("parameters", {})
        return {k: v for k, v in value.items() if isinstance(v, str)} if isinstance(value, dict) else {}

    def value(self, key: str, default: Any = None) -> Any:
        """A non-text value of the profile (a number, a list)."""
        section, _, item = key.partition(".")
        return self._table.get(section, {}).get(item, default)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`, table by table (a profile that extends another overrides single
    texts, single parameter descriptions)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@lru_cache(maxsize=None)
def load(name: str = DEFAULT_PROFILE) -> Texts:
    """The profile `name` (with the profiles it extends), parsed once per process."""
    path = HERE / f"{name}.toml"
    if not path.is_file():
        raise ValueError(f"unknown compat profile {name!r}; expected one of {', '.join(profiles())}")
    import tomllib  # only when a profile is first read: importing this package stays cheap

    table = tomllib.loads(path.read_text(encoding="utf-8"))
    parent = table.get("profile", {}).get("extends")
    if parent:
        table = _merge(load(parent)._table, table)
    return Texts(name, table)


__all__ = ["Texts", "load", "profiles", "DEFAULT_PROFILE"]
