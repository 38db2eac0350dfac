"""Races that really race (issue 13, cases 2 and 9): `licore serve --workers 4` on SQLite and
PostgreSQL, a thousand simultaneous attempts at one thing each: the same grant, the same
title (slug), the same device-code claim, the same nonce. Every answer is a clean status
(never a 5xx), and the effect in the database happens exactly once (or exactly as many times
as the requests that succeeded)."""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from tests.http.e2e import (
    People,
    add_client,
    auth,
    decide,
    license_key,
    owner_key,
    setup_people,
)
from tests.support.crowd import crowd
from tests.support.server import Server, running_server

ATTEMPTS = 1000
ALL = ("products:read products:write licenses:read licenses:write packages:read "
       "packages:write")
pytestmark = pytest.mark.slow


# Limits far above the burst, so every answer is about the race and not the pace; and a
# request waits for a pooled connection as long as the burst takes on a loaded machine (the
# suite runs in parallel workers beside these thousand-request bursts), so a 503 here can
# only be the race the test is about, never the pool's ordinary busy wait.
PATIENT = {"workers": "4", "LICORE_PARTNER_RATE_LIMIT": "100000",
           "LICORE_RUNTIME_KEY_RATE_LIMIT": "100000", "LICORE_RUNTIME_IP_RATE_LIMIT": "100000",
           "LICORE_DATABASE_BUSY_WAIT": "110"}


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, **PATIENT) as s:
        yield s


@pytest.fixture(scope="module")
def people(server: Server) -> People:
    return setup_people(server.database_url, "5")


@pytest.fixture(scope="module")
def key(server: Server, people: People) -> str:
    return owner_key(server, people, ALL)


def burst(server: Server, path: str, bodies: list[dict[str, Any]],
          headers: dict[str, str] | None = None) -> list[httpx.Response]:
    """Every body POSTed at once, each on a connection of its own. A request that got no
    answer at all fails the test with the server's log."""

    answers = crowd(server.url, [(path, b, headers) for b in bodies])
    lost = Counter(repr(a) for a in answers if isinstance(a, BaseException))
    assert not lost, (lost, server.log()[-4000:])
    return [a for a in answers if isinstance(a, httpx.Response)]


def statuses(answers: list[httpx.Response]) -> Counter[int]:
    return Counter(a.status_code for a in answers)


