"""The one place a connection out of the sandbox is decided, asked about, looked up, counted
and recorded — for the proxy (every protocol) and for WebFetch alike.

`Gate.open(host, port, …)` returns a `Ticket`: allowed with the addresses to connect to (and
only those: the lookup is made once, here, and checked), or denied with a reason that names the
setting. The caller reports the bytes it moves (`Ticket.add`) and closes the ticket; each
ticket becomes one `ConnectionRecord` for the audit log.

Asking: with `askForNewDomains`, a name not on either list is put to the asker of the
connection (the person behind the call that started the command), at most once per name per
session — connections to the same name wait for the same answer — and for at most
`Limits.ask_timeout_seconds`. An answer is kept for the session; no answer within the time is a
denial for this connection only.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Callable

from ..domains import IPAddress
from .policy import ASK_KEY, NetworkPolicy, Verdict
from .resolve import ResolveError, Resolver, is_internal

# asker(host, port, reason) -> approved. Raising says nobody could be asked (the message says why).
Asker = Callable[[str, int, str], bool]
# Denials recorded past the connection limit, before further ones are only counted.
EXTRA_DENIED_RECORDS = 100


@dataclass
class ConnectionRecord:
    """One connection (or attempt), as the audit log keeps it."""

    origin: str  # "Bash" | "WebFetch"
    label: str  # the command or URL it served, shortened
    host: str
    port: int
    protocol: str  # "connect" | "http" | "socks5" | "fetch"
    decision: str  # "allowed" | "denied"
    reason: str
    address: str | None = None
    asked: bool = False
    bytes_up: int = 0
    bytes_down: int = 0
    started: float = field(default_factory=time.time)
    duration_ms: float = 0.0
    error: str | None = None


class Ticket:
    """One connection's permission and accounting. Thread-safe; `close` once (more is a no-op)."""

    def __init__(self, gate: "Gate", verdict: Verdict, record: ConnectionRecord,
                 addresses: list[IPAddress] | None = None):
        self.gate = gate
        self.verdict = verdict
        self.record = record
        self.addresses = addresses or []
        self._t0 = time.monotonic()
        self._closed = False
        self._lock = threading.Lock()

    @property
    def allowed(self) -> bool:
        return self.verdict.behavior == "allow"

    def connected(self, address: str) -> None:
        self.record.address = address

    def add(self, up: int = 0, down: int = 0) -> bool:
        """Count bytes moved; False once the session's byte limit is passed (stop moving)."""
        with self._lock:
            self.record.bytes_up += up
            self.record.bytes_down += down
        return self.gate._count_bytes(up + down)

    def deadline(self) -> float:
        """The monotonic time this connection must end by."""
        return self._t0 + self.gate.policy.limits.max_connection_seconds

    def close(self, error: str | None = None) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.record.duration_ms = round((time.monotonic() - self._t0) * 1000, 3)
            if error and self.record.error is None:
                self.record.error = error[:500]
        self.gate._closed(self)


