"""Behind a reverse proxy (issue 29): a real `licore serve` trusting its loopback peer
(LICORE_TRUSTED_PROXIES=127.0.0.1/32) limits, logs and addresses each forwarded client on its
own; without the setting the same headers are ignored and every request is the peer's."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import httpx
import pytest

from tests.browser.site import add_person
from tests.support.server import Server, running_server

LIMIT = 3  # runtime calls a minute from one address
T = TypeVar("T")


@pytest.fixture(scope="module")
def behind_proxy(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, LICORE_TRUSTED_PROXIES="127.0.0.1/32",
                        LICORE_RUNTIME_IP_RATE_LIMIT=str(LIMIT),
                        LICORE_RUNTIME_KEY_RATE_LIMIT="100000") as s:
        yield s


@pytest.fixture(scope="module")
def trusting_none(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, LICORE_RUNTIME_IP_RATE_LIMIT=str(LIMIT),
                        LICORE_RUNTIME_KEY_RATE_LIMIT="100000") as s:
        yield s


def in_one_minute(run: Callable[[], T]) -> T:
    """`run`'s result from a run that began and ended in one rate-limit window (a minute):
    one that straddled a window's end saw the counts start again, and is run again."""
    for _ in range(3):
        minute = time.time() // 60
        result = run()
        if time.time() // 60 == minute:
            return result
    raise AssertionError("three runs in a row straddled a minute's end")


def check(server: Server, forwarded_for: str, rid: str = "") -> int:
    headers = {"X-Forwarded-For": forwarded_for}
    if rid:
        headers["X-Request-ID"] = rid
    call = {"key": "no-such-key", "product_id": "prd_x", "user_id": 1, "game_id": 2}
    return httpx.post(f"{server.url}/runtime/check", json=call, headers=headers).status_code


def access_line(server: Server, rid: str) -> dict[str, object]:
    # The access line is written just after the answer is sent.
    deadline = time.monotonic() + 10
    while f'"{rid}"' not in server.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    records = [json.loads(line) for line in server.log().splitlines() if line.strip()]
    mine = [r for r in records if r.get("request_id") == rid and r.get("message") == "request"]
    assert len(mine) == 1, mine
    line: dict[str, object] = mine[0]
    return line


def test_the_runtime_limit_applies_per_forwarded_client(behind_proxy: Server) -> None:
    def run() -> tuple[list[int], int]:
        first = [check(behind_proxy, "198.51.100.1") for _ in range(LIMIT + 1)]
        # A spoofed address left of the proxy's entry changes nothing.
        return first, check(behind_proxy, "192.0.2.99, 198.51.100.1")
    ones, spoofed = in_one_minute(run)
    assert ones == [200] * LIMIT + [429] and spoofed == 429
    # Another client behind the same proxy has a limit of its own.
    assert check(behind_proxy, "198.51.100.2") == 200


def test_the_access_line_names_the_forwarded_client(behind_proxy: Server) -> None:
    assert check(behind_proxy, "198.51.100.3", rid="fwd-runtime") == 200
    assert access_line(behind_proxy, "fwd-runtime")["client"] == "198.51.100.3"
    # A request through the whole middleware stack, with an IPv6 client in RFC 7239 form.
    r = httpx.get(f"{behind_proxy.url}/healthz", headers={
        "X-Request-ID": "fwd-page", "Forwarded": 'for="[2001:db8::7]:4711";proto=https'})
    assert r.status_code == 200
    assert access_line(behind_proxy, "fwd-page")["client"] == "2001:db8::7"


def test_urls_use_the_forwarded_scheme_and_host(behind_proxy: Server) -> None:
    r = httpx.post(f"{behind_proxy.url}/runtime/check/", json={}, headers={
        "X-Forwarded-For": "198.51.100.4", "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": "licore.example"})
    assert r.status_code == 307
    assert r.headers["location"] == "https://licore.example/runtime/check"


def test_a_strangers_wrong_passwords_lock_only_the_stranger(behind_proxy: Server) -> None:
    """Issue 29: five wrong passwords for alice from one address behind the proxy, then
    alice, at hers, signs in with her right one; the stranger stays locked."""
    alice = add_person(behind_proxy, "alice", "8101")

    def sign_in(password: str, address: str) -> httpx.Response:
        client = httpx.Client(base_url=behind_proxy.url,
                              headers={"X-Forwarded-For": address})
        token = re.search(r'name="csrf" value="([^"]+)"', client.get("/signin").text)
        assert token
        return client.post("/signin", data={"csrf": token.group(1), "username": alice.name,
                                             "password": password})

    for _ in range(5):
        assert sign_in("not hers", "192.0.2.50").status_code == 401
    assert sign_in(alice.password, "192.0.2.50").status_code == 429
    assert sign_in(alice.password, "198.51.100.60").status_code == 303


def test_headers_no_proxy_would_write_never_fail_a_request(behind_proxy: Server) -> None:
    for hostile in ({"Forwarded": 'for="unclosed'}, {"X-Forwarded-For": "[[::]]:x, ,,"},
                    {"Forwarded": "for=_hidden;for=1.2.3.4;;proto=\x7f"},
                    {"X-Forwarded-Host": "a b", "X-Forwarded-For": "198.51.100.5"}):
        assert httpx.get(f"{behind_proxy.url}/healthz", headers=hostile).status_code == 200


def test_without_the_setting_the_headers_are_ignored(trusting_none: Server) -> None:
    def run() -> tuple[list[int], int]:
        first = [check(trusting_none, "198.51.100.1") for _ in range(LIMIT + 1)]
        return first, check(trusting_none, "198.51.100.2", rid="ignored")
    ones, other = in_one_minute(run)
    # Every request is the loopback peer's: one limit for all of them.
    assert ones == [200] * LIMIT + [429] and other == 429
    assert access_line(trusting_none, "ignored")["client"] == "127.0.0.1"