def rows(server: Server, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    url = server.database_url
    if url.startswith("sqlite"):
        import sqlite3

        con = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            return list(con.execute(sql, params))
        finally:
            con.close()
    with psycopg.connect(url) as conn:
        return [tuple(r) for r in conn.execute(sql.replace("?", "%s"), params)]


def test_one_title_a_thousand_times_gives_a_thousand_slugs(server: Server, key: str) -> None:
    title = f"Same {secrets.token_hex(3)}"
    answers = burst(server, "/v1/products", [{"title": title}] * ATTEMPTS, auth(key))
    assert statuses(answers) == {200: ATTEMPTS}, [a.text for a in answers
                                                  if a.status_code != 200][:3]
    slugs = {a.json()["slug"] for a in answers}
    assert len(slugs) == ATTEMPTS
    stored = rows(server, "SELECT slug FROM products WHERE title = ?", (title,))
    assert {r[0] for r in stored} == slugs


def test_one_grant_a_thousand_times_gives_one_license(server: Server, key: str) -> None:
    product = httpx.post(f"{server.url}/v1/products", json={"title": "Granted"},
                         headers=auth(key)).json()["id"]
    answers = burst(server, "/v1/licenses", [{"product_id": product, "user": "777"}] * ATTEMPTS,
                    auth(key))
    assert statuses(answers) == {200: 1, 409: ATTEMPTS - 1}, statuses(answers)
    assert {a.json()["error"] for a in answers if a.status_code == 409} == {"already_owned"}
    assert rows(server, "SELECT COUNT(*) FROM licenses WHERE product_id = ?",
                (product,)) == [(1,)]


def test_one_approved_code_claimed_a_thousand_times_gives_one_key(
        server: Server, people: People) -> None:
    client = add_client(server.database_url, f"Racer {secrets.token_hex(2)}", "x",
                        "library:read")
    flow = httpx.post(f"{server.url}/auth/device/code",
                      json={"client_id": client, "scope": "library:read"}).json()
    decide(server.database_url, people.buyer_id, flow["user_code"], True)
    answers = burst(server, "/auth/device/token",
                    [{"device_code": flow["device_code"],
                      "grant_type": "urn:ietf:params:oauth:grant-type:device_code"}] * ATTEMPTS)
    assert statuses(answers) == {200: 1, 400: ATTEMPTS - 1}, statuses(answers)
    assert {a.json()["error"] for a in answers if a.status_code == 400} <= {
        "expired_token", "slow_down"}
    assert rows(server, "SELECT COUNT(*) FROM api_keys WHERE client_id = ?",
                (client,)) == [(1,)]


def test_one_nonce_a_thousand_times_unlocks_once(server: Server, key: str,
                                                 people: People) -> None:
    product = httpx.post(f"{server.url}/v1/products", json={"title": "Nonce"},
                         headers=auth(key)).json()["id"]
    httpx.post(f"{server.url}/v1/packages/settings", headers=auth(key),
               json={"product_id": product, "unlock_data": {"a": 1}}).raise_for_status()
    httpx.post(f"{server.url}/v1/licenses", headers=auth(key),
               json={"product_id": product, "user": "888"}).raise_for_status()
    body = {"user_id": "888", "product_id": product,
            "key": license_key(server, product, "888"), "nonce": secrets.token_hex(16)}
    answers = burst(server, "/runtime/unlock", [body] * ATTEMPTS)
    assert statuses(answers) == {200: ATTEMPTS}, statuses(answers)
    assert sum(a.json()["ok"] is True for a in answers) == 1
    assert rows(server, "SELECT COUNT(*) FROM nonces WHERE nonce = ?",
                (body["nonce"],)) == [(1,)]


def test_a_fresh_server_takes_a_thousand_first_requests_without_a_5xx(server: Server,
                                                                      key: str) -> None:
    """Issue 13, case 9: each worker connects before it serves, so the first requests of a
    fresh server do not race to open a pool."""
    with running_server(server.database_url, **PATIENT) as fresh:
        answers = crowd(fresh.url, [("/v1/products", None, auth(key))] * ATTEMPTS)
        got = Counter(a.status_code if isinstance(a, httpx.Response) else repr(a)
                      for a in answers)
        assert got == {200: ATTEMPTS}, (got, fresh.log()[-3000:])


def test_a_thousand_transfers_of_one_license_move_it_once(server: Server, key: str) -> None:
    """Issue 27: a thousand transfers of one license to a thousand different people at
    once. Exactly one moves it; every other finds it gone (`400`), none is a 5xx, and one
    person holds it."""
    product = httpx.post(f"{server.url}/v1/products", json={"title": "Moved"},
                         headers=auth(key)).json()["id"]
    httpx.post(f"{server.url}/v1/licenses", headers=auth(key),
               json={"product_id": product, "user": "9001"}).raise_for_status()
    old_key = license_key(server, product, "9001")
    answers = burst(server, "/v1/licenses/transfer",
                    [{"product_id": product, "from_user": "9001", "to_user": str(30000 + i)}
                     for i in range(ATTEMPTS)], auth(key))
    assert statuses(answers) == {200: 1, 400: ATTEMPTS - 1}, statuses(answers)
    assert {a.json()["error"] for a in answers if a.status_code == 400} == {"invalid_request"}
    winner = next(a.json() for a in answers if a.status_code == 200)
    taker = winner["license"]["platform_id"]
    assert rows(server, "SELECT platform_id, state, transferred_to FROM licenses "
                "WHERE product_id = ? ORDER BY platform_id", (product,)) == sorted([
        (taker, "active", None), ("9001", "inactive", taker)])
    check = httpx.post(f"{server.url}/runtime/check", json={
        "user_id": "9001", "product_id": product, "key": old_key})
    assert check.json()["success"] is False  # the old key died with the move


def test_a_thousand_renewals_of_one_license_add_a_thousand_terms(server: Server,
                                                                 key: str) -> None:
    product = httpx.post(f"{server.url}/v1/products", json={"title": "Renewed"},
                         headers=auth(key)).json()["id"]
    httpx.post(f"{server.url}/v1/licenses", headers=auth(key),
               json={"product_id": product, "user": "9002",
                     "duration_days": 1}).raise_for_status()
    [(start,)] = rows(server, "SELECT expires_at FROM licenses WHERE product_id = ?",
                      (product,))
    answers = burst(server, "/v1/licenses/renew",
                    [{"product_id": product, "user": "9002", "duration_days": 1}] * ATTEMPTS,
                    auth(key))
    assert statuses(answers) == {200: ATTEMPTS}, statuses(answers)
    # Each renewal saw the one before it: none of the terms was lost to a race.
    assert rows(server, "SELECT expires_at FROM licenses WHERE product_id = ?",
                (product,)) == [(start + ATTEMPTS * 86400,)]
    ends = sorted(a.json()["license"]["expires_at"] for a in answers)
    assert len(set(ends)) == ATTEMPTS
