"""The permission engine: every allow/ask/deny decision is made here, from the tool's requests.

Precedence: deny rules, then ask rules, then allow rules (first match wins), then the built-in
checks (workspace containment, protected paths, read-only commands) and the mode.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from .decision import Decision
from .requests import CommandRequest, PathRequest, Request
from .rules import EDIT_TOOLS, READ_TOOLS, Rule, parse_rules

if TYPE_CHECKING:
    from ..settings import Settings
    from ..workspace import Workspace

_ORDER = ("deny", "ask", "allow")


class PermissionEngine:
    def __init__(self, settings: "Settings", workspace: "Workspace", mode: str, session: Any = None):
        self.settings = settings
        self.workspace = workspace
        self.mode = mode
        self.session = session
        self.rules: list[tuple[str, Rule]] = parse_rules(settings.rules, workspace.root)

    # -- rule lookup ---------------------------------------------------------------------------
    def rules_for(self, behavior: str, tools: Iterable[str]) -> list[Rule]:
        names = set(tools)
        return [r for b, r in self.rules if b == behavior and r.tool in names]

    def match_command(self, command: str, tool: str = "Bash") -> tuple[str, Rule] | None:
        """The first rule (deny > ask > allow) that matches a command text."""
        for behavior in _ORDER:
            for rule in self.rules_for(behavior, [tool]):
                if rule.matches_command(command):
                    return behavior, rule
        return None

    def match_path(self, access: str, path: Path, tool: str | None = None) -> tuple[str, Rule] | None:
        """The first path rule that matches. A Read deny also denies writing the same path."""
        family = READ_TOOLS if access == "read" else EDIT_TOOLS
        for behavior in _ORDER:
            tools = set(family)
            if access == "write" and behavior == "deny":
                tools |= {"Read"}
            if tool:
                tools.add(tool)
            for rule in self.rules_for(behavior, tools):
                if rule.specifier is None and rule.tool not in ("Read", "Edit") and rule.tool != tool:
                    continue  # a bare `Grep` rule covers Grep calls, not every read
                if rule.matches_path(path):
                    return behavior, rule
        return None

    def has_rules(self, behavior: str) -> bool:
        return any(b == behavior for b, _ in self.rules)

    def is_read_denied(self, path: Path) -> bool:
        """For search tools: hide files a Read deny rule covers."""
        m = self.match_path("read", path)
        return m is not None and m[0] == "deny"

    # -- decisions ----------------------------------------------------------------------------
    def decide(self, tool: str, requests: list[Request]) -> Decision:
        bare = self._bare_tool_rule(tool)
        if bare is not None and bare.behavior == "deny":
            return bare
        decisions = [self.decide_request(tool, r) for r in requests]
        if bare is not None and bare.behavior == "ask":
            decisions.append(bare)
        if not decisions:
            decisions = [bare or Decision.allow("allowed: the call touches nothing that needs permission")]
        elif bare is not None and bare.behavior == "allow":
            # `Tool` in allow: whole-tool allow, still below deny and ask.
            decisions = [bare if d.behavior == "ask" and d.decided_by in ("mode", "read-only") else d for d in decisions]
        result = combine(decisions)
        if result.behavior == "ask" and self.mode == "dontAsk":
            return Decision.deny(
                f"{result.reason} (mode dontAsk denies anything not explicitly allowed)",
                "mode",
                suggestion=result.suggestion,
            )
        return result

    def decide_request(self, tool: str, request: Request) -> Decision:
        if isinstance(request, PathRequest):
            return self.decide_path(request, tool)
        if isinstance(request, CommandRequest):
            try:
                from .bash import decide_command
            except ImportError:
                return self._fallback_command(request)
            return decide_command(self, request)
        raise TypeError(f"unknown permission request {request!r}")

    def decide_path(self, request: PathRequest, tool: str | None = None) -> Decision:
        path, access = request.path, request.access
        rel = self.workspace.relative(path)
        matched = self.match_path(access, path, tool)
        if matched is not None:
            behavior, rule = matched
            return Decision(
                behavior,  # type: ignore[arg-type]
                f"{_verb(behavior)} by rule {rule.text} in {rule.source}",
                "rule",
                rule=rule.text,
                source=rule.source,
            )
        inside = self.workspace.is_inside(path)
        if access == "read":
            if inside or self.workspace.is_internal_readable(path):
                return Decision.allow("allowed: reading inside the workspace", "workspace")
            if self.mode == "bypassPermissions":
                return Decision.allow("allowed: mode bypassPermissions", "mode")
            return Decision.ask(
                f"path {path} is outside the workspace",
                "workspace",
                suggestion=f"add Read({_rule_path(str(path))}) to permissions.allow, or its directory to permissions.additionalDirectories",
            )
        if not inside:
            return Decision.deny(
                f"path {path} is outside the workspace",
                "workspace",
                suggestion=f"add Edit({_rule_path(str(path))}) to permissions.allow, or its directory to permissions.additionalDirectories",
            )
        protected = self.workspace.protected_reason(path)
        if protected is not None:
            if self.mode in ("plan",):
                return Decision.deny(f"mode plan does not allow writing {rel}", "mode")
            return Decision.ask(
                f"{rel} is a protected path ({protected})",
                "workspace",
                suggestion=f"add Edit({_rule_path(rel)}) to permissions.allow",
            )
        return self.decide_by_mode(f"writing {rel}", "write", suggestion=f"use --mode acceptEdits, or add Edit({_rule_path(rel)}) to permissions.allow")

    def decide_by_mode(self, what: str, kind: str, suggestion: str | None = None) -> Decision:
        """The mode's answer for an action no rule or built-in check settled."""
        mode = self.mode
        if mode == "bypassPermissions":
            return Decision.allow(f"allowed: {what} (mode bypassPermissions)", "mode")
        if mode == "acceptEdits" and kind == "write":
            return Decision.allow(f"allowed: {what} inside the workspace (mode acceptEdits)", "mode")
        if mode == "plan":
            return Decision.deny(f"mode plan allows nothing that writes ({what})", "mode", suggestion="leave plan mode")
        if mode == "dontAsk":
            return Decision.deny(f"{what} is not explicitly allowed (mode dontAsk)", "mode", suggestion=suggestion)
        return Decision.ask(f"{what} needs approval in mode {mode}", "mode", suggestion=suggestion)

    # -- helpers ------------------------------------------------------------------------------
    def _bare_tool_rule(self, tool: str) -> Decision | None:
        for behavior in _ORDER:
            for rule in self.rules_for(behavior, [tool]):
                if rule.specifier is None:
                    return Decision(
                        behavior,  # type: ignore[arg-type]
                        f"{_verb(behavior)} by rule {rule.text} in {rule.source}",
                        "rule",
                        rule=rule.text,
                        source=rule.source,
                    )
        return None

    def _fallback_command(self, request: CommandRequest) -> Decision:
        # Used only until the shell classifier is installed: rules on the whole text, else ask.
        matched = self.match_command(request.command)
        if matched is not None:
            behavior, rule = matched
            return Decision(behavior, f"{_verb(behavior)} by rule {rule.text} in {rule.source}", "rule", rule=rule.text, source=rule.source)  # type: ignore[arg-type]
        return self.decide_by_mode("running a shell command", "command")


def _rule_path(rel: str) -> str:
    """A rule specifier naming exactly this path: `./rel` inside the root, `//abs` elsewhere
    (an additional directory), so the suggested rule really matches."""
    literal = re.sub(r"([\\*?\[])", r"\\\1", rel)  # gitignore-style escapes: glob characters match themselves
    return "/" + literal if rel.startswith("/") else "./" + literal


def _verb(behavior: str) -> str:
    return {"allow": "allowed", "ask": "ask", "deny": "denied"}[behavior]


def combine(decisions: list[Decision]) -> Decision:
    """Any deny denies, any ask asks, else allow. The first decisive part gives the reason."""
    for behavior in ("deny", "ask"):
        for d in decisions:
            if d.behavior == behavior:
                return d
    if len(decisions) == 1:
        return decisions[0]
    return decisions[0] if decisions else Decision.allow("allowed")


__all__ = ["PermissionEngine", "combine"]
