"""Network by domain for sandboxed commands and WebFetch: the policy (`policy`), the one place a
connection is decided, asked about, looked up, counted and recorded (`gate`), the proxy commands
reach it through (`proxy`, with `stage` inside the sandbox and `environment` telling programs
about it, `sniff` checking what a tunnel carries), a session's whole of it (`service`), and
WebFetch's fetching (`fetch`, `content`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562): a Bash call that never reaches the proxy loads the policy
# alone, not asyncio and the proxy.
_EXPORTS = {
    "Asker": ".gate", "ConnectionRecord": ".gate", "Gate": ".gate", "Ticket": ".gate",
    "Limits": ".policy", "NetworkPolicy": ".policy", "Verdict": ".policy",
    "Attachment": ".proxy", "Denial": ".proxy", "Proxy": ".proxy",
    "Resolver": ".resolve",
    "Network": ".service",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from .gate import Asker, ConnectionRecord, Gate, Ticket
    from .policy import Limits, NetworkPolicy, Verdict
    from .proxy import Attachment, Denial, Proxy
    from .resolve import Resolver
    from .service import Network


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(__name__ + module, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