class Gate:
    """One session's network policy in force: decisions, answers, counters, records."""

    def __init__(self, policy: NetworkPolicy, resolver: Resolver | None = None,
                 on_record: Callable[[ConnectionRecord], None] | None = None):
        self.policy = policy
        self.resolver = resolver or Resolver.from_environment(policy.limits.resolve_timeout_seconds)
        self.on_record = on_record
        self._lock = threading.Lock()
        self._answers: dict[str, bool] = {}  # a person's answer per name, for the session
        self._pending: dict[str, concurrent.futures.Future[bool]] = {}
        self._askers = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="codebelt-ask")
        self.connections = 0  # opened (allowed or not)
        self.open_now = 0
        self.bytes = 0
        self.suppressed = 0  # denials past the limit that were counted, not recorded
        self._closed_gate = False

    # -- deciding ----------------------------------------------------------------------------------
    def open(self, host: str, port: int, *, origin: str, label: str = "", protocol: str = "connect",
             asker: Asker | None = None) -> Ticket:
        """Decide one connection to `host` (any spelling) on `port`: a Ticket, allowed or denied."""
        record = ConnectionRecord(origin, label[:300], str(host)[:300], port, protocol, "denied", "")
        limits = self.policy.limits
        with self._lock:
            self.connections += 1
            over = self.connections > limits.max_connections
            crowded = self.open_now >= limits.max_concurrent
            spent = limits.max_bytes and self.bytes >= limits.max_bytes
            closed = self._closed_gate
            if not (over or crowded or spent or closed):
                self.open_now += 1
        if closed:
            return self._deny(record, Verdict("deny", record.host, port, "the session has ended"))
        if over:
            return self._deny(record, Verdict(
                "deny", record.host, port, f"this session already opened {limits.max_connections} connections "
                "(sandbox.network.maxConnections)", "sandbox.network.maxConnections"), quiet=True)
        if crowded:
            return self._deny(record, Verdict(
                "deny", record.host, port, f"{limits.max_concurrent} connections are open at once already"))
        if spent:
            return self._deny(record, Verdict(
                "deny", record.host, port, f"this session already moved {limits.max_bytes >> 20} MB "
                "(sandbox.network.maxMB)", "sandbox.network.maxMB"))
        try:
            return self._decide(record, host, port, asker)
        except BaseException:
            with self._lock:
                self.open_now -= 1
            raise

    def _decide(self, record: ConnectionRecord, host: str, port: int, asker: Asker | None) -> Ticket:
        verdict = self.policy.decide(host, port)
        record.host = verdict.host
        asked_name = verdict.behavior == "ask"
        if asked_name:  # before any lookup: a name nobody approved is not even sent to DNS
            verdict, record.asked = self._ask(verdict, asker, verdict.host)
        if verdict.behavior != "allow":
            return self._release(self._deny(record, verdict))
        if verdict.address:
            from ipaddress import ip_address

            addresses: list[IPAddress] = [ip_address(verdict.host)]
        else:
            try:
                addresses = self.resolver.resolve(verdict.host, port)
            except ResolveError as e:
                return self._release(self._deny(record, Verdict("deny", verdict.host, port, str(e))))
            internal = [str(a) for a in addresses if is_internal(a)]
            if internal and not verdict.exact:
                inside = (f"{verdict.host} leads to {', '.join(internal[:3])}, not a public address (loopback, "
                          "private, link-local or reserved)")
                if asked_name:  # approved as a name: whether it may lead inside is another question
                    question = Verdict("ask", verdict.host, port, f"{inside}; allow a connection there?",
                                       ASK_KEY)
                    verdict, _ = self._ask(question, asker, f"{verdict.host} -> {' '.join(internal)}")
                    if verdict.behavior == "allow":
                        verdict = replace(verdict, exact=True)
                else:
                    verdict = Verdict("deny", verdict.host, port,
                                      f"{inside}; a name reaches such an address only when "
                                      f"sandbox.network.allowedDomains names it exactly"
                                      + (f" (it matched {verdict.entry!r})" if verdict.entry else ""),
                                      "sandbox.network.allowedDomains", verdict.entry)
                if verdict.behavior != "allow":
                    return self._release(self._deny(record, verdict))
        record.decision, record.reason = "allowed", verdict.reason
        return Ticket(self, verdict, record, addresses)

    def refuse(self, host: str, port: int, *, origin: str, label: str = "", protocol: str = "connect",
               reason: str) -> Ticket:
        """Record a request refused before any decision (a protocol the proxy does not relay)."""
        record = ConnectionRecord(origin, label[:300], str(host)[:300], port, protocol, "denied", "")
        with self._lock:
            self.connections += 1
        return self._deny(record, Verdict("deny", record.host, port, reason), quiet=True)

    def _ask(self, verdict: Verdict, asker: Asker | None, key: str) -> tuple[Verdict, bool]:
        """Put `verdict`'s question to the asker, once per `key` for the session (a name; a name
        and the inside addresses it led to)."""
        host, port = verdict.host, verdict.port
        with self._lock:
            known = self._answers.get(key)
            pending = self._pending.get(key)
            if known is None and pending is None and asker is not None:
                pending = self._pending[key] = self._askers.submit(self._run_asker, asker, key, host, port,
                                                                   verdict.reason)
        if known is not None:
            return self._answered(verdict, known, earlier=True), False
        if pending is None:
            return Verdict("deny", host, port, f"{verdict.reason}, and no one can be asked here", verdict.setting), False
        timeout = self.policy.limits.ask_timeout_seconds
        try:
            approved = pending.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            return Verdict("deny", host, port, f"{verdict.reason}; nobody answered within {timeout:g} s "
                           f"(sandbox.network.askTimeoutSeconds)", verdict.setting), True
        except Exception as e:  # noqa: BLE001 - the asker says why nobody could be asked
            return Verdict("deny", host, port, f"{verdict.reason}; asking failed: {e}", verdict.setting), True
        return self._answered(verdict, approved, earlier=False), True

    def _run_asker(self, asker: Asker, key: str, host: str, port: int, reason: str) -> bool:
        try:
            approved = bool(asker(host, port, reason))
        except BaseException:
            with self._lock:
                self._pending.pop(key, None)  # not an answer: ask again next time
            raise
        with self._lock:
            self._answers[key] = approved
            self._pending.pop(key, None)
        return approved

    @staticmethod
    def _answered(verdict: Verdict, approved: bool, earlier: bool) -> Verdict:
        when = "earlier in this session" if earlier else "when asked"
        if approved:
            return Verdict("allow", verdict.host, verdict.port, f"{verdict.host} was allowed by the user {when}",
                           ASK_KEY)
        return Verdict("deny", verdict.host, verdict.port, f"{verdict.host} was declined by the user {when}", ASK_KEY)

    def answers(self) -> dict[str, bool]:
        with self._lock:
            return dict(self._answers)

    # -- accounting ----------------------------------------------------------------------------------
    def _deny(self, record: ConnectionRecord, verdict: Verdict, quiet: bool = False) -> Ticket:
        record.decision, record.reason = "denied", verdict.reason
        ticket = Ticket(self, verdict, record)
        ticket._closed = True
        if quiet and self.connections > self.policy.limits.max_connections + EXTRA_DENIED_RECORDS:
            with self._lock:
                self.suppressed += 1
            return ticket
        self._emit(record)
        return ticket

    def _release(self, ticket: Ticket) -> Ticket:
        with self._lock:
            self.open_now -= 1
        return ticket

    def _count_bytes(self, n: int) -> bool:
        with self._lock:
            self.bytes += n
            limit = self.policy.limits.max_bytes
            return not limit or self.bytes <= limit

    def _closed(self, ticket: Ticket) -> None:
        # recorded before it stops counting as open: once none is open, every one is recorded
        self._emit(ticket.record)
        if ticket.allowed:
            with self._lock:
                self.open_now -= 1

    def _emit(self, record: ConnectionRecord) -> None:
        if self.on_record is not None:
            try:
                self.on_record(record)
            except Exception:  # noqa: BLE001 - recording never breaks a connection
                pass

    def close(self) -> None:
        """Refuse new connections; stop asking. Open tickets are closed by their owners."""
        with self._lock:
            self._closed_gate = True
            pending = list(self._pending.values())
        for p in pending:
            p.cancel()
        self._askers.shutdown(wait=False, cancel_futures=True)
        self.resolver.close()
        if self.suppressed:
            self._emit(ConnectionRecord("session", "", "*", 0, "-", "denied",
                                        f"{self.suppressed} more denied attempts past the connection limit were not "
                                        "recorded one by one"))
