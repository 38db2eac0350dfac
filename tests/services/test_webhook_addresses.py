"""The webhook address rules (`licore.addresses`), URL by URL: each special-purpose block
of the IANA registries is refused when an endpoint is saved (`refusal`) and again when a
message is sent (`send`, after its own look-up), IPv4 carried inside IPv6 (IPv4-mapped,
NAT64, 6to4, Teredo) is judged by what it carries, and ordinary public addresses pass.
Literal addresses resolve without DNS, so the table runs offline."""

from __future__ import annotations

import ipaddress

import pytest

from adapters_events import SignedSender
from licore.addresses import refusal


def _teredo(server: str, client: str) -> str:
    """A Teredo address for `server` and `client` (the client stored with its bits
    inverted, as RFC 4380 obfuscates it)."""
    value = (0x20010000 << 96) | (int(ipaddress.IPv4Address(server)) << 64)
    value |= (0xFFFFFFFF ^ int(ipaddress.IPv4Address(client)))
    return f"[{ipaddress.IPv6Address(value)}]"


REFUSED = [
    # IPv4 special-purpose registry, multicast and reserved
    "http://0.0.0.0/", "http://0.1.2.3/", "http://10.0.0.1/", "http://10.255.255.255/",
    "http://100.64.0.1/", "http://100.127.255.254/", "http://127.0.0.1/",
    "http://127.8.9.10:8080/", "http://169.254.169.254/latest/meta-data",
    "http://172.16.0.1/", "http://172.31.255.255/", "http://192.0.0.1/",
    "http://192.0.0.9/", "http://192.0.0.170/", "http://192.0.2.10/", "http://192.31.196.1/",
    "http://192.52.193.1/", "http://192.88.99.1/", "http://192.168.1.1/",
    "http://192.175.48.1/", "http://198.18.0.1/", "http://198.19.255.1/",
    "http://198.51.100.7/", "http://203.0.113.9/", "http://224.0.0.1/",
    "http://239.255.255.250/", "http://240.0.0.1/", "http://255.255.255.255/",
    "https://100.100.100.200/",
    # IPv6 special-purpose registry and what lies outside global unicast
    "http://[::]/", "http://[::1]/", "http://[::1]:8080/h", "http://[64:ff9b:1::a00:1]/",
    "http://[100::1]/", "http://[100:0:0:1::5]/", "http://[2001:2::1]/",
    "http://[2001:1::1]/", "http://[2001:10::1]/", "http://[2001:20::1]/",
    "http://[2001:db8::1]/", "http://[2620:4f:8000::1]/", "http://[3fff::1]/",
    "http://[5f00::1]/", "http://[fc00::1]/", "http://[fd12:3456::1]/", "http://[fe80::1]/",
    "http://[fec0::1]/", "http://[ff02::1]/", "http://[::7f00:1]/", "http://[1::1]/",
    "http://[4000::1]/", "http://[e000::1]/",
    # IPv4 carried inside IPv6
    "http://[::ffff:127.0.0.1]/", "http://[::ffff:10.0.0.1]/", "http://[::ffff:100.64.0.1]/",
    "http://[::ffff:169.254.169.254]/", "http://[64:ff9b::127.0.0.1]/",
    "http://[64:ff9b::a9fe:a9fe]/", "http://[64:ff9b::100.64.0.1]/",
    "http://[2002:7f00:1::1]/", "http://[2002:a00:1::1]/", "http://[2002:c0a8:101::1]/",
    "http://[2002:6440:1::1]/",
    f"http://{_teredo('8.8.8.8', '127.0.0.1')}/",
    f"http://{_teredo('8.8.8.8', '10.0.0.1')}/",
    f"http://{_teredo('192.168.0.1', '8.8.4.4')}/",
    f"http://{_teredo('8.8.8.8', '100.64.0.1')}/",
]

ALLOWED = [
    "http://8.8.8.8/", "https://1.1.1.1/hook", "http://100.63.255.255/",
    "http://100.128.0.1/", "http://172.32.0.1/", "http://192.0.1.1/", "http://198.20.0.1/",
    "http://223.255.255.254/", "http://[2606:4700::1111]/", "http://[2a00:1450::1]/",
    "http://[::ffff:8.8.8.8]/", "http://[64:ff9b::8.8.8.8]/", "http://[2002:808:808::1]/",
    f"http://{_teredo('8.8.8.8', '1.1.1.1')}/",
]

MALFORMED = ["http://[::1/", "http://[::1]x/", "http://[zz::1]/", "http://host:99999/",
             "http://host:port/", "http:///nohost", "http://[::1]]/", "http://\u0000/"]


def test_the_table_is_large() -> None:
    assert len(REFUSED) + len(ALLOWED) + len(MALFORMED) >= 60


@pytest.mark.parametrize("url", REFUSED)
async def test_a_special_purpose_address_is_refused_at_save_and_at_send(url: str) -> None:
    strict = SignedSender()
    why = await strict.refusal(url)
    assert why is not None and "special-purpose addresses" in why, (url, why)
    sent = await strict.send(url, "msg_1", 1_800_000_000, "{}", ["whsec_AAAA"])
    assert not sent.done and sent.status is None and sent.error == why, url
    assert await SignedSender(allow_private=True).refusal(url) is None, url


@pytest.mark.parametrize("url", ALLOWED)
async def test_a_public_address_passes(url: str) -> None:
    assert await SignedSender().refusal(url) is None, url


@pytest.mark.parametrize("url", MALFORMED)
async def test_a_malformed_url_is_refused_not_raised(url: str) -> None:
    assert await SignedSender().refusal(url) is not None, url
    sent = await SignedSender().send(url, "msg_1", 1_800_000_000, "{}", ["whsec_AAAA"])
    assert not sent.done and sent.status is None, url


def test_the_most_specific_block_decides() -> None:
    # Teredo sits inside 2001::/23 (refused whole) but is judged by what it carries.
    assert refusal(ipaddress.ip_address("2001:0:808:808::fefe:fefe")) is None  # 1.1.1.1
    assert refusal(ipaddress.ip_address("2001:0:808:808::1")) is not None  # 255.255.255.254
    assert "Teredo" in (refusal(ipaddress.ip_address(_teredo("8.8.8.8", "127.0.0.1")[1:-1]))
                        or "")
    assert "6to4" in (refusal(ipaddress.ip_address("2002:7f00:1::1")) or "")
