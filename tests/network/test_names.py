"""Names and addresses in their one spelling, domain entries, and the policy's answer: tables."""

from __future__ import annotations

import pytest

from codebelt.domains import DomainEntry, InvalidHost, canonical_host, narrower_list
from codebelt.network import NetworkPolicy

# (as a client writes it, canonical) — every spelling of one host is that host
SPELLINGS = [
    ("pypi.org", "pypi.org"), ("PyPI.ORG", "pypi.org"), ("pypi.org.", "pypi.org"),
    ("ｐｙｐｉ．ｏｒｇ", "pypi.org"),  # full-width letters and dot (UTS 46 maps them)
    ("Bücher.example", "xn--bcher-kva.example"), ("xn--bcher-kva.example", "xn--bcher-kva.example"),
    ("pypі.org", "xn--pyp-lhd.org"),  # Cyrillic і: another name, not pypi.org
    ("under_score.example.com", "under_score.example.com"),
    ("1.2.3.4.example.com", "1.2.3.4.example.com"),
    # IPv4 in the spellings inet_aton and URL parsers accept
    ("127.0.0.1", "127.0.0.1"), ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("0x7F.1", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"), ("0177.1", "127.0.0.1"), ("127.1", "127.0.0.1"), ("127.0.1", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"), ("0", "0.0.0.0"), ("0x", "0.0.0.0"), ("10.1", "10.0.0.1"),
    ("169.254.169.254", "169.254.169.254"), ("0xa9fea9fe", "169.254.169.254"),
    # IPv6, bracketed or not; v4-mapped is the v4 address
    ("[::1]", "::1"), ("::1", "::1"), ("[0:0:0:0:0:0:0:1]", "::1"), ("[::ffff:127.0.0.1]", "127.0.0.1"),
    ("[::ffff:7f00:1]", "127.0.0.1"), ("[::]", "::"), ("[FE80::1]", "fe80::1"),
]
INVALID = ["", " ", "a b", "evil.com/x", "evil.com@other", "evil.com:80", "a..b", ".", "-a.com", "a-.com",
           "example.123", "1.2.3.999", "1.2.3.4.5", "08.1", "[fe80::1%eth0]", "[::g]", "a\x00b", "a\nb",
           "x" * 64 + ".com", ("a." * 127) + "com"]


@pytest.mark.parametrize("written,canonical", SPELLINGS)
def test_every_spelling_of_a_host_is_one_host(written, canonical):
    assert canonical_host(written) == canonical


@pytest.mark.parametrize("written", INVALID)
def test_what_is_no_host_is_refused(written):
    with pytest.raises(InvalidHost):
        canonical_host(written)


# (entries allowed, entries denied, host, port, behavior)
DECISIONS = [
    (["pypi.org"], [], "pypi.org", 443, "allow"),
    (["pypi.org"], [], "PYPI.ORG.", 443, "allow"),
    (["pypi.org"], [], "files.pypi.org", 443, "deny"),
    (["*.pythonhosted.org"], [], "files.pythonhosted.org", 443, "allow"),
    (["*.pythonhosted.org"], [], "a.b.pythonhosted.org", 443, "allow"),
    (["*.pythonhosted.org"], [], "pythonhosted.org", 443, "deny"),  # the wildcard is below the name only
    (["*.pythonhosted.org"], [], "evilpythonhosted.org", 443, "deny"),
    (["*"], [], "anything.example", 80, "allow"),
    (["*"], ["*.evil.com"], "x.evil.com", 443, "deny"),
    (["x.evil.com"], ["*.evil.com"], "x.evil.com", 443, "deny"),  # a denial wins
    (["github.com:443"], [], "github.com", 443, "allow"),
    (["github.com:443"], [], "github.com", 22, "deny"),
    (["github.com"], ["github.com:22"], "github.com", 22, "deny"),
    (["github.com"], ["github.com:22"], "github.com", 443, "allow"),
    # addresses: reached only when listed, whatever the spelling and whatever `*` says
    (["*"], [], "127.0.0.1", 80, "deny"),
    (["*"], [], "2130706433", 80, "deny"),
    (["*"], [], "[::1]", 80, "deny"),
    (["*"], [], "203.0.113.7", 443, "deny"),
    (["203.0.113.7"], [], "203.0.113.7", 443, "allow"),
    (["203.0.113.7"], [], "0xcb007107", 443, "allow"),
    (["[2001:db8::1]:443"], [], "2001:db8::1", 443, "allow"),
    (["[2001:db8::1]:443"], [], "2001:db8::1", 80, "deny"),
    (["127.0.0.1"], [], "::ffff:127.0.0.1", 80, "allow"),
    ([], [], "pypi.org", 443, "deny"),
    (["pypi.org"], [], "pypi.org/", 443, "deny"),  # not a host: refused, never looked up
]


