"""Which IP addresses a webhook may be sent to: the rule table for server-side request
forgery, from the IANA special-purpose address registries for IPv4 and IPv6 (and the
multicast and reserved ranges around them).

Every block of those registries is refused, including the few marked "globally reachable"
(anycast relays, AS112 sinks, AMT): none of them is where a seller's receiver lives, and a
refusal costs nothing there while an allowance could reach infrastructure. An IPv6 address
outside the global unicast space 2000::/3 is refused, since nothing else is assigned for
ordinary hosts. Where an IPv6 address carries an IPv4 address inside it (IPv4-mapped,
NAT64, 6to4, Teredo), the carried address is what a relay or translator would connect to,
so it is judged by the IPv4 rules too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# The IPv4 addresses an IPv6 block carries; None where the whole block is refused.
Unwrap = Callable[[ipaddress.IPv6Address], Sequence[ipaddress.IPv4Address]] | None


def _low32(address: ipaddress.IPv6Address) -> Sequence[ipaddress.IPv4Address]:
    return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]


def _sixtofour(address: ipaddress.IPv6Address) -> Sequence[ipaddress.IPv4Address]:
    carried = address.sixtofour
    return [] if carried is None else [carried]


def _teredo(address: ipaddress.IPv6Address) -> Sequence[ipaddress.IPv4Address]:
    # The server address as written, the client address de-obfuscated (bits inverted).
    pair = address.teredo
    return [] if pair is None else list(pair)


_V4: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "this network"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation (TEST-NET-1)"),
    ("192.31.196.0/24", "AS112 DNS sink"),
    ("192.52.193.0/24", "automatic multicast tunneling"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private"),
    ("192.175.48.0/24", "AS112 direct delegation"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation (TEST-NET-2)"),
    ("203.0.113.0/24", "documentation (TEST-NET-3)"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("255.255.255.255/32", "limited broadcast"),
)

_V6: tuple[tuple[str, str, Unwrap], ...] = (
    ("::/128", "unspecified", None),
    ("::1/128", "loopback", None),
    ("::ffff:0:0/96", "IPv4-mapped", _low32),
    ("64:ff9b::/96", "NAT64 translation", _low32),
    ("64:ff9b:1::/48", "local-use NAT64 translation", None),
    ("100::/64", "discard-only", None),
    ("100:0:0:1::/64", "dummy prefix", None),
    ("2001::/23", "IETF protocol assignments", None),
    ("2001::/32", "Teredo", _teredo),
    ("2001:db8::/32", "documentation", None),
    ("2002::/16", "6to4", _sixtofour),
    ("2620:4f:8000::/48", "AS112 direct delegation", None),
    ("3fff::/20", "documentation", None),
    ("5f00::/16", "segment routing", None),
    ("fc00::/7", "unique local (private)", None),
    ("fe80::/10", "link-local", None),
    ("fec0::/10", "site-local (deprecated)", None),
    ("ff00::/8", "multicast", None),
)

# Longest prefix first, so a block's more specific entry (Teredo inside 2001::/23) wins.
V4_RULES: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(sorted(
    ((ipaddress.IPv4Network(n), why) for n, why in _V4), key=lambda r: -r[0].prefixlen))
V6_RULES: tuple[tuple[ipaddress.IPv6Network, str, Unwrap], ...] = tuple(sorted(
    ((ipaddress.IPv6Network(n), why, unwrap) for n, why, unwrap in _V6),
    key=lambda r: -r[0].prefixlen))
GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")


def refusal(address: Address) -> str | None:
    """Why a webhook may not be sent to `address` (the block and what it is), or None."""
    if isinstance(address, ipaddress.IPv4Address):
        for network, why in V4_RULES:
            if address in network:
                return f"{why} ({network})"
        return None
    plain = ipaddress.IPv6Address(int(address))  # without a scope id
    for v6, why, unwrap in V6_RULES:
        if plain in v6:
            if unwrap is None:
                return f"{why} ({v6})"
            for carried in unwrap(plain):
                inner = refusal(carried)
                if inner is not None:
                    return f"{why} ({v6}) carrying {carried}: {inner}"
            return None
    if plain not in GLOBAL_UNICAST:
        return f"outside global unicast ({GLOBAL_UNICAST})"
    return None
