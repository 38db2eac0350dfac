"""Who a per-address limit counts: the source of a request, not its exact address.

An IPv4 address is a source. An IPv6 host is usually given a whole network (a /64 holds 2^64
addresses) and may answer from any address in it, so counting each IPv6 address alone let
one host pass any per-address limit by changing address. An IPv6 address is counted by its
network of `ipv6_prefix` bits (`LICORE_IPV6_PREFIX`, default 64: docs/operators.md); an
IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) is the IPv4 address it carries.
"""

from __future__ import annotations

import ipaddress

DEFAULT_IPV6_PREFIX = 64
LEAST_IPV6_PREFIX = 32  # wider would count a whole provider as one source


def source_of(address: str, ipv6_prefix: int = DEFAULT_IPV6_PREFIX) -> str:
    """The source `address` is counted as: the address itself for IPv4, its network for
    IPv6, and the text unchanged when it is no address (a Unix socket's peer, "unknown")."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    # A scope (fe80::1%eth0) names the host's interface, not the peer: one network.
    return str(ipaddress.IPv6Network((int(ip), ipv6_prefix), strict=False))
