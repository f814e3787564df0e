"""What Bash and WebFetch share about the network: the session's policy from the settings, the
question put to a person about a new domain, and the sentence that explains a refusal."""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

from ..network.policy import ALLOWED_KEY, Limits, NetworkPolicy
from ..permissions.approvers import ApprovalRequest
from ..permissions.decision import Decision
from ..tool import ToolContext

if TYPE_CHECKING:
    from ..network.gate import Asker
    from ..network.proxy import Denial


def policy_from_settings(value: Any) -> NetworkPolicy:
    """`sandbox.network`: false → nothing; true → every name (commands then bypass the proxy;
    WebFetch still refuses addresses and names leading inside); an object → its lists."""
    if value is True:
        return NetworkPolicy.from_lists(["*"])
    if value is False or value is None:
        return NetworkPolicy()
    limits = Limits(max_connections=value.max_connections, max_bytes=value.max_mb << 20,
                    max_connection_seconds=float(value.max_connection_seconds),
                    ask_timeout_seconds=float(value.ask_timeout_seconds))
    return NetworkPolicy.from_lists(value.allowed_domains, value.denied_domains, value.ask_for_new_domains, limits)


def asker(ctx: ToolContext, what: str) -> "Asker | None":
    """How a connection of this call asks about a new domain: the session's approver, run in
    this call's context (an MCP call's client is found through it), from whichever thread the
    connection waits in. None when nobody may be asked (no approver; mode dontAsk)."""
    approver = ctx.approver
    if approver is None or ctx.settings.permissions.default_mode == "dontAsk":
        return None
    context = contextvars.copy_context()
    tool = ctx.tool_name

    def ask(host: str, port: int, reason: str) -> bool:
        request = ApprovalRequest(
            tool=tool, input={"host": host, "port": port, "for": what[:500]},
            decision=Decision.ask(reason, "sandbox", suggestion=f'add "{host}" to {ALLOWED_KEY} in your settings'),
            detail=f"connections to {host} (the first to port {port}) for {what[:200]}", while_running=True)
        return bool(context.copy().run(approver, request))

    return ask


def refusal_note(denials: "list[Denial]", limit: int = 5) -> str | None:
    """The sentence a result gets when the proxy refused some of its connections."""
    if not denials:
        return None
    shown = "; ".join(f"{f'[{d.host}]' if ':' in d.host else d.host}:{d.port} ({d.reason})" for d in denials[:limit])
    more = f" and {len(denials) - limit} more" if len(denials) > limit else ""
    settings = {d.setting for d in denials if d.setting}
    how = (" Only the user can allow a name: it goes in sandbox.network.allowedDomains of their own settings "
           "(~/.config/codebelt/settings.json or --settings); a workspace's files cannot add one."
           if ALLOWED_KEY in settings else "")
    return f"The sandbox's network proxy refused: {shown}{more}.{how}"
