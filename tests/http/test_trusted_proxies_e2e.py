"""Behind a reverse proxy (issue 29): a real `licore serve` trusting its loopback peer
(LICORE_TRUSTED_PROXIES=127.0.0.1/32) limits, logs and addresses each forwarded client on its
own; without the setting the same headers are ignored and every request is the peer's."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import httpx
import pytest

from licore.services.signin import FAILURE_WINDOW, FAILURES_PER_NAME_AND_SOURCE, PACE_WINDOW
from tests.browser.site import add_person
from tests.support.server import Server, running_server

LIMIT = 3  # runtime calls a minute from one address


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
    behind_proxy.next_window()  # counts of its own, and a minute before they start again
    ones = [check(behind_proxy, "198.51.100.1") for _ in range(LIMIT + 1)]
    # A spoofed address left of the proxy's entry changes nothing.
    spoofed = check(behind_proxy, "192.0.2.99, 198.51.100.1")
    assert ones == [200] * LIMIT + [429] and spoofed == 429
    # Another client behind the same proxy has a limit of its own.
    assert check(behind_proxy, "198.51.100.2") == 200
    # The server's next minute: the first client's count starts again.
    behind_proxy.next_window()
    assert check(behind_proxy, "198.51.100.1") == 200


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

    behind_proxy.next_window(FAILURE_WINDOW)  # five failures in one window, however slow
    for _ in range(FAILURES_PER_NAME_AND_SOURCE):
        assert sign_in("not hers", "192.0.2.50").status_code == 401
        behind_proxy.next_window(PACE_WINDOW)  # a failure slows its source: wait it out
    assert sign_in(alice.password, "192.0.2.50").status_code == 429
    assert sign_in(alice.password, "198.51.100.60").status_code == 303


def test_headers_no_proxy_would_write_never_fail_a_request(behind_proxy: Server) -> None:
    for hostile in ({"Forwarded": 'for="unclosed'}, {"X-Forwarded-For": "[[::]]:x, ,,"},
                    {"Forwarded": "for=_hidden;for=1.2.3.4;;proto=\x7f"},
                    {"X-Forwarded-Host": "a b", "X-Forwarded-For": "198.51.100.5"}):
        assert httpx.get(f"{behind_proxy.url}/healthz", headers=hostile).status_code == 200


def test_without_the_setting_the_headers_are_ignored(trusting_none: Server) -> None:
    trusting_none.next_window()
    ones = [check(trusting_none, "198.51.100.1") for _ in range(LIMIT + 1)]
    other = check(trusting_none, "198.51.100.2", rid="ignored")
    # Every request is the loopback peer's: one limit for all of them.
    assert ones == [200] * LIMIT + [429] and other == 429
    assert access_line(trusting_none, "ignored")["client"] == "127.0.0.1"