@pytest.mark.parametrize("allowed,denied,host,port,behavior", DECISIONS)
def test_the_policy_decides_by_name(allowed, denied, host, port, behavior):
    assert NetworkPolicy.from_lists(allowed, denied).decide(host, port).behavior == behavior


def test_a_new_name_is_asked_about_only_when_asking_is_on():
    assert NetworkPolicy.from_lists(["pypi.org"], ask_for_new=True).decide("example.com", 443).behavior == "ask"
    assert NetworkPolicy.from_lists(["pypi.org"], ask_for_new=True).decide("127.0.0.1", 443).behavior == "deny"
    assert NetworkPolicy.from_lists([], ["example.com"], ask_for_new=True).decide("example.com", 1).behavior == "deny"


def test_reasons_name_the_setting_and_the_entry():
    policy = NetworkPolicy.from_lists(["*.example.com"], ["bad.example.com"])
    v = policy.decide("bad.example.com", 443)
    assert v.setting == "sandbox.network.deniedDomains" and "'bad.example.com'" in v.reason
    v = policy.decide("ok.example.com", 443)
    assert v.setting == "sandbox.network.allowedDomains" and "'*.example.com'" in v.reason and not v.exact


@pytest.mark.parametrize("allowed", [["*", "registry.internal"], ["registry.internal", "*"],
                                     ["*.internal", "registry.internal:443"]])
def test_a_name_listed_exactly_is_exact_whatever_else_matches(allowed):
    """The exact entry (which lets a name lead to a private address) wins over a wildcard listed
    before it; on another port only the wildcard matches."""
    v = NetworkPolicy.from_lists(allowed).decide("registry.internal", 443)
    assert v.behavior == "allow" and v.exact and v.entry.startswith("registry.internal")
    v = NetworkPolicy.from_lists(allowed).decide("registry.internal", 8443)
    assert v.behavior == "allow" and v.exact == (":443" not in "".join(allowed))


# (user's list, workspace's list, what the workspace's amounts to)
NARROWED = [
    (["*.example.com", "pypi.org"], ["docs.example.com"], ["docs.example.com"]),
    (["*.example.com"], ["*.example.com"], ["*.example.com"]),
    (["pypi.org"], ["pypi.org", "evil.com"], ["pypi.org"]),
    (["pypi.org"], ["pypi.org:443"], ["pypi.org:443"]),
    (["pypi.org:443"], ["pypi.org"], ["pypi.org:443"]),
    (["*"], ["github.com"], ["github.com"]),
    (["*"], ["127.0.0.1"], []),  # `*` is names only: an address is not narrower than it
    (["github.com"], ["*"], ["github.com"]),
    ([], ["pypi.org"], []),
]


@pytest.mark.parametrize("user,workspace,kept", NARROWED)
def test_a_workspace_list_keeps_only_what_both_allow(user, workspace, kept):
    assert sorted(narrower_list(user, workspace)) == sorted(kept)


@pytest.mark.parametrize("entry", ["*.*.com", "ex*ample.com", "*example.com", "pypi.org:0", "pypi.org:70000", "a b"])
def test_bad_entries_are_refused(entry):
    with pytest.raises(InvalidHost):
        DomainEntry.parse(entry)


# (an address a lookup answered, whether it leads inside this machine or its network) — an IPv6
# address that carries an IPv4 one is judged by that one too
LOOKED_UP = [
    ("93.184.215.14", False), ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", False),
    ("127.0.0.1", True), ("10.0.0.7", True), ("169.254.169.254", True), ("100.100.100.200", True), ("0.0.0.0", True),
    ("::1", True), ("::", True), ("fe80::1", True), ("fd00:ec2::254", True), ("ff02::1", True),
    ("::ffff:127.0.0.1", True), ("::ffff:169.254.169.254", True),
    ("::127.0.0.1", True), ("::a9fe:a9fe", True),  # IPv4-compatible
    ("::ffff:0:7f00:1", True),  # IPv4-translated (SIIT)
    ("64:ff9b::7f00:1", True), ("64:ff9b::a9fe:a9fe", True), ("64:ff9b::5db8:d70e", False),  # NAT64
    ("64:ff9b:1::5db8:d70e", True),  # local-use NAT64: this network's own translator
    ("2002:7f00:1::", True), ("2002:a9fe:a9fe::1", True), ("2002:5db8:d70e::1", False),  # 6to4
]


