"""The real client behind trusted proxies (licore.forwarded): a table of peers and headers,
and properties over generated chains."""

from __future__ import annotations

import ipaddress
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from licore.forwarded import Client, node_address, parse_networks, real_client

TRUSTED = parse_networks("127.0.0.1/32, 10.0.0.0/8, ::1, fd00::/8")
NGINX = "127.0.0.1"
CLIENT_A = "203.0.113.7"

Headers = list[tuple[bytes, bytes]]


def h(*pairs: tuple[str, str]) -> Headers:
    return [(k.lower().encode(), v.encode("latin-1")) for k, v in pairs]


CASES: list[tuple[str, str, Headers, Client | None]] = [
    # -- from an untrusted peer every header is ignored: spoofing is impossible
    ("untrusted peer, XFF", CLIENT_A, h(("X-Forwarded-For", "1.2.3.4")), None),
    ("untrusted peer, Forwarded", CLIENT_A, h(("Forwarded", "for=1.2.3.4")), None),
    ("untrusted peer, proto", CLIENT_A, h(("X-Forwarded-For", "1.2.3.4"),
                                          ("X-Forwarded-Proto", "https")), None),
    ("untrusted v6 peer", "2001:db8::9", h(("X-Forwarded-For", "1.2.3.4")), None),
    ("peer in no network of another family", "::ffff:1.2.3.4",
     h(("X-Forwarded-For", "9.9.9.9")), None),
    ("peer not an address", "unix-socket", h(("X-Forwarded-For", "9.9.9.9")), None),
    # -- a trusted peer with nothing to say leaves the peer
    ("trusted peer, no header", NGINX, h(("Host", "x")), None),
    ("trusted peer, empty XFF", NGINX, h(("X-Forwarded-For", "")), None),
    # -- X-Forwarded-For
    ("one hop", NGINX, h(("X-Forwarded-For", CLIENT_A)), Client(CLIENT_A)),
    ("client spoofs to the left", NGINX, h(("X-Forwarded-For", f"6.6.6.6, {CLIENT_A}")),
     Client(CLIENT_A)),
    ("two trusted hops skipped", NGINX,
     h(("X-Forwarded-For", f"6.6.6.6, {CLIENT_A}, 10.1.2.3, 10.9.9.9")), Client(CLIENT_A)),
    ("several header lines in order", NGINX,
     h(("X-Forwarded-For", "6.6.6.6"), ("X-Forwarded-For", f"{CLIENT_A}, 10.0.0.2")),
     Client(CLIENT_A)),
    ("all trusted: the left-most", NGINX, h(("X-Forwarded-For", "10.0.0.5, 10.0.0.6")),
     Client("10.0.0.5")),
    ("bare IPv6", NGINX, h(("X-Forwarded-For", "2001:db8::1")), Client("2001:db8::1")),
    ("IPv4 with a port", NGINX, h(("X-Forwarded-For", "203.0.113.7:5123")),
     Client(CLIENT_A)),
    ("bracketed IPv6 with a port", NGINX, h(("X-Forwarded-For", "[2001:db8::1]:4711")),
     Client("2001:db8::1")),
    ("garbage hop stops at the last trusted", NGINX,
     h(("X-Forwarded-For", "1.2.3.4, not-an-address, 10.0.0.3")), Client("10.0.0.3")),
    ("garbage next to the peer: the peer", NGINX, h(("X-Forwarded-For", "garbage")), None),
    ("unknown: the peer", NGINX, h(("X-Forwarded-For", "unknown")), None),
    ("zone id refused", NGINX, h(("X-Forwarded-For", "fe80::1%eth0")), None),
    ("garbage left of the client not read", NGINX,
     h(("X-Forwarded-For", f"\"]]]][[, ;;=, {CLIENT_A}")), Client(CLIENT_A)),
    ("proto and host", NGINX, h(("X-Forwarded-For", CLIENT_A), ("X-Forwarded-Proto", "https"),
                                ("X-Forwarded-Host", "licore.example")),
     Client(CLIENT_A, "https", "licore.example")),
    ("proto list: right-most", NGINX, h(("X-Forwarded-For", CLIENT_A),
                                        ("X-Forwarded-Proto", "http, HTTPS")),
     Client(CLIENT_A, "https")),
    ("odd proto ignored", NGINX, h(("X-Forwarded-For", CLIENT_A),
                                   ("X-Forwarded-Proto", "gopher")), Client(CLIENT_A)),
    ("host with a bad character ignored", NGINX,
     h(("X-Forwarded-For", CLIENT_A), ("X-Forwarded-Host", "evil.example/path")),
     Client(CLIENT_A)),
    ("proto alone from the proxy itself", NGINX, h(("X-Forwarded-For", "10.0.0.4"),
                                                   ("X-Forwarded-Proto", "https")),
     Client("10.0.0.4", "https")),
    # -- Forwarded (RFC 7239)
    ("RFC example", NGINX, h(("Forwarded", 'for="_gazonk"')), None),
    ("for with proto and host", NGINX,
     h(("Forwarded", f"for={CLIENT_A};proto=https;host=licore.example")),
     Client(CLIENT_A, "https", "licore.example")),
    ("names are case-blind", NGINX, h(("Forwarded", f"For={CLIENT_A};PROTO=https")),
     Client(CLIENT_A, "https")),
    ("quoted IPv6 with port", NGINX, h(("Forwarded", 'for="[2001:db8:cafe::17]:4711"')),
     Client("2001:db8:cafe::17")),
    ("chain: spoofed left ignored", NGINX,
     h(("Forwarded", f"for=6.6.6.6;proto=http, for={CLIENT_A};proto=https, for=10.0.0.2")),
     Client(CLIENT_A, "https")),
    ("obfuscated hop stops at the trusted one", NGINX,
     h(("Forwarded", "for=1.2.3.4, for=_hidden, for=10.0.0.8")), Client("10.0.0.8")),
    ("quoted comma inside a value", NGINX,
     h(("Forwarded", f'for=6.6.6.6;host="a,b", for={CLIENT_A}')), Client(CLIENT_A)),
    ("open quote: the whole line unusable", NGINX, h(("Forwarded", f'for="{CLIENT_A}')), None),
    ("repeated parameter is malformed", NGINX, h(("Forwarded", "for=1.2.3.4;for=5.6.7.8")),
     None),
    ("element without for", NGINX, h(("Forwarded", "proto=https")), None),
    ("escaped quote in a quoted host", NGINX,
     h(("Forwarded", f'for={CLIENT_A};host="a\\"b"')), Client(CLIENT_A)),
    ("unquoted IPv6 tolerated", NGINX, h(("Forwarded", "for=[2001:db8::2]")),
     Client("2001:db8::2")),
    ("empty elements skipped", NGINX, h(("Forwarded", f",, for={CLIENT_A} ,")),
     Client(CLIENT_A)),
    ("Forwarded over IPv6 trusted peer", "::1", h(("Forwarded", f"for={CLIENT_A}")),
     Client(CLIENT_A)),
    ("IPv4-mapped trusted peer", "::ffff:127.0.0.1", h(("X-Forwarded-For", CLIENT_A)),
     Client(CLIENT_A)),
    # -- both headers: believed only when they agree
    ("both agree", NGINX, h(("Forwarded", f"for={CLIENT_A};proto=https"),
                            ("X-Forwarded-For", CLIENT_A)), Client(CLIENT_A, "https")),
    ("both disagree: neither", NGINX, h(("Forwarded", "for=6.6.6.6"),
                                        ("X-Forwarded-For", CLIENT_A)), None),
]


