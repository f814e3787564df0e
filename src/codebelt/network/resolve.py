"""Looking a name up once, and what kind of address it gave.

The proxy looks a name up itself, checks the addresses, and connects to exactly those: a
second lookup by the client or the connecting code could answer differently (DNS rebinding).
`Resolver(overrides)` answers some names from a table first — how the tests make `allowed.test`
lead to a server on 127.0.0.1, and what `CODEBELT_NETWORK_RESOLVE=name=addr,…` sets in a
process (like curl's `--resolve`); the table is the user's, never a workspace's.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import os
import socket
from typing import Mapping

from ..domains import IPAddress, InvalidHost, canonical_name, ip_literal

ENV_OVERRIDES = "CODEBELT_NETWORK_RESOLVE"


class ResolveError(OSError):
    """The name has no usable address (or the lookup took too long)."""


# IPv6 prefixes that carry an IPv4 address in their last 32 bits, and the translators or
# tunnels that act on it: NAT64 (RFC 6052), SIIT's IPv4-translated form, IPv4-compatible.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # local-use NAT64 (RFC 8215): this network's own
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for or leads to (mapped, 6to4, Teredo's client, NAT64,
    IPv4-translated, IPv4-compatible), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64 or address in _TRANSLATED or (address in _COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_internal(address: IPAddress) -> bool:
    """Loopback, private, link-local, shared, reserved, unspecified, multicast: anything that is
    not a public unicast address somewhere else. An IPv6 address that carries an IPv4 one (a
    DNS answer of `64:ff9b::7f00:1` or `2002:a9fe:a9fe::`) is judged by that one too: a
    translator or tunnel on the way delivers to it."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _NAT64_LOCAL:
            return True
        inner = embedded_ipv4(address)
        if inner is not None and (not inner.is_global or inner.is_multicast):
            return True
    return not address.is_global or address.is_multicast


def parse_overrides(text: str | None) -> dict[str, list[IPAddress]]:
    """`name=addr[;addr…],name2=addr` → {canonical name: [addresses]}. Bad entries raise ValueError."""
    out: dict[str, list[IPAddress]] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, addrs = item.partition("=")
        if not sep:
            raise ValueError(f"{ENV_OVERRIDES}: {item!r} is not name=address")
        try:
            key = canonical_name(name)
            values = [ip_literal(a) for a in addrs.split(";") if a.strip()]
        except InvalidHost as e:
            raise ValueError(f"{ENV_OVERRIDES}: {item!r}: {e}") from None
        if not values or any(v is None for v in values):
            raise ValueError(f"{ENV_OVERRIDES}: {item!r} needs addresses")
        out[key] = [v for v in values if v is not None]
    return out


class Resolver:
    """getaddrinfo, bounded in time, with an optional table of names answered first."""

    def __init__(self, overrides: Mapping[str, list[IPAddress]] | None = None, timeout: float = 10.0):
        self.overrides = {canonical_name(k): list(v) for k, v in (overrides or {}).items()}
        self.timeout = timeout
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="codebelt-resolve")

    @classmethod
    def from_environment(cls, timeout: float = 10.0) -> "Resolver":
        return cls(parse_overrides(os.environ.get(ENV_OVERRIDES)), timeout)

    def resolve(self, name: str, port: int) -> list[IPAddress]:
        """The addresses of a canonical `name` (IPv4 first), without duplicates."""
        if name in self.overrides:
            return list(self.overrides[name])
        future = self._pool.submit(socket.getaddrinfo, name, port, 0, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            infos = future.result(timeout=self.timeout)
        except concurrent.futures.TimeoutError:
            raise ResolveError(f"looking up {name} took longer than {self.timeout:g} s") from None
        except socket.gaierror as e:
            raise ResolveError(f"{name} could not be looked up ({e.strerror or e})") from None
        out: list[IPAddress] = []
        for family, *_rest, sockaddr in sorted(infos, key=lambda i: i[0] != socket.AF_INET):
            try:
                address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            except ValueError:
                continue
            if family in (socket.AF_INET, socket.AF_INET6) and address not in out:
                out.append(address)
        if not out:
            raise ResolveError(f"{name} has no address")
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
