"""The `hooks` settings section in Claude Code's shape, and the hooks of one session.

    {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "…", "timeout": 60, "if": "Bash(git *)"}]}]},
     "disableAllHooks": false}

`matcher`: "*", empty or absent = every tool; only letters, digits, `_` and `|` = exact names or a
`|`-list; anything else is a regular expression on the tool name (checked when settings load).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import linear_regex
from ..settings.schema import HOOK_EVENTS as EVENTS  # noqa: F401 - re-exported: the event names
from ..settings.schema import PLAIN_MATCHER as _PLAIN

TOOL_EVENTS = ("PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure")
DEFAULT_TIMEOUT_S = 600


def matcher_matches(matcher: str | None, tool_name: str | None) -> bool:
    if not matcher or matcher == "*" or tool_name is None:
        return True
    if _PLAIN.match(matcher):
        return tool_name in matcher.split("|")
    # A settings file's regex, run in linear time (a backtracking one could hang every call).
    try:
        return linear_regex.compile(matcher).search(tool_name) is not None
    except linear_regex.RegexError:  # refused when the settings loaded; never a crash here
        return False


@dataclass(frozen=True)
class HookSpec:
    """One handler as configured: its event, matcher, what it runs, and where it came from."""

    event: str
    matcher: str | None
    type: str  # command | http | python
    command: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = DEFAULT_TIMEOUT_S
    if_rule: str | None = None
    source: str = ""
    workspace: bool = False  # from the repository's own settings files (taken only when it is trusted)
    function: Callable[[dict[str, Any]], dict[str, Any] | None] | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple:
        """Identical handlers run once per event."""
        return (self.type, self.command, self.url, self.if_rule, id(self.function) if self.function else None)

    @property
    def label(self) -> str:
        return self.command or self.url or getattr(self.function, "__name__", "python hook")


def specs_from(section: Any, source: str, workspace: bool) -> list[HookSpec]:
    """HookSpecs from a validated `hooks` section (a dict of event → groups)."""
    out: list[HookSpec] = []
    for event, groups in (section or {}).items():
        for g in groups:
            for h in g.hooks:
                out.append(HookSpec(
                    event=event, matcher=g.matcher, type=h.type, command=h.command, url=h.url,
                    headers=tuple((h.headers or {}).items()), timeout=h.timeout or DEFAULT_TIMEOUT_S,
                    if_rule=h.if_, source=source, workspace=workspace,
                ))
    return out