@pytest.mark.parametrize(("peer", "headers", "expected"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_real_client_table(peer: str, headers: Headers, expected: Client | None) -> None:
    assert real_client(peer, headers, TRUSTED) == expected


def test_with_no_trusted_network_nothing_is_believed() -> None:
    assert real_client(NGINX, h(("X-Forwarded-For", CLIENT_A)), ()) is None


def test_the_table_is_large() -> None:
    assert len(CASES) >= 30


def test_networks_parse_and_refuse() -> None:
    assert parse_networks("") == ()
    assert parse_networks(" 127.0.0.1 , 10.0.0.0/8,") == (
        ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("10.0.0.0/8"))
    with pytest.raises(ValueError, match=re.escape("'10.0.0.0/33'")):
        parse_networks("127.0.0.1/32,10.0.0.0/33")
    with pytest.raises(ValueError, match=re.escape("'proxy.local'")):
        parse_networks("proxy.local")


ipv4 = st.ip_addresses(v=4).map(str)
ipv6 = st.ip_addresses(v=6).map(str)
text = st.text(st.characters(min_codepoint=1, max_codepoint=255), max_size=80)


untrusted = st.one_of(ipv4, ipv6).filter(
    lambda a: not any(ipaddress.ip_address(a) in n for n in TRUSTED))


@given(peer=untrusted, chain=st.lists(st.one_of(ipv4, ipv6, text), max_size=6),
       forwarded=st.lists(text, max_size=3))
def test_an_untrusted_peer_is_never_overridden(peer: str, chain: list[str],
                                               forwarded: list[str]) -> None:
    headers = h(("X-Forwarded-For", ", ".join(chain)),
                *(("Forwarded", f) for f in forwarded))
    assert real_client(peer, headers, TRUSTED) is None


@given(spoofed=st.lists(st.one_of(ipv4, ipv6, text.filter(lambda t: "," not in t)),
                        max_size=5),
       client=ipv4.filter(lambda a: not a.startswith(("10.", "127."))),
       proxies=st.lists(st.integers(0, 2**24 - 1).map(
           lambda n: str(ipaddress.IPv4Address(0x0A000000 + n))), max_size=4))
def test_the_client_is_the_right_most_untrusted_whatever_comes_before(
        spoofed: list[str], client: str, proxies: list[str]) -> None:
    chain = ", ".join([*spoofed, client, *proxies])
    got = real_client(NGINX, h(("X-Forwarded-For", chain)), TRUSTED)
    assert got == Client(client)


@given(headers=st.lists(st.tuples(st.sampled_from(["forwarded", "x-forwarded-for",
                                                   "x-forwarded-proto", "x-forwarded-host"]),
                                  text), max_size=4))
def test_garbage_never_raises_and_names_an_address(headers: list[tuple[str, str]]) -> None:
    got = real_client(NGINX, h(*headers), TRUSTED)
    if got is not None:
        assert node_address(got.address) is not None
        assert got.proto in (None, "http", "https")
