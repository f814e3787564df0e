"""What a host name and a domain entry of the network settings mean: one place for both.

A name is compared only in its one canonical spelling: lower case, without the trailing dot of a
fully qualified name, international labels in their ASCII (punycode) form after Unicode's
mapping (UTS 46), so `PyPI.org.`, `pypi.org` and a full-width `ｐｙｐｉ．ｏｒｇ` are the same name and
a look-alike with a Cyrillic letter is another. An address is never a name: every spelling the
C library or a URL parser would read as IPv4 (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`) or
IPv6 (`[::1]`, `::ffff:127.0.0.1`) is recognised as the address it stands for.

Entries of `sandbox.network.allowedDomains` / `deniedDomains`:
  `example.com`        that name, every port
  `*.example.com`      every name below it, not `example.com` itself
  `*`                  every name (never an address)
  `203.0.113.7`, `[2001:db8::1]`  that address (addresses are reached only when listed)
  any of these + `:443`  only that port
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_ASCII_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
_NUMERIC_LABEL = re.compile(r"^(?:0[xX][0-9a-fA-F]*|[0-9]+)$")
MAX_NAME = 253


class InvalidHost(ValueError):
    """Not a host name or address codebelt will look up or connect to."""


def _ipv4_part(text: str) -> int:
    if text[:2] in ("0x", "0X"):
        return int(text[2:] or "0", 16)
    if len(text) > 1 and text.startswith("0"):
        if not text.isdigit() or "8" in text or "9" in text:
            raise InvalidHost(f"{text!r} is not an octal number")
        return int(text, 8)
    return int(text)


def _ipv4(text: str) -> ipaddress.IPv4Address | None:
    """The address of a host spelled the way inet_aton and URL parsers read IPv4: one to four
    parts, each decimal, octal (leading 0) or hexadecimal (0x); the last part fills the rest.
    None when the last label is not numeric (then it is a name); InvalidHost when it is numeric
    but no address (a name cannot end in a numeric label either)."""
    parts = text.split(".")
    if parts and parts[-1] == "":
        parts.pop()
    if not parts or not _NUMERIC_LABEL.match(parts[-1]):
        return None
    if len(parts) > 4 or not all(_NUMERIC_LABEL.match(p) for p in parts):
        raise InvalidHost(f"{text!r} is neither a name nor an IPv4 address")
    values = [_ipv4_part(p) for p in parts]
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        raise InvalidHost(f"{text!r} is out of the IPv4 range")
    number = 0
    for v in head:
        number = number * 256 + v
    number = number * 256 ** (4 - len(head)) + last
    return ipaddress.IPv4Address(number)


def ip_literal(host: str) -> IPAddress | None:
    """The address `host` spells, or None when it is a name. A bracketed or colon-holding host
    is IPv6 (a zone index `%eth0` is refused: it names an interface of this machine)."""
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        if "%" in text:
            raise InvalidHost(f"{host!r}: an IPv6 zone index names a local interface")
        try:
            address = ipaddress.IPv6Address(text)
        except ValueError:
            raise InvalidHost(f"{host!r} is not an IPv6 address") from None
        return address.ipv4_mapped or address
    return _ipv4(text)


def canonical_name(host: str) -> str:
    """The one spelling of a host name (see the module docstring). Raises InvalidHost."""
    if not isinstance(host, str) or not host or len(host) > 1024:
        raise InvalidHost("an empty or overlong host name")
    text = host.strip()
    if any(ch.isspace() or ord(ch) < 0x21 or ord(ch) == 0x7F or ch in "/\\@?#%:[]" for ch in text):
        raise InvalidHost(f"{host!r} holds characters no host name has")
    if not text.isascii():
        import idna  # here: only a name that is not ASCII needs it (every settings load imports this module)

        try:
            text = idna.encode(text, uts46=True, transitional=False).decode("ascii")
        except (idna.IDNAError, UnicodeError) as e:
            raise InvalidHost(f"{host!r} is not a valid international name ({e})") from None
    text = text.lower()
    if text.endswith("."):
        text = text[:-1]
    labels = text.split(".")
    if not text or len(text) > MAX_NAME or not all(_ASCII_LABEL.match(label) for label in labels):
        raise InvalidHost(f"{host!r} is not a valid host name")
    return text


def canonical_host(host: str) -> str:
    """A name's canonical spelling, or an address in its standard text form (IPv4 dotted, IPv6
    compressed without brackets). Raises InvalidHost."""
    address = ip_literal(host) if isinstance(host, str) else None
    return str(address) if address is not None else canonical_name(host)


@dataclass(frozen=True)
class DomainEntry:
    """One entry of a domain list, parsed."""

    text: str  # as written
    kind: str  # "name" | "suffix" | "any" | "address"
    host: str  # canonical name, the suffix after `*.`, "" for `*`, or the address as text
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> "DomainEntry":
        if not isinstance(text, str) or not text.strip():
            raise InvalidHost("an empty entry")
        raw = text.strip()
        port = None
        m = re.match(r"^(.*?):(\d{1,5})$", raw)
        if m and (m.group(1).startswith("[") or ":" not in m.group(1)):
            raw, port = m.group(1), int(m.group(2))
            if not 0 < port < 65536:
                raise InvalidHost(f"{text!r}: port {port} is out of range")
        if raw == "*":
            return cls(text, "any", "", port)
        if raw.startswith("*."):
            return cls(text, "suffix", canonical_name(raw[2:]), port)
        if "*" in raw:
            raise InvalidHost(f"{text!r}: a wildcard may only stand alone or as a leading `*.`")
        address = ip_literal(raw)
        if address is not None:
            return cls(text, "address", str(address), port)
        return cls(text, "name", canonical_name(raw), port)

    def matches(self, host: str, port: int, address: bool = False) -> bool:
        """Whether this entry covers the canonical `host` (an address when `address`) on `port`."""
        if self.port is not None and self.port != port:
            return False
        if address or self.kind == "address":
            return address and self.kind == "address" and self.host == host
        if self.kind == "any":
            return True
        if self.kind == "suffix":
            return host.endswith("." + self.host)
        return host == self.host

    def covers(self, other: "DomainEntry") -> bool:
        """Whether everything `other` matches, this entry matches too."""
        if self.port is not None and other.port != self.port:
            return False
        if self.kind == "address" or other.kind == "address":
            return self.kind == other.kind == "address" and self.host == other.host
        if self.kind == "any":
            return True
        if other.kind == "any":
            return False
        if self.kind == "suffix":
            return other.host.endswith("." + self.host) or (other.kind == "suffix" and other.host == self.host)
        return other.kind == "name" and other.host == self.host


def parse_entries(entries: list[str] | tuple[str, ...]) -> tuple[DomainEntry, ...]:
    return tuple(DomainEntry.parse(e) for e in entries)


def check_entries(entries: list[str]) -> list[str]:
    """For the settings schema: the entries as written, or ValueError naming the bad one."""
    for e in entries:
        try:
            DomainEntry.parse(e)
        except InvalidHost as why:
            raise ValueError(f"{e!r} is not a domain entry: {why}. Write a name (pypi.org), a wildcard "
                             "(*.example.com), `*`, or an address, each optionally with :port") from None
    return entries


def narrower_list(user: list[str], workspace: list[str]) -> list[str]:
    """What a workspace's own list amounts to over the user's: only what both allow. The
    user's entries some workspace entry covers, and the workspace's entries some user entry
    covers (`*.example.com` over the workspace's `docs.example.com` keeps the latter)."""
    mine, theirs = parse_entries(user), parse_entries(workspace)
    kept = [u.text for u in mine if any(w.covers(u) for w in theirs)]
    kept += [w.text for w in theirs if any(u.covers(w) for u in mine) and w.text not in kept]
    return kept
