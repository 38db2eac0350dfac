"""Idempotency-Key on the Partner API (issue 28, item 1; docs/api.md "Retrying safely")
over real HTTP against a real `licore serve`, on SQLite and PostgreSQL: a retry gets the
first answer byte for byte and changes nothing; another request with the key is refused;
bad keys are refused before anything runs; keys are each studio's own; refusals are not
kept; and a grant records the sale it came from."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.http.e2e import People, auth, owner_key, setup_people
from tests.support.server import Server, running_server

ALL = "products:read products:write licenses:read licenses:write"


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


@pytest.fixture(scope="module")
def key(server: Server) -> str:
    people: People = setup_people(server.database_url, "28")
    return owner_key(server, people, ALL)


@pytest.fixture(scope="module")
def other_key(server: Server) -> str:
    """A key of another studio."""
    people: People = setup_people(server.database_url, "29")
    return owner_key(server, people, ALL)


def post(server: Server, path: str, key: str, body: Any, idem: str | None = None,
         raw: bytes | None = None) -> httpx.Response:
    headers = auth(key) | ({"Idempotency-Key": idem} if idem is not None else {})
    if raw is not None:
        headers["Content-Type"] = "application/json"
        return httpx.post(f"{server.url}/v1{path}", content=raw, headers=headers)
    return httpx.post(f"{server.url}/v1{path}", json=body, headers=headers)


def product(server: Server, key: str) -> str:
    made: str = post(server, "/products", key, {"title": "Hub item"}).json()["id"]
    return made


def licenses(server: Server, key: str, product_id: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{server.url}/v1/licenses", params={"product_id": product_id},
                  headers=auth(key))
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["licenses"]
    return found


def new_key() -> str:
    return f"receipt-{secrets.token_hex(8)}"


def test_a_retried_grant_gets_the_first_answer_byte_for_byte(server: Server,
                                                              key: str) -> None:
    pid, idem = product(server, key), new_key()
    body = {"product_id": pid, "user": "7001", "source": "developer_product",
            "purchase_id": "9f1c2-purchase"}
    first = post(server, "/licenses", key, body, idem)
    assert first.status_code == 200, first.text
    assert "idempotent-replayed" not in first.headers
    # The same object spelt differently (key order, spaces) is the same request: a game
    # server's JSONEncode orders keys as it likes.
    respelt = json.dumps(dict(reversed(body.items())), indent=2).encode()
    again = post(server, "/licenses", key, None, idem, raw=respelt)
    assert again.status_code == 200
    assert again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers["content-type"] == first.headers["content-type"]
    assert "ratelimit-remaining" in again.headers
    [license] = licenses(server, key, pid)
    assert license["id"] == first.json()["license"]["id"]
    assert (license["source"], license["purchase_id"]) == ("developer_product",
                                                          "9f1c2-purchase")


def test_the_key_with_another_request_is_refused_in_the_error_shape(server: Server,
                                                                     key: str) -> None:
    pid, idem = product(server, key), new_key()
    assert post(server, "/licenses", key, {"product_id": pid, "user": "7002"},
                idem).status_code == 200
    for path, body in (("/licenses", {"product_id": pid, "user": "7003"}),
                       ("/licenses/pause", {"product_id": pid, "user": "7002"})):
        r = post(server, path, key, body, idem)
        assert r.status_code == 422, r.text
        assert r.json() == {"error": "idempotency_key_reused",
                            "error_description": r.json()["error_description"]}
        assert "Idempotency-Key" in r.json()["error_description"]
    assert [lic["platform_id"] for lic in licenses(server, key, pid)] == ["7002"]
    assert licenses(server, key, pid)[0]["state"] == "active"  # the pause did not run


@pytest.mark.parametrize("bad", ["", "a b", "x" * 256, "caf\u00e9", "tab\there"])
def test_a_malformed_key_is_refused_and_nothing_runs(server: Server, key: str,
                                                     bad: str) -> None:
    pid = product(server, key)
    r = httpx.post(f"{server.url}/v1/licenses", json={"product_id": pid, "user": "7004"},
                   headers=[(b"Authorization", f"Bearer {key}".encode()),
                            (b"Idempotency-Key", bad.encode("latin-1"))])
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "invalid_request"
    assert "Idempotency-Key" in r.json()["error_description"]
    assert licenses(server, key, pid) == []


def test_the_longest_key_passes_and_a_bad_bearer_is_refused_first(server: Server,
                                                                   key: str) -> None:
    pid = product(server, key)
    r = post(server, "/licenses", key, {"product_id": pid, "user": "7005"}, "k" * 255)
    assert r.status_code == 200, r.text
    unauthenticated = post(server, "/licenses", "lk_nope", {"product_id": pid, "user": "1"},
                           "")
    assert unauthenticated.status_code == 401


def test_two_header_lines_are_refused(server: Server, key: str) -> None:
    pid = product(server, key)
    r = httpx.post(f"{server.url}/v1/licenses", json={"product_id": pid, "user": "7006"},
                   headers=[("Authorization", f"Bearer {key}"), ("Idempotency-Key", "a"),
                            ("Idempotency-Key", "b")])
    assert r.status_code == 400, r.text
    assert licenses(server, key, pid) == []


def test_two_studios_keys_never_meet(server: Server, key: str, other_key: str) -> None:
    idem = new_key()
    mine, theirs = product(server, key), product(server, other_key)
    a = post(server, "/licenses", key, {"product_id": mine, "user": "7007"}, idem)
    b = post(server, "/licenses", other_key, {"product_id": theirs, "user": "7007"}, idem)
    assert (a.status_code, b.status_code) == (200, 200), b.text
    assert "idempotent-replayed" not in b.headers
    assert len(licenses(server, other_key, theirs)) == 1


def test_a_refusal_is_not_kept_and_the_retry_runs_again(server: Server, key: str) -> None:
    pid, idem = product(server, key), new_key()
    body = {"product_id": pid, "user": "7008"}
    assert post(server, "/licenses", key, body).status_code == 200
    refused = post(server, "/licenses", key, body, idem)
    assert refused.status_code == 409 and refused.json()["error"] == "already_owned"
    again = post(server, "/licenses", key, body, idem)
    assert again.status_code == 409 and "idempotent-replayed" not in again.headers
    gone = httpx.delete(f"{server.url}/v1/licenses", params={"product_id": pid, "user": "7008"},
                        headers=auth(key))
    assert gone.status_code == 200
    granted = post(server, "/licenses", key, body, idem)
    assert granted.status_code == 200 and "idempotent-replayed" not in granted.headers
    assert post(server, "/licenses", key, body, idem).headers["idempotent-replayed"] == "true"


def test_every_partner_post_takes_the_key(server: Server, key: str) -> None:
    """One mechanism, not one a call: creating a product twice with one key makes one."""
    idem, title = new_key(), f"Once {secrets.token_hex(3)}"
    first = post(server, "/products", key, {"title": title}, idem)
    again = post(server, "/products", key, {"title": title}, idem)
    assert first.status_code == 200 and again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    listed = httpx.get(f"{server.url}/v1/products", headers=auth(key)).json()["products"]
    assert [p["title"] for p in listed].count(title) == 1


def test_get_and_delete_ignore_the_key(server: Server, key: str) -> None:
    pid = product(server, key)
    headers = auth(key) | {"Idempotency-Key": "not checked on reads"}
    r = httpx.get(f"{server.url}/v1/licenses", params={"product_id": pid}, headers=headers)
    assert r.status_code == 200 and "idempotent-replayed" not in r.headers


@pytest.mark.parametrize(("field", "value"), [
    ("source", "purchase_pass"), ("source", "robux"), ("source", 1),
    ("purchase_id", ""), ("purchase_id", "has space"), ("purchase_id", "p" * 129),
    ("purchase_id", 12345)])
def test_a_bad_source_or_purchase_id_is_refused_naming_the_field(
        server: Server, key: str, field: str, value: Any) -> None:
    pid = product(server, key)
    r = post(server, "/licenses", key, {"product_id": pid, "user": "7009", field: value})
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "invalid_request"
    assert field in r.json()["error_description"]
    assert licenses(server, key, pid) == []


@pytest.mark.parametrize("source", ["grant", "developer_product", "game_pass",
                                    "subscription"])
def test_each_grant_source_is_kept_and_listed(server: Server, key: str, source: str) -> None:
    pid = product(server, key)
    r = post(server, "/licenses", key, {"product_id": pid, "user": "7010", "source": source,
                                        "purchase_id": "p" * 128})
    assert r.status_code == 200, r.text
    assert r.json()["license"]["source"] == source
    [listed] = licenses(server, key, pid)
    assert (listed["source"], listed["purchase_id"]) == (source, "p" * 128)


def test_a_plain_grant_says_grant_and_no_purchase(server: Server, key: str) -> None:
    pid = product(server, key)
    assert post(server, "/licenses", key, {"product_id": pid, "user": "7011"}).status_code == 200
    [listed] = licenses(server, key, pid)
    assert (listed["source"], listed["purchase_id"]) == ("grant", None)


def revoke(server: Server, key: str, product_id: str, user: str) -> None:
    gone = httpx.delete(f"{server.url}/v1/licenses",
                        params={"product_id": product_id, "user": user}, headers=auth(key))
    assert gone.status_code == 200, gone.text


def test_a_refunded_receipt_stays_revoked_once_its_key_is_forgotten(server: Server,
                                                                    key: str) -> None:
    """Issue 45 item 3: the kept answer lasts a day, the purchase as long as the license. A
    new Idempotency-Key is what the same receipt meets once the day is over."""
    pid = product(server, key)
    sale = {"product_id": pid, "user": "7020", "source": "developer_product",
            "purchase_id": "refunded-1"}
    assert post(server, "/licenses", key, sale, new_key()).status_code == 200
    revoke(server, key, pid, "7020")
    again = post(server, "/licenses", key, sale, new_key())
    assert (again.status_code, again.json()["error"]) == (409, "license_revoked"), again.text
    [license] = licenses(server, key, pid)
    assert license["status"] == "inactive"


def test_a_second_purchase_is_told_already_owned_and_stays_told(server: Server,
                                                                key: str) -> None:
    pid = product(server, key)
    first = {"product_id": pid, "user": "7021", "source": "developer_product",
             "purchase_id": "twice-1"}
    second = {**first, "purchase_id": "twice-2"}
    assert post(server, "/licenses", key, first, "twice-1").status_code == 200
    told = post(server, "/licenses", key, second, "twice-2")
    assert (told.status_code, told.json()["error"]) == (409, "already_owned"), told.text
    revoke(server, key, pid, "7021")
    replayed = post(server, "/licenses", key, second, new_key())
    assert (replayed.status_code, replayed.json()["error"]) == (409, "license_revoked")
    assert [lic["status"] for lic in licenses(server, key, pid)] == ["inactive"]
