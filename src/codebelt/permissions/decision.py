"""A permission decision: allow, ask or deny, with who decided and a reason a person can read."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

Behavior = Literal["allow", "ask", "deny"]

# Who or what made the decision, as recorded in the audit log.
DecidedBy = Literal[
    "rule", "mode", "read-only", "user", "sandbox", "workspace", "danger", "default", "approver"
]


@dataclass(frozen=True)
class Decision:
    behavior: Behavior
    reason: str
    decided_by: DecidedBy = "default"
    rule: str | None = None  # the rule text that matched, e.g. "Bash(curl *)"
    source: str | None = None  # where that rule came from, e.g. ".codebelt/settings.json"
    # For ask/deny: what would allow the call ("add the rule Edit(src/**)", "--mode acceptEdits").
    suggestion: str | None = None

    @classmethod
    def allow(cls, reason: str, decided_by: DecidedBy = "default", **kw: Any) -> "Decision":
        return cls("allow", reason, decided_by, **kw)

    @classmethod
    def ask(cls, reason: str, decided_by: DecidedBy = "default", **kw: Any) -> "Decision":
        return cls("ask", reason, decided_by, **kw)

    @classmethod
    def deny(cls, reason: str, decided_by: DecidedBy = "default", **kw: Any) -> "Decision":
        return cls("deny", reason, decided_by, **kw)

    def refused(self, why: str) -> "Decision":
        """An `ask` nobody could answer becomes a deny that says what would allow it."""
        return replace(self, behavior="deny", reason=f"{self.reason}; {why}")

    def answered(self, approved: bool) -> "Decision":
        if approved:
            return replace(self, behavior="allow", reason=f"{self.reason}; approved by the user", decided_by="user")
        return replace(self, behavior="deny", reason=f"{self.reason}; declined by the user", decided_by="user")

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
