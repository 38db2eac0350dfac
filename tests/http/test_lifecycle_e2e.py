"""Licenses a seller can shape (issue 27, docs/licenses.md) through the Partner API over real
HTTP against a real `licore serve`, on SQLite and PostgreSQL: what each call does is seen
where it matters, at the Runtime API."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any

import attrs
import httpx
import pytest

from licore.services.deps import Deps
from tests.http.e2e import People, auth, core, license_key, obtain_key, owner_key, setup_people
from tests.support.server import Server, running_server
from tests.support.spec_verifier import verify

ALL = "products:read products:write licenses:read licenses:write packages:write"
UNLOCK_DATA = {"edition": "standard"}
PRO_DATA = {"edition": "pro", "weapons": ["railgun"]}


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


@pytest.fixture(scope="module")
def people(server: Server) -> People:
    return setup_people(server.database_url, "27")


@pytest.fixture(scope="module")
def key(server: Server, people: People) -> str:
    return owner_key(server, people, ALL)


def call(server: Server, method: str, path: str, key: str, **kw: Any) -> httpx.Response:
    return httpx.request(method, f"{server.url}/v1{path}", headers=auth(key), **kw)


def v1(server: Server, method: str, path: str, key: str, **kw: Any) -> dict[str, Any]:
    r = call(server, method, path, key, **kw)
    assert r.status_code == 200, (method, path, r.status_code, r.text)
    body: dict[str, Any] = r.json()
    return body


def product(server: Server, key: str) -> str:
    made: str = v1(server, "POST", "/products", key, json={"title": "Shaped"})["id"]
    v1(server, "POST", "/packages/settings", key,
       json={"product_id": made, "unlock_data": UNLOCK_DATA})
    return made


def check(server: Server, product_id: str, user: str, license_key: str,
          game_id: str | None = None) -> bool:
    body = {"user_id": user, "product_id": product_id, "key": license_key}
    if game_id is not None:
        body["game_id"] = game_id
    r = httpx.post(f"{server.url}/runtime/check", json=body)
    assert r.status_code == 200, r.text
    passed: bool = r.json()["success"]
    return passed


def unlocked(server: Server, product_id: str, user: str, license_key: str) -> Any:
    """The data `/unlock` sealed for the license, opened as a game would."""
    n = secrets.token_hex(16)
    r = httpx.post(f"{server.url}/runtime/unlock", json={
        "user_id": user, "product_id": product_id, "key": license_key, "nonce": n})
    assert r.status_code == 200 and r.json()["ok"] is True, r.text
    return verify(license_key, n, r.json(), int(time.time()))["data"]


def listed(server: Server, key: str, product_id: str, user: str) -> dict[str, Any]:
    found = v1(server, "GET", "/licenses", key, params={"product_id": product_id})
    mine: list[dict[str, Any]] = [lc for lc in found["licenses"] if lc["platform_id"] == user]
    assert len(mine) == 1
    return mine[0]


def refusal(r: httpx.Response, status: int, error: str) -> None:
    assert (r.status_code, r.json()["error"]) == (status, error), r.text
    assert set(r.json()) >= {"error", "error_description"}


def test_a_transfer_moves_the_license_and_kills_the_old_key_at_once(server: Server,
                                                                    key: str) -> None:
    pid = product(server, key)
    v1(server, "POST", "/licenses", key, json={"product_id": pid, "user": "2701"})
    old_key = license_key(server, pid, "2701")
    assert check(server, pid, "2701", old_key)

    moved = v1(server, "POST", "/licenses/transfer", key,
               json={"product_id": pid, "from_user": "2701", "to_user": "2702"})
    assert moved["ok"] is True
    assert moved["license"]["platform_id"] == "2702"
    assert moved["license"]["is_active"] is True and moved["license"]["source"] == "grant"
    gone = moved["transferred_from"]
    assert (gone["platform_id"], gone["state"], gone["is_active"], gone["transferred_to"]) == (
        "2701", "inactive", False, "2702")

    new_key = license_key(server, pid, "2702")
    assert new_key != old_key
    assert not check(server, pid, "2701", old_key)
    assert check(server, pid, "2702", new_key)
    assert listed(server, key, pid, "2701")["status"] == "inactive"
    # Issue 45 item 2: the list shows where it went, and the trail tells one transfer.
    assert listed(server, key, pid, "2701")["transferred_to"] == "2702"
    assert listed(server, key, pid, "2702")["transferred_to"] is None
    told = [(e["action"], e["subject"]["id"]) for e in v1(
        server, "GET", "/audit", key, params={"limit": 1000})["entries"]
        if e["subject"]["id"] in (gone["id"], moved["license"]["id"])]
    assert told == [("license.transferred", gone["id"]), ("license.granted", gone["id"])]

    v1(server, "POST", "/licenses", key, json={"product_id": pid, "user": "2703"})
    again = call(server, "POST", "/licenses/transfer", key,
                 json={"product_id": pid, "from_user": "2703", "to_user": "2702"})
    refusal(again, 409, "already_owned")
    assert check(server, pid, "2702", new_key)  # a refused transfer changed nothing
    assert check(server, pid, "2703", license_key(server, pid, "2703"))

    v1(server, "POST", "/licenses/pause", key, json={"product_id": pid, "user": "2703"})
    paused = call(server, "POST", "/licenses/transfer", key,
                  json={"product_id": pid, "from_user": "2703", "to_user": "2709"})
    refusal(paused, 400, "invalid_request")
    nobody = call(server, "POST", "/licenses/transfer", key,
                  json={"product_id": pid, "from_user": "2708", "to_user": "2709"})
    refusal(nobody, 404, "not_found")


def move_end_into_the_past(server: Server, product_id: str, user: str) -> None:
    """Time passing: the stored end is set to a minute ago, as if the server's clock had
    reached it (the server keeps the real clock)."""

    async def age(d: Deps) -> None:
        async with d.storage.unit_of_work() as uow:
            held = await uow.licenses.for_user(product_id, user)
            assert held is not None and held.expires_at is not None
            past = attrs.evolve(held, expires_at=int(time.time()) - 60)
            assert await uow.licenses.replace(past, expected=held.state)

    core(server.database_url, age)


def test_an_expired_license_is_out_of_force_until_renewed(server: Server, key: str) -> None:
    pid = product(server, key)
    past = call(server, "POST", "/licenses", key,
                json={"product_id": pid, "user": "2711", "expires_at": int(time.time()) - 5})
    refusal(past, 400, "invalid_request")
    both = call(server, "POST", "/licenses", key,
                json={"product_id": pid, "user": "2711", "expires_at": int(time.time()) + 99,
                      "duration_days": 3})
    refusal(both, 400, "invalid_request")

    granted = v1(server, "POST", "/licenses", key,
                 json={"product_id": pid, "user": "2711", "duration_days": 30})
    assert granted["license"]["status"] == "active"
    end = granted["license"]["expires_at"]
    assert end is not None and end.endswith("Z")
    lk = license_key(server, pid, "2711")
    assert check(server, pid, "2711", lk)

    move_end_into_the_past(server, pid, "2711")
    assert not check(server, pid, "2711", lk)
    seen = listed(server, key, pid, "2711")
    assert (seen["status"], seen["is_active"], seen["state"]) == ("expired", False, "active")

    renewed = v1(server, "POST", "/licenses/renew", key,
                 json={"product_id": pid, "user": "2711", "duration_days": 7})
    assert (renewed["license"]["status"], renewed["license"]["is_active"]) == ("active", True)
    assert check(server, pid, "2711", lk)  # the same key, in force again
    seen = listed(server, key, pid, "2711")
    assert (seen["status"], seen["is_active"]) == ("active", True)

    never = v1(server, "POST", "/licenses", key, json={"product_id": pid, "user": "2712"})
    assert never["license"]["expires_at"] is None
    refusal(call(server, "POST", "/licenses/renew", key,
                 json={"product_id": pid, "user": "2712", "duration_days": 7}),
            400, "invalid_request")
    refusal(call(server, "POST", "/licenses/renew", key,
                 json={"product_id": pid, "user": "2712"}), 400, "invalid_request")


def test_a_rekeyed_license_answers_only_to_its_new_key(server: Server, key: str) -> None:
    pid = product(server, key)
    v1(server, "POST", "/licenses", key, json={"product_id": pid, "user": "2721"})
    old_key = license_key(server, pid, "2721")
    assert check(server, pid, "2721", old_key)
    rekeyed = v1(server, "POST", "/licenses/rekey", key,
                 json={"product_id": pid, "user": "2721"})
    assert rekeyed["license"]["is_active"] is True
    new_key = license_key(server, pid, "2721")
    assert new_key != old_key
    assert not check(server, pid, "2721", old_key)
    assert check(server, pid, "2721", new_key)


def test_unlock_seals_the_tier_of_the_license(server: Server, key: str) -> None:
    pid = product(server, key)
    policy = v1(server, "POST", "/products/policy", key, json={
        "product_id": pid, "tiers": [{"name": "pro", "unlock_data": PRO_DATA}]})
    assert policy["tiers"] == [{"name": "pro", "unlock_data": PRO_DATA}]
    refusal(call(server, "POST", "/licenses", key,
                 json={"product_id": pid, "user": "2731", "tier": "gold"}),
            400, "invalid_request")
    v1(server, "POST", "/licenses", key, json={"product_id": pid, "user": "2731"})
    lk = license_key(server, pid, "2731")
    assert unlocked(server, pid, "2731", lk) == UNLOCK_DATA

    tiered = v1(server, "POST", "/licenses/tier", key,
                json={"product_id": pid, "user": "2731", "tier": "pro"})
    assert tiered["license"]["tier"] == "pro"
    assert unlocked(server, pid, "2731", lk) == PRO_DATA
    assert listed(server, key, pid, "2731")["tier"] == "pro"

    cleared = v1(server, "POST", "/licenses/tier", key,
                 json={"product_id": pid, "user": "2731", "tier": None})
    assert cleared["license"]["tier"] is None
    assert unlocked(server, pid, "2731", lk) == UNLOCK_DATA
    refusal(call(server, "POST", "/licenses/tier", key,
                 json={"product_id": pid, "user": "2731"}), 400, "invalid_request")

    granted = v1(server, "POST", "/licenses", key,
                 json={"product_id": pid, "user": "2732", "tier": "pro"})
    assert granted["license"]["tier"] == "pro"
    assert unlocked(server, pid, "2732", license_key(server, pid, "2732")) == PRO_DATA


def test_an_enforced_place_limit_refuses_one_place_more_until_reset(server: Server,
                                                                    key: str) -> None:
    pid = product(server, key)
    before = v1(server, "GET", "/products/policy", key, params={"product_id": pid})
    assert (before["place_limit"], before["place_policy"], before["trial_days"],
            before["tiers"]) == (3, "alert", 0, [])
    set_ = v1(server, "POST", "/products/policy", key, json={
        "product_id": pid, "place_limit": 3, "place_policy": "enforce"})
    assert (set_["ok"], set_["place_limit"], set_["place_policy"]) == (True, 3, "enforce")
    assert v1(server, "GET", "/products/policy", key,
              params={"product_id": pid})["place_policy"] == "enforce"

    v1(server, "POST", "/licenses", key, json={"product_id": pid, "user": "2741"})
    lk = license_key(server, pid, "2741")
    for place in ("11", "12", "13"):
        assert check(server, pid, "2741", lk, place)
    assert not check(server, pid, "2741", lk, "14")
    assert check(server, pid, "2741", lk, "12")  # a place already seen keeps working
    alerts = v1(server, "GET", "/alerts", key, params={"product_id": pid})["alerts"]
    assert [a["game_id"] for a in alerts if a["kind"] == "unrecognised_place"] == ["14"]

    places = v1(server, "GET", "/licenses/places", key,
                params={"product_id": pid, "user": "2741"})["places"]
    assert [(p["game_id"], p["rank"]) for p in places] == [("11", 1), ("12", 2), ("13", 3)]
    reset = v1(server, "POST", "/licenses/places/reset", key,
               json={"product_id": pid, "user": "2741"})
    assert reset == {"ok": True, "reset": 3}
    assert v1(server, "GET", "/licenses/places", key,
              params={"product_id": pid, "user": "2741"})["places"] == []
    assert check(server, pid, "2741", lk, "14")
    refusal(call(server, "GET", "/licenses/places", key,
                 params={"product_id": pid, "user": "2749"}), 404, "not_found")


def test_the_policy_is_checked_and_scoped(server: Server, key: str) -> None:
    pid = product(server, key)
    for bad in ({"place_limit": 0}, {"place_policy": "block"}, {"trial_days": 366},
                {"tiers": [{"name": "a b", "unlock_data": 1}]},
                {"tiers": [{"name": "x", "unlock_data": 1}, {"name": "x", "unlock_data": 2}]},
                {"tiers": [{"name": "x"}]}, {"colour": "red"}):
        refusal(call(server, "POST", "/products/policy", key, json={"product_id": pid, **bad}),
                400, "invalid_request")
    assert v1(server, "GET", "/products/policy", key,
              params={"product_id": pid})["place_policy"] == "alert"  # nothing changed
    trial = v1(server, "POST", "/products/policy", key, json={"product_id": pid,
                                                              "trial_days": 14})
    assert trial["trial_days"] == 14
    refusal(call(server, "GET", "/products/policy", key, params={"product_id": "prd_none"}),
            404, "not_found")


def test_a_trial_is_taken_once_per_person_and_product_ever(server: Server, people: People,
                                                           key: str) -> None:
    pid = product(server, key)
    trial = {"product_id": pid, "user": "2751"}
    refusal(call(server, "POST", "/licenses/trial", key, json=trial), 400, "invalid_request")
    v1(server, "POST", "/products/policy", key, json={"product_id": pid, "trial_days": 2})
    started = v1(server, "POST", "/licenses/trial", key, json=trial)["license"]
    assert (started["source"], started["status"], started["is_active"]) == (
        "trial", "active", True)
    assert started["expires_at"] is not None
    lk = license_key(server, pid, "2751")
    assert check(server, pid, "2751", lk)
    refusal(call(server, "POST", "/licenses/trial", key, json=trial), 409, "already_owned")

    move_end_into_the_past(server, pid, "2751")  # the trial lapses
    assert not check(server, pid, "2751", lk)
    assert listed(server, key, pid, "2751")["status"] == "expired"
    refusal(call(server, "POST", "/licenses/trial", key, json=trial), 409, "already_owned")

    # Renewed and handed on: neither the giver nor the taker gets a trial, nor does the
    # taker once the seller revokes it.
    v1(server, "POST", "/licenses/renew", key, json={**trial, "duration_days": 1})
    moved = v1(server, "POST", "/licenses/transfer", key,
               json={"product_id": pid, "from_user": "2751", "to_user": "2752"})
    assert moved["license"]["source"] == "trial"  # a transfer keeps the source
    for user in ("2751", "2752"):
        refusal(call(server, "POST", "/licenses/trial", key,
                     json={"product_id": pid, "user": user}), 409, "already_owned")
    v1(server, "DELETE", "/licenses", key, params={"product_id": pid, "user": "2752"})
    refusal(call(server, "POST", "/licenses/trial", key,
                 json={"product_id": pid, "user": "2752"}), 409, "already_owned")
    assert listed(server, key, pid, "2752")["status"] == "inactive"


def test_a_person_takes_a_listed_products_trial_through_an_app(server: Server, people: People,
                                                              key: str) -> None:
    pid = product(server, key)
    v1(server, "POST", "/products/policy", key, json={"product_id": pid, "trial_days": 3})
    lib = obtain_key(server, people, "library:read", people.buyer_id, None)
    take = {"product_id": pid}
    # A draft is offered to nobody: as unknown as a product that does not exist.
    refusal(call(server, "POST", "/library/trial", lib, json=take), 404, "not_found")
    v1(server, "POST", "/products", key, json={"id": pid, "discoverable": True})
    taken = v1(server, "POST", "/library/trial", lib, json=take)["license"]
    assert (taken["platform_id"], taken["source"], taken["is_active"]) == ("227", "trial", True)
    assert check(server, pid, "227", license_key(server, pid, "227"))
    mine = v1(server, "GET", "/library", lib)["products"]
    assert pid in [p["id"] for p in mine]
    refusal(call(server, "POST", "/library/trial", lib, json=take), 409, "already_owned")
    refusal(call(server, "POST", "/licenses/trial", key, json={"product_id": pid,
                                                              "user": "227"}),
            409, "already_owned")
    # A studio key is not a person's: the person's door refuses it.
    refusal(call(server, "POST", "/library/trial", key, json=take), 403, "insufficient_scope")


def test_a_holder_re_keys_their_own_license_through_an_app(server: Server, people: People,
                                                           key: str) -> None:
    """Issue 45 item 6: the old key stops answering at once, the seller's trail tells it,
    and a holder gets a few new keys a day, not more."""
    pid = product(server, key)
    v1(server, "POST", "/licenses", key, json={"product_id": pid, "user": "227"})
    old = license_key(server, pid, "227")
    lib = obtain_key(server, people, "library:read", people.buyer_id, None)
    mine = {"product_id": pid}
    done = v1(server, "POST", "/library/rekey", lib, json=mine)["license"]
    assert (done["platform_id"], done["status"]) == ("227", "active")
    new = license_key(server, pid, "227")
    assert new != old and not check(server, pid, "227", old)
    assert check(server, pid, "227", new)
    [told] = [e for e in v1(server, "GET", "/audit", key, params={"limit": 1000})["entries"]
              if e["action"] == "license.rekeyed" and e["subject"]["id"] == done["id"]]
    assert told["actor"]["kind"] == "app"
    for _ in range(2):
        v1(server, "POST", "/library/rekey", lib, json=mine)
    limited = call(server, "POST", "/library/rekey", lib, json=mine)
    refusal(limited, 429, "rate_limited")
    assert int(limited.headers["retry-after"]) > 0
    assert check(server, pid, "227", license_key(server, pid, "227"))
    refusal(call(server, "POST", "/library/rekey", lib, json={"product_id": "prd_none"}),
            404, "not_found")
    refusal(call(server, "POST", "/library/rekey", key, json=mine), 403, "insufficient_scope")


def test_a_license_in_its_products_grace_still_answers(server: Server, key: str) -> None:
    """Issue 45 item 5: past its end within the grace, /runtime/check is true and the list
    says `in_grace`; with the grace taken away the same license is expired."""
    pid = product(server, key)
    policy = v1(server, "POST", "/products/policy", key,
                json={"product_id": pid, "grace_days": 2})
    assert policy["grace_days"] == 2
    v1(server, "POST", "/licenses", key, json={"product_id": pid, "user": "2790",
                                              "duration_days": 1})
    move_end_into_the_past(server, pid, "2790")
    lk = license_key(server, pid, "2790")
    assert check(server, pid, "2790", lk)
    shown = listed(server, key, pid, "2790")
    assert (shown["status"], shown["is_active"], shown["in_grace"]) == ("active", True, True)
    assert shown["grace_ends_at"] is not None
    v1(server, "POST", "/products/policy", key, json={"product_id": pid, "grace_days": 0})
    assert not check(server, pid, "2790", lk)
    shown = listed(server, key, pid, "2790")
    assert (shown["status"], shown["is_active"], shown["in_grace"]) == ("expired", False, False)
    refusal(call(server, "POST", "/products/policy", key,
                 json={"product_id": pid, "grace_days": 366}), 400, "invalid_request")


def test_a_license_granted_and_found_by_chat_account(server: Server, key: str) -> None:
    """Issue 45 item 6: `chat_user` in place of `user`, for a person who linked it."""

    async def link(d: Deps) -> None:
        async with d.storage.unit_of_work() as uow:
            await uow.hooks.link_chat("2795", "556677889900", int(time.time()))

    core(server.database_url, link)
    pid = product(server, key)
    done = v1(server, "POST", "/licenses", key,
              json={"product_id": pid, "chat_user": "556677889900"})["license"]
    assert done["platform_id"] == "2795"
    found = v1(server, "GET", "/licenses", key,
               params={"product_id": pid, "chat_user": "556677889900"})["licenses"]
    assert [x["id"] for x in found] == [done["id"]]
    refusal(call(server, "POST", "/licenses", key,
                 json={"product_id": pid, "chat_user": "1"}), 404, "not_found")
    refusal(call(server, "POST", "/licenses", key, json={"product_id": pid}),
            400, "invalid_request")


def test_a_revoke_and_a_pause_by_chat_account(server: Server, key: str) -> None:
    async def link(d: Deps) -> None:
        async with d.storage.unit_of_work() as uow:
            await uow.hooks.link_chat("2796", "556677889911", int(time.time()))

    core(server.database_url, link)
    pid = product(server, key)
    target = {"product_id": pid, "chat_user": "556677889911"}
    v1(server, "POST", "/licenses", key, json=target)
    v1(server, "POST", "/licenses/pause", key, json=target)
    assert listed(server, key, pid, "2796")["status"] == "paused"
    v1(server, "DELETE", "/licenses", key, params=target)
    assert listed(server, key, pid, "2796")["status"] == "inactive"
