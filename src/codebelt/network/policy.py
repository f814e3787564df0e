"""Which hosts a sandboxed command (or WebFetch) may reach: the domain lists, as a value.

The answer for a host and port, before any name is looked up:
- an entry of `deniedDomains` matches: denied (a denial always wins);
- an address (every spelling of one) is reached only when an entry lists that address: a name
  list says nothing about which machines sit behind raw addresses, and loopback or the local
  network are spelled that way (`127.0.0.1`, `0x7f.1`, `[::1]`);
- an entry of `allowedDomains` matches: allowed;
- otherwise: ask, when `askForNewDomains` is on and someone can be asked, else denied.

After the lookup (gate.py), a name whose addresses are not all global (loopback, private,
link-local, …) is refused unless an entry names it exactly: `*.example.com` must not reach
127.0.0.1 because someone's DNS says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..domains import DomainEntry, InvalidHost, canonical_name, ip_literal, parse_entries

ALLOWED_KEY = "sandbox.network.allowedDomains"
DENIED_KEY = "sandbox.network.deniedDomains"
ASK_KEY = "sandbox.network.askForNewDomains"


@dataclass(frozen=True)
class Limits:
    """Per-session bounds of the proxy (and WebFetch, which shares them)."""

    max_connections: int = 10_000  # connections opened in the session, allowed or not
    max_concurrent: int = 256  # open at once
    max_bytes: int = 16 << 30  # both directions, all connections of the session
    max_connection_seconds: float = 1_800.0  # one connection's lifetime
    ask_timeout_seconds: float = 120.0  # how long a connection waits for a person's answer
    connect_timeout_seconds: float = 30.0
    resolve_timeout_seconds: float = 10.0
    header_timeout_seconds: float = 30.0  # for the client's request to the proxy


@dataclass(frozen=True)
class Verdict:
    """A decision about one host:port. `behavior`: allow | deny | ask."""

    behavior: str
    host: str  # canonical: a name, or an address as text
    port: int
    reason: str  # for people and the model: what matched, naming the setting
    setting: str | None = None  # the key that decided, or that would change the answer
    entry: str | None = None  # the entry that matched, as written
    exact: bool = False  # an entry names this very host (not through a wildcard)
    address: bool = False  # the host is an address


@dataclass(frozen=True)
class NetworkPolicy:
    allowed: tuple[DomainEntry, ...] = ()
    denied: tuple[DomainEntry, ...] = ()
    ask_for_new: bool = False
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def from_lists(cls, allowed: list[str] | tuple[str, ...], denied: list[str] | tuple[str, ...] = (),
                   ask_for_new: bool = False, limits: Limits | None = None) -> "NetworkPolicy":
        return cls(parse_entries(allowed), parse_entries(denied), ask_for_new, limits or Limits())

    @property
    def reaches_anything(self) -> bool:
        """Whether any connection could ever be allowed (else the proxy is not worth starting)."""
        return bool(self.allowed) or self.ask_for_new

    def decide(self, host: str, port: int) -> Verdict:
        """The verdict for `host` as a client wrote it (any spelling) on `port`."""
        try:
            address = ip_literal(host)
            canonical = str(address) if address is not None else canonical_name(host)
        except InvalidHost as e:
            # no name: kept for the record and the refusal in an escaped, ASCII form, so that
            # control and bidi characters reach no terminal (`codebelt audit`) and no result
            return Verdict("deny", _shown(host), port, f"{e}")
        is_address = address is not None
        for entry in self.denied:
            if entry.matches(canonical, port, is_address):
                return Verdict("deny", canonical, port, f"{canonical} is denied by {entry.text!r} in {DENIED_KEY}",
                               DENIED_KEY, entry.text, address=is_address)
        matching = [e for e in self.allowed if e.matches(canonical, port, is_address)]
        if matching:
            # an entry naming this very host wins over a wildcard: it is what lets a name lead inside
            entry = next((e for e in matching if e.kind in ("name", "address")), matching[0])
            exact = entry.kind in ("name", "address")
            return Verdict("allow", canonical, port, f"{canonical} is allowed by {entry.text!r} in {ALLOWED_KEY}",
                           ALLOWED_KEY, entry.text, exact=exact, address=is_address)
        if is_address:
            return Verdict("deny", canonical, port,
                           f"{canonical} is an IP address: only names are reached unless {ALLOWED_KEY} lists the "
                           "address itself", ALLOWED_KEY, address=True)
        if self.ask_for_new:
            return Verdict("ask", canonical, port, f"{canonical} is not in {ALLOWED_KEY} ({ASK_KEY} is on)",
                           ALLOWED_KEY)
        return Verdict("deny", canonical, port, f"{canonical} is not in {ALLOWED_KEY}", ALLOWED_KEY)


def _shown(host: object) -> str:
    """A string that is no host name, printable and ASCII: its escapes stand for the rest."""
    return str(host)[:200].encode("unicode_escape").decode("ascii").replace(" ", "\\x20")
