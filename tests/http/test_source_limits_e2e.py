"""Issue 46, item 2, against a real `licore serve` on SQLite and PostgreSQL: the per-address
limits count sources (an IPv4 address, an IPv6 /64), and a stranger's wrong passwords slow
and block the stranger, never the account's owner at an address that never failed.

The server trusts its loopback peer as a proxy (LICORE_TRUSTED_PROXIES), so one test client
speaks for many addresses through X-Forwarded-For, as clients behind a real proxy reach it
(tests/http/test_nginx_e2e.py). Rate windows are the server's clock's (Server.next_window)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from licore.services.signin import (
    FAILURE_WINDOW,
    FAILURES_PER_NAME,
    FAILURES_PER_NAME_AND_SOURCE,
    PACE_WINDOW,
)
from tests.browser.site import Person, add_person
from tests.support.server import Server, running_server

RUNTIME_IP_LIMIT = 20
ONE_64 = [f"2001:db8:46:1:{i + 1:x}::7" for i in range(60)]  # sixty addresses of one /64


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, LICORE_TRUSTED_PROXIES="127.0.0.1/32",
                        LICORE_RUNTIME_IP_RATE_LIMIT=str(RUNTIME_IP_LIMIT),
                        LICORE_RUNTIME_KEY_RATE_LIMIT="100000") as s:
        yield s


def check(server: Server, address: str) -> int:
    call = {"key": "no-such-key", "product_id": "prd_x", "user_id": 1, "game_id": 2}
    return httpx.post(f"{server.url}/runtime/check", json=call,
                      headers={"X-Forwarded-For": address}).status_code


def test_sixty_runtime_calls_from_one_ipv6_network_meet_one_limit(server: Server) -> None:
    """The audit's: 60 calls from one /64 all passed a per-address limit of 20."""
    server.next_window()
    statuses = [check(server, address) for address in ONE_64]
    assert statuses == [200] * RUNTIME_IP_LIMIT + [429] * (60 - RUNTIME_IP_LIMIT)
    # The next /64 is another source, and an IPv4 address is its own.
    assert check(server, "2001:db8:46:2::7") == 200
    assert check(server, "198.51.100.46") == 200


def refusals(server: Server) -> dict[str, float]:
    """`licore_signin_refusals_total` by reason, from /metrics."""
    found = re.findall(r'^licore_signin_refusals_total\{reason="([^"]+)"\} (\S+)$',
                       httpx.get(f"{server.url}/metrics").text, re.MULTILINE)
    return {reason: float(n) for reason, n in found}


def sign_in(server: Server, person: Person, password: str, address: str) -> int:
    client = httpx.Client(base_url=server.url, headers={"X-Forwarded-For": address})
    token = re.search(r'name="csrf" value="([^"]+)"', client.get("/signin").text)
    assert token
    return client.post("/signin", data={"csrf": token.group(1), "username": person.name,
                                         "password": password}).status_code


@pytest.mark.parametrize(("tag", "addresses", "checked"), [  # tag: a platform id
    # One source: each round its first wrong password is checked, the rest wait (slowed).
    ("4601", ONE_64[:11], FAILURES_PER_NAME_AND_SOURCE),
    # Eleven sources: every wrong password is checked until the name has had 50; then a
    # source that has failed at it is blocked for it (55 were checked before).
    ("4602", [f"203.0.113.{i + 1}" for i in range(11)], FAILURES_PER_NAME),
], ids=["11 addresses of one /64", "11 IPv4 addresses"])
def test_eleven_addresses_with_five_wrong_passwords_each_never_lock_the_owner_out(
        server: Server, tag: str, addresses: list[str], checked: int) -> None:
    """The audit's: after these, the owner's right password from another network was
    refused (429) for the rest of the window."""
    alice = add_person(server, f"alice{tag}", tag)
    before = refusals(server)
    server.next_window(FAILURE_WINDOW)  # all of it in one window of the server's clock
    answers = []
    for _ in range(FAILURES_PER_NAME_AND_SOURCE):
        answers += [sign_in(server, alice, "not hers", a) for a in addresses]
        server.next_window(PACE_WINDOW)
    assert answers.count(401) == checked, answers
    assert answers.count(429) == len(answers) - checked, answers
    # What the operator sees: each refusal by why (docs/operators.md).
    grew = {why: n - before.get(why, 0) for why, n in refusals(server).items()}
    assert grew.pop("wrong") == checked, grew
    assert sum(grew.values()) == len(answers) - checked, grew
    assert {why for why, n in grew.items() if n} == (
        {"pace", "name-source"} if tag == "4601" else {"name"}), grew
    # Each source that failed is blocked for the name now, with the right password too.
    assert sign_in(server, alice, alice.password, addresses[0]) == 429
    assert sign_in(server, alice, alice.password, "198.51.100.200") == 303
    assert sign_in(server, alice, alice.password, "2001:db8:99::1") == 303
