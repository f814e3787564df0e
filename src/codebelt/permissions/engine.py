"""The permission engine: every allow/ask/deny decision is made here, from the tool's requests.

Precedence: deny rules, then ask rules, then allow rules (first match wins), then the built-in
checks (workspace containment, protected paths, read-only commands) and the mode. Shell commands
are decided by `permissions.bash` on the analysis of `shell.analysis`; the rest is here.
"""

from __future__ import annotations

import copy
import os
import re
import stat
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from .bash import CommandPolicy
from .confinement import ConfinementPolicy
from .decision import Confinement, Decision, by_mode, combine
from .denied import DeniedFiles
from .requests import CommandRequest, PathRequest, Request
from .rules import RuleSet, parse_rules

if TYPE_CHECKING:
    from ..settings import Settings
    from ..shell.analysis.analyze import Analysis
    from ..workspace import Workspace

INODES_MAX_AGE_S = 2.0  # how old a walk may be when a path is checked for being a denied file's link

# Sandbox modes someone chose on purpose: they opt into running unprovable commands unasked.
EXPLICIT_SANDBOX_MODES = ("bwrap", "landlock", "required")


class PermissionEngine:
    """Decisions for one session.

    `tool_families` maps tool names to the path-rule family that covers them (`"read"`,
    `"edit"`), as each tool declares it. `sandbox_contains` answers whether Bash commands run in
    a sandbox that keeps protected paths read-only (asked lazily: probing it starts processes);
    `jail_available` whether commands judged read-only run in the read-only jail (without one,
    only exactly modelled programs stay read-only). `helper_tools` names the tools that start
    helper programs (ripgrep, language servers): their calls are confined like those helpers
    (confinement.py); every decision says how (`Decision.confinement`).
    """

    def __init__(
        self,
        settings: "Settings",
        workspace: "Workspace",
        mode: str | None = None,
        *,
        tool_families: Mapping[str, str] | None = None,
        sandbox_contains: Callable[[], bool] | None = None,
        jail_available: Callable[[], bool] | None = None,
        helper_tools: "frozenset[str] | set[str]" = frozenset(),
    ):
        self.settings = settings
        self.workspace = workspace
        self.mode = mode or settings.permissions.default_mode
        self._families = dict(tool_families or {})
        self.rules = RuleSet(parse_rules(settings.rules, workspace.root), self._families)
        # Ask rules from files that may only narrow (an untrusted workspace's own settings).
        narrowing = getattr(settings, "narrowing_sources", frozenset())
        self._narrowing_asks = narrowing and any(r.behavior == "ask" and r.source in narrowing for r in settings.rules)
        self._without_narrowing_asks: PermissionEngine | None = None
        self._sandbox_contains = sandbox_contains
        self._jail_available = jail_available
        self._denied = DeniedFiles(self.rules.read_deny_rules())
        self.confinement = ConfinementPolicy(self.jail_available, settings.sandbox.mode, frozenset(helper_tools))
        self._commands = CommandPolicy(self.rules, self.mode, workspace, self.decide_path, self.sandbox_auto_allow,
                                       self.jail_available, self.confinement,
                                       settings.sandbox.filesystem.allow_git_history)

    # -- questions other parts ask ---------------------------------------------------------------
    def has_rules(self, behavior: str) -> bool:
        return self.rules.has(behavior)

    def is_read_denied(self, path: Path) -> bool:
        """For search tools: hide files a Read deny rule covers, and other names of them (hard
        links)."""
        return self.rules.read_denied(path) or self.denied_link(path) is not None

    def denied_inode(self, st: os.stat_result) -> Path | None:
        """The read-denied file that `st` is (the same inode: a hard link), or None."""
        if not self._denied.active:
            return None
        return self._denied.view(self.workspace.roots, INODES_MAX_AGE_S).inodes.get((st.st_dev, st.st_ino))

    def denied_link(self, path: Path) -> Path | None:
        """The read-denied file that the file at `path` is under another name, or None."""
        if not self._denied.active:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        other = self.denied_inode(st)
        return other if other is not None and other != path else None

    def sandbox_auto_allow(self) -> bool:
        """Whether a non-read-only command may run unasked because the sandbox contains it.

        Only when (1) someone chose it: `sandbox.autoAllowBash: true`, or a sandbox mode picked
        explicitly (bwrap / landlock / required) — the implicit default `auto` never auto-allows,
        so `codebelt check` with default options reports every write or exec as ask; (2) the
        sandbox is active and keeps protected paths (.git/hooks, .claude, …) read-only, which
        Landlock cannot do inside a writable tree.
        """
        sandbox = self.settings.sandbox
        if sandbox.auto_allow_bash is False or sandbox.mode == "off":
            return False
        if sandbox.auto_allow_bash is not True and sandbox.mode not in EXPLICIT_SANDBOX_MODES:
            return False
        if self._sandbox_contains is None:
            return False
        try:
            return bool(self._sandbox_contains())
        except Exception:  # noqa: BLE001 - a missing or failing sandbox means: no sandbox
            return False

    def read_denied_paths(self) -> list[Path]:
        """Files and directories that a Read deny rule covers — in the workspace roots and in the
        places outside them that rules name (`~/.aws/**`) — and other names of such files (hard
        links, renames): the read-only jail and the write sandbox mask them all. From a fresh
        walk (`files.scan`); nothing to walk when there are no deny rules."""
        if not self._denied.active:
            return []
        return self._denied.view(self.workspace.roots, 0.0).masks

    def read_mask_gap(self) -> str | None:
        """Why the jail cannot mask every Read-denied path right now (the walk ran out of time),
        or None."""
        if not self._denied.active:
            return None
        return self._denied.view(self.workspace.roots, INODES_MAX_AGE_S).gap

    def jail_available(self) -> bool:
        if self._jail_available is None:
            return False
        try:
            return bool(self._jail_available())
        except Exception:  # noqa: BLE001 - a failing sandbox means: no jail
            return False

    # -- decisions ----------------------------------------------------------------------------
    def decide(self, tool: str, requests: list[Request]) -> Decision:
        result = self._decide(tool, requests)
        if result.behavior == "ask" and self._narrowing_asks:
            # An untrusted workspace's ask rule may turn an allow into a question, never a deny:
            # `ask: ["Edit(//etc/**)"]` must not offer the user a write the workspace rule
            # would otherwise refuse. Decided without those rules, a deny stays a deny.
            strict = self._strict().decide(tool, requests)
            if strict.behavior == "deny":
                return strict
        return result

    def _strict(self) -> "PermissionEngine":
        """This engine without the ask rules of files that may only narrow."""
        if self._without_narrowing_asks is None:
            narrowing = self.settings.narrowing_sources
            other = copy.copy(self)
            other.rules = RuleSet([(b, r) for b, r in self.rules.rules if not (b == "ask" and r.source in narrowing)],
                                  self._families)
            other._narrowing_asks = False
            other._commands = CommandPolicy(other.rules, other.mode, other.workspace, other.decide_path,
                                            other.sandbox_auto_allow, other.jail_available, other.confinement,
                                            other.settings.sandbox.filesystem.allow_git_history)
            self._without_narrowing_asks = other
        return self._without_narrowing_asks

    def _decide(self, tool: str, requests: list[Request]) -> Decision:
        bare_match = self.rules.bare(tool)
        bare = Decision.from_rule(*bare_match) if bare_match else None
        if bare is not None and bare.behavior == "deny":
            return bare
        decisions = [self.decide_request(tool, r) for r in requests]
        confinement = self._confinement(tool, requests, decisions)
        if bare is not None and bare.behavior == "ask":
            decisions.append(bare)
        if not decisions:
            decisions = [bare or Decision.allow("allowed: the call touches nothing that needs permission")]
        elif bare is not None and bare.behavior == "allow":
            # `Tool` in allow: whole-tool allow, still below deny and ask.
            decisions = [bare if d.behavior == "ask" and d.decided_by in ("mode", "read-only") else d for d in decisions]
        result = combine(decisions)
        if result.behavior == "ask" and self.mode == "dontAsk":
            result = Decision.deny(
                f"{result.reason} (mode dontAsk denies anything not explicitly allowed)",
                "mode",
                suggestion=result.suggestion,
            )
        return result.confined(confinement)

    def _confinement(self, tool: str, requests: list[Request], decisions: list[Decision]) -> Confinement:
        """A call with a command runs as its command decision says (the jail only when every
        command in it has the jail); any other call as its tool's helpers."""
        commands = [d.confinement for r, d in zip(requests, decisions) if isinstance(r, CommandRequest)]
        if not commands:
            return self.confinement.for_tool(tool)
        if all(c == "jail" for c in commands):
            return "jail"
        return "none" if all(c == "none" for c in commands) else "sandbox"
    def decide_request(self, tool: str, request: Request) -> Decision:
        if isinstance(request, PathRequest):
            return self.decide_path(request, tool)
        if isinstance(request, CommandRequest):
            return self.decide_command(request)[0]
        raise TypeError(f"unknown permission request {request!r}")

    def decide_command(self, request: CommandRequest) -> tuple[Decision, "Analysis"]:
        """The decision for a shell command's parts and the analysis it was made from."""
        decision, analysis = self._commands.decide(request)
        return self._unless_unprotected(decision), analysis

    def _unless_unprotected(self, decision: Decision) -> Decision:
        """A command allowed to run unasked because the jail or the sandbox protects paths asks
        instead when that protection is incomplete (the walk that finds the paths ran out of
        time, or there are more than the sandbox takes): a refusal with the reason, never a
        silent gap."""
        if decision.behavior != "allow":
            return decision
        gap = None
        if decision.decided_by == "read-only" and self.jail_available():
            gap = self.read_mask_gap()
        elif decision.decided_by == "sandbox":
            from ..sandbox.protected import protection_gap

            gap = next((g for g in map(protection_gap, self.workspace.roots) if g), None) or self.read_mask_gap()
        if gap is None:
            return decision
        return Decision.ask(f"{decision.reason}, but {gap}, so it cannot run unasked", "workspace",
                            suggestion="add a rule allowing this command, or narrow the workspace")

    def explain_command(self, request: CommandRequest, tool: str = "Bash") -> tuple[Decision, "Analysis"]:
        """What a Bash call of this command would be decided, with the one analysis behind it
        (for `codebelt check`): whole-tool rules and the mode included, as in `decide`."""
        analysis = self._commands.analyze(request)
        return self.decide(tool, [replace(request, analysis=analysis)]), analysis

    def decide_path(self, request: PathRequest, tool: str | None = None) -> Decision:
        path, access = request.path, request.access
        rel = self.workspace.relative(path)
        matched = self.rules.match_path(access, path, tool)
        if matched is not None:
            return Decision.from_rule(*matched)
        link = self.denied_link(path)
        if link is not None:
            return Decision.deny(f"{rel} is the same file as {self.workspace.relative(link)} (a hard link), "
                                 "which a Read deny rule covers", "rule")
        inside = self.workspace.is_inside(path)
        if access == "read":
            if inside or self.workspace.is_internal_readable(path):
                return Decision.allow("allowed: reading inside the workspace", "workspace")
            if self.mode == "bypassPermissions":
                return Decision.allow("allowed: mode bypassPermissions", "mode")
            return Decision.ask(
                f"path {path} is outside the workspace",
                "workspace",
                suggestion=f"add Read({rule_path(str(path))}) to permissions.allow, or its directory to permissions.additionalDirectories",
            )
        if not inside:
            return Decision.deny(
                f"path {path} is outside the workspace",
                "workspace",
                suggestion=f"add Edit({rule_path(str(path))}) to permissions.allow, or its directory to permissions.additionalDirectories",
            )
        protected = self.workspace.protected_reason(path)
        if protected is not None:
            if self.mode == "plan":
                return Decision.deny(f"mode plan does not allow writing {rel}", "mode")
            return Decision.ask(
                f"{rel} is a protected path ({protected})",
                "workspace",
                suggestion=f"add Edit({rule_path(rel)}) to permissions.allow",
            )
        return by_mode(self.mode, f"writing {rel}", "write",
                       suggestion=f"use --mode acceptEdits, or add Edit({rule_path(rel)}) to permissions.allow")


def rule_path(rel: str) -> str:
    """A rule specifier naming exactly this path: `./rel` inside the root, `//abs` elsewhere
    (an additional directory), so the suggested rule really matches."""
    literal = re.sub(r"([\\*?\[])", r"\\\1", rel)  # gitignore-style escapes: glob characters match themselves
    return "/" + literal if rel.startswith("/") else "./" + literal


__all__ = ["PermissionEngine", "combine", "rule_path"]