@pytest.mark.parametrize("address,inside", LOOKED_UP)
def test_what_a_lookup_may_lead_to(address, inside):
    import ipaddress

    from codebelt.network.resolve import is_internal

    assert is_internal(ipaddress.ip_address(address)) == inside


@pytest.mark.parametrize("answer", ["64:ff9b::7f00:1", "2002:7f00:1::1", "::127.0.0.1", "::ffff:0:a9fe:a9fe"])
def test_a_wildcard_name_is_not_led_inside_through_ipv6(answer):
    """A name matched by `*.example.com` whose DNS answer carries a loopback or link-local IPv4
    address in an IPv6 one is refused like the IPv4 answer itself."""
    import ipaddress

    from codebelt.network import Gate, Resolver

    gate = Gate(NetworkPolicy.from_lists(["*.example.com"]),
                Resolver({"evil.example.com": [ipaddress.ip_address(answer)]}))
    try:
        ticket = gate.open("evil.example.com", 443, origin="Bash")
        assert not ticket.allowed and "not a public address" in ticket.verdict.reason
    finally:
        gate.close()


class CountingResolver:
    """Answers from a script of answers per name, and records every lookup."""

    def __init__(self, answers: dict[str, list[list[str]]]):
        import ipaddress

        self.answers = {k: [[ipaddress.ip_address(a) for a in v] for v in vs] for k, vs in answers.items()}
        self.looked_up: list[str] = []

    def resolve(self, name: str, port: int):
        self.looked_up.append(name)
        return self.answers[name].pop(0)

    def close(self):
        pass


def test_each_connection_is_looked_up_once_and_goes_where_it_was_checked():
    """DNS rebinding: the first answer is public, the next one loopback. The first connection
    gets exactly the checked addresses (nothing looks the name up again to connect); the second,
    looked up anew, is refused."""
    from codebelt.network import Gate

    resolver = CountingResolver({"rebind.example.com": [["93.184.215.14"], ["127.0.0.1"]]})
    gate = Gate(NetworkPolicy.from_lists(["*.example.com"]), resolver)
    try:
        first = gate.open("rebind.example.com", 443, origin="Bash")
        assert first.allowed and [str(a) for a in first.addresses] == ["93.184.215.14"]
        first.close()
        second = gate.open("rebind.example.com", 443, origin="Bash")
        assert not second.allowed and "127.0.0.1" in second.verdict.reason
        assert resolver.looked_up == ["rebind.example.com", "rebind.example.com"]
    finally:
        gate.close()


def test_a_name_not_allowed_is_never_looked_up():
    """Nothing leaves by DNS for a name the lists refuse or the person declines: the decision
    comes before the lookup."""
    from codebelt.network import Gate

    resolver = CountingResolver({})
    gate = Gate(NetworkPolicy.from_lists(["pypi.org"], ["secret.evil.com"], ask_for_new=True), resolver)
    try:
        for host in ("secret.evil.com", "0x7f.1", "[::1]", "data-a1b2c3.exfil.example"):
            assert not gate.open(host, 443, origin="Bash", asker=lambda *a: False).allowed
        assert resolver.looked_up == []
    finally:
        gate.close()


@pytest.mark.parametrize("host", ["a\x1b[2J.test", "evil\u202egnp.test", "a\nHost: x", "x\x00y", "a b"])
def test_what_is_no_name_is_recorded_escaped(host):
    """A host that is no name is refused, and kept for the audit log and the result only in a
    printable ASCII form: no escape sequence or bidi override reaches a terminal."""
    from codebelt.network import Gate

    records = []
    gate = Gate(NetworkPolicy.from_lists(["*"]), CountingResolver({}), on_record=records.append)
    try:
        ticket = gate.open(host, 443, origin="Bash")
        assert not ticket.allowed
        for text in (ticket.verdict.host, records[0].host):
            assert text.isascii() and text.isprintable() and " " not in text, text
        for text in (ticket.verdict.reason, records[0].reason):
            assert text.isprintable(), text
    finally:
        gate.close()
