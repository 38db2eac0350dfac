"""Who the client is behind trusted reverse proxies: the `Forwarded` header (RFC 7239) and
`X-Forwarded-For` / `-Proto` / `-Host`, believed only from a peer in a trusted network.

The client is the right-most address of the chain that is not itself a trusted proxy: the
chain is walked from the TCP peer leftwards, past every hop whose address is trusted, and the
first other hop is the client. Everything left of it was written by the client or by
proxies nobody vouches for, so it is never read. A hop that names no usable address (an
obfuscated identifier such as `_hidden`, `unknown`, or text that does not parse) stops the
walk too, and the last trusted address reached is taken as the client: what lies beyond it
cannot be known, and nothing a client wrote may stand in for it.

When a request carries both `Forwarded` and `X-Forwarded-For` and they name different
clients, one of them was written by the client and passed through by a proxy that only
writes the other; which one cannot be told, so neither is believed (the peer is the client).
Pure: no I/O, only the `ipaddress` module.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence

import attrs

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_HOPS = 64  # a longer chain is not a path through real proxies; its far end is not read
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HOST = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?")


@attrs.frozen
class Hop:
    """One proxy's account of the request it received: from whom (`address`, None when it
    named no usable address), over which scheme and for which host."""

    address: Address | None
    proto: str | None = None
    host: str | None = None


@attrs.frozen
class Client:
    """The real client as the trusted proxies tell it: its address, and the scheme and host
    it asked for when the proxy that received its request said so."""

    address: str
    proto: str | None = None
    host: str | None = None


def parse_networks(text: str) -> tuple[Network, ...]:
    """`10.0.0.0/8, 127.0.0.1, ::1/128` as networks; a bare address is a network of one.
    ValueError naming the first entry that is not a network."""
    networks: list[Network] = []
    for part in text.split(","):
        entry = part.strip()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not a network like 10.0.0.0/8 or ::1") from None
    return tuple(networks)


def trusted(address: Address | None, networks: Sequence[Network]) -> bool:
    if address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # a dual-stack socket reports an IPv4 peer this way
    return any(address in network for network in networks
               if network.version == address.version)


def _address(text: str) -> Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def node_address(node: str) -> Address | None:
    """The address in a node (RFC 7239 section 6): `192.0.2.43`, `192.0.2.43:47011`,
    `[2001:db8::1]`, `[2001:db8::1]:4711`, and the bare IPv6 `2001:db8::1` that
    X-Forwarded-For carries. None for `unknown`, an obfuscated identifier or anything
    else."""
    node = node.strip()
    if node.startswith("["):
        inside, bracket, rest = node[1:].partition("]")
        if not bracket or (rest and not re.fullmatch(r":[0-9A-Za-z._]{1,16}", rest)):
            return None
        found = _address(inside)
        return found if isinstance(found, ipaddress.IPv6Address) else None
    if node.count(":") == 1:
        node, _, _port = node.partition(":")
    found = _address(node)
    if found is None or "%" in node:  # a zone id names an interface here, not a client
        return None
    return found


def _proto(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().lower()
    return value if value in ("http", "https") else None


def _host(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value if _HOST.fullmatch(value) and len(value) <= 255 else None


def _split_quoted(text: str, separator: str) -> list[str] | None:
    """`text` split at `separator` outside quoted strings; None if a quote is left open."""
    parts: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == separator and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    if quoted or escaped:
        return None
    parts.append("".join(current))
    return parts


def _unquote(value: str) -> str | None:
    if not value.startswith('"'):
        # Strictly a token; a host with its port or a bracketed address, which RFC 7239
        # wants quoted, is taken unquoted too, as proxies have been seen to send them.
        plain = _TOKEN.fullmatch(value) or _HOST.fullmatch(value) or node_address(value)
        return value if plain else None
    if len(value) < 2 or not value.endswith('"'):
        return None
    return re.sub(r"\\(.)", r"\1", value[1:-1])


def _forwarded_element(text: str) -> Hop | None:
    """One `Forwarded` element (`for=...;proto=...;host=...`), or None when it does not
    parse (then it stops the walk, as an unknown hop does)."""
    pairs = _split_quoted(text, ";")
    if pairs is None:
        return None
    seen: dict[str, str] = {}
    for pair in pairs:
        pair = pair.strip()
        if not pair:
            continue
        name, equals, raw = pair.partition("=")
        name = name.strip().lower()
        value = _unquote(raw.strip()) if equals else None
        if not _TOKEN.fullmatch(name) or value is None or name in seen:
            return None  # each parameter at most once (RFC 7239 section 4)
        seen[name] = value
    if "for" not in seen:
        return None
    return Hop(node_address(seen["for"]), _proto(seen.get("proto")), _host(seen.get("host")))


def _header_lines(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in headers if key.lower() == name]


def forwarded_hops(lines: Sequence[str]) -> list[Hop]:
    """Every element of the `Forwarded` lines, in order; an element (or a whole line, when
    a quote is left open in it) that does not parse is a hop with no address."""
    hops: list[Hop] = []
    for line in lines:
        elements = _split_quoted(line, ",")
        if elements is None:
            hops.append(Hop(None))
            continue
        for element in elements:
            if element.strip():
                hops.append(_forwarded_element(element) or Hop(None))
    return hops


def x_forwarded_hops(lines: Sequence[str]) -> list[Hop]:
    return [Hop(node_address(entry)) for line in lines for entry in line.split(",")
            if entry.strip()]


def _walk(peer: Address, hops: Sequence[Hop], networks: Sequence[Network]
          ) -> tuple[Address, Hop | None]:
    """The client's address, and the hop that named it (None when it is the peer or the
    last trusted hop because the walk stopped)."""
    last = peer
    for hop in reversed(hops[-MAX_HOPS:]):
        if hop.address is None:
            return last, None
        if not trusted(hop.address, networks):
            return hop.address, hop
        last = hop.address
    return last, (hops[0] if hops and len(hops) <= MAX_HOPS else None)


def _last(lines: Sequence[str]) -> str | None:
    entries = [e for line in lines for e in line.split(",") if e.strip()]
    return entries[-1] if entries else None


def _agreed(peer: Address, forwarded: Sequence[str], xff: Sequence[str],
            networks: Sequence[Network]) -> tuple[Address, Hop | None] | None:
    """The client both headers name (when both came), or None when they disagree: a proxy
    that writes one header usually passes a client-written copy of the other through."""
    found: list[tuple[Address, Hop | None]] = []
    if forwarded:
        found.append(_walk(peer, forwarded_hops(forwarded), networks))
    if xff:
        found.append(_walk(peer, x_forwarded_hops(xff), networks))
    if len({address for address, _hop in found}) != 1:
        return None
    return found[0]


def _scheme_and_host(headers: Sequence[tuple[bytes, bytes]], hop: Hop | None,
                     from_forwarded: bool) -> tuple[str | None, str | None]:
    if from_forwarded:
        return (hop.proto, hop.host) if hop is not None else (None, None)
    return (_proto(_last(_header_lines(headers, b"x-forwarded-proto"))),
            _host(_last(_header_lines(headers, b"x-forwarded-host"))))


def real_client(peer: str, headers: Iterable[tuple[bytes, bytes]],
                networks: Sequence[Network]) -> Client | None:
    """The client behind the proxies, or None when the peer's own address stands (the
    peer is not trusted, or the headers say nothing usable). `headers` as ASGI gives them."""
    peer_address = _address(peer)
    if not networks or not trusted(peer_address, networks):
        return None
    assert peer_address is not None
    headers = list(headers)
    forwarded = _header_lines(headers, b"forwarded")
    xff = _header_lines(headers, b"x-forwarded-for")
    if not forwarded and not xff:
        return None
    found = _agreed(peer_address, forwarded, xff, networks)
    if found is None:
        return None
    address, hop = found
    proto, host = _scheme_and_host(headers, hop, bool(forwarded))
    if address == peer_address and proto is None and host is None:
        return None
    return Client(str(address), proto, host)
