"""A permission decision: allow, ask or deny, with who decided, a reason a person can read, and
how the programs the call starts are confined."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .rules import Rule

Behavior = Literal["allow", "ask", "deny"]

# Who or what made the decision, as recorded in the audit log.
DecidedBy = Literal[
    "rule", "mode", "read-only", "user", "sandbox", "workspace", "danger", "default", "approver"
]

# Where the programs a call starts run (confinement.py decides it, tools obey it):
# "jail"    the read-only jail — nothing writable, no network, Read-denied paths masked;
# "sandbox" the write sandbox as sandbox.mode sets it up (a helper, which never writes, runs in
#           the jail for it: the stricter of the two);
# "none"    no OS confinement (the sandbox is off, or no jail works here for a helper).
Confinement = Literal["jail", "sandbox", "none"]


@dataclass(frozen=True)
class Decision:
    behavior: Behavior
    reason: str
    decided_by: DecidedBy = "default"
    rule: str | None = None  # the rule text that matched, e.g. "Bash(curl *)"
    source: str | None = None  # where that rule came from, e.g. ".codebelt/settings.json"
    # For ask/deny: what would allow the call ("add the rule Edit(src/**)", "--mode acceptEdits").
    suggestion: str | None = None
    # Set by the engine for every call; `decided_by` is only a label and never chooses it.
    confinement: Confinement = "sandbox"

    @classmethod
    def allow(cls, reason: str, decided_by: DecidedBy = "default", **kw: Any) -> "Decision":
        return cls("allow", reason, decided_by, **kw)

    @classmethod
    def ask(cls, reason: str, decided_by: DecidedBy = "default", **kw: Any) -> "Decision":
        return cls("ask", reason, decided_by, **kw)

    @classmethod
    def deny(cls, reason: str, decided_by: DecidedBy = "default", **kw: Any) -> "Decision":
        return cls("deny", reason, decided_by, **kw)

    @classmethod
    def from_rule(cls, behavior: str, rule: "Rule") -> "Decision":
        """The decision a matching rule makes, with the rule and its file in the reason."""
        return cls(behavior, f"{_VERB[behavior]} by rule {rule.text} in {rule.source or 'settings'}",  # type: ignore[arg-type]
                   "rule", rule=rule.text, source=rule.source or None)

    def confined(self, confinement: Confinement) -> "Decision":
        return replace(self, confinement=confinement)

    def refused(self, why: str) -> "Decision":
        """An `ask` nobody could answer becomes a deny that says what would allow it."""
        return replace(self, behavior="deny", reason=f"{self.reason}; {why}")

    def answered(self, approved: bool) -> "Decision":
        if approved:
            return replace(self, behavior="allow", reason=f"{self.reason}; approved by the user", decided_by="user")
        # The message says "declined by the user" around the reason: not twice.
        return replace(self, behavior="deny", decided_by="user")

    def message(self, tool: str) -> str:
        """The error text the model reads when the call is not allowed."""
        if self.decided_by == "user" and self.behavior == "deny":
            return (
                f"Permission to use {tool} was declined by the user ({self.reason}). "
                "Do not retry the same call; ask the user or try another approach."
            )
        text = f"Permission to use {tool} was denied: {self.reason}."
        if self.suggestion:
            text += f" To allow it: {self.suggestion}."
        return text

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


_VERB = {"allow": "allowed", "ask": "ask", "deny": "denied"}


def combine(decisions: list[Decision]) -> Decision:
    """Any deny denies, any ask asks, else allow. The first decisive part gives the reason."""
    for behavior in ("deny", "ask"):
        for d in decisions:
            if d.behavior == behavior:
                return d
    return decisions[0] if decisions else Decision.allow("allowed")


Kind = Literal["write", "command"]


def by_mode(mode: str, what: str, kind: Kind, suggestion: str | None = None, rule_hint: str | None = None) -> Decision:
    """The mode's answer for an action no rule or built-in check settled: a write inside the
    workspace, or a command that is not read-only. `rule_hint` names the rule that would allow it."""
    if mode == "bypassPermissions":
        return Decision.allow(f"allowed: {what} (mode bypassPermissions)", "mode")
    if mode == "acceptEdits" and kind == "write":
        return Decision.allow(f"allowed: {what} inside the workspace (mode acceptEdits)", "mode")
    if mode == "plan":
        reason = (f"mode plan allows nothing that writes ({what})" if kind == "write"
                  else f"mode plan allows only read-only commands: {what}")
        return Decision.deny(reason, "mode", suggestion="leave plan mode")
    if mode == "dontAsk":
        if kind == "write":
            return Decision.deny(f"{what} is not explicitly allowed (mode dontAsk)", "mode", suggestion=suggestion)
        extra = f"; the rule {rule_hint} would allow it" if rule_hint else ""
        return Decision.deny(f"{what}, and mode dontAsk denies anything not explicitly allowed{extra}", "mode",
                             suggestion=suggestion)
    reason = f"{what} needs approval in mode {mode}" if kind == "write" else f"ask: {what}"
    return Decision.ask(reason, "mode", suggestion=suggestion)
