"""The Partner API over real HTTP against a real `licore serve`, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.http.e2e import People, auth, obtain_key, owner_key, setup_people
from tests.support.server import Server

ALL_STUDIO = "products:read products:write licenses:read licenses:write"


@pytest.fixture(scope="module")
def people(server: Server) -> People:
    return setup_people(server.database_url, "5")


@pytest.fixture(scope="module")
def keys(server: Server, people: People) -> dict[str, str]:
    from tests.http.e2e import cli_batch

    rival_owner, rival = cli_batch(
        server.database_url,
        (["account", "add", "rival", "--platform-id", "999", "--no-password"], ""),
        (["studio", "add", "Rival", "--owner", "rival"], ""))
    return {
        "studio": owner_key(server, people, ALL_STUDIO),
        "rival": obtain_key(server, people, ALL_STUDIO, rival_owner, rival),
        "library": obtain_key(server, people, "library:read", people.buyer_id, None),
    }


def call(server: Server, method: str, path: str, key: str, **kw: Any) -> httpx.Response:
    headers = {**auth(key), **kw.pop("headers", {})}
    return httpx.request(method, f"{server.url}/v1{path}", headers=headers, **kw)


def products_of(server: Server, key: str) -> list[dict[str, Any]]:
    r = call(server, "GET", "/products", key)
    assert r.status_code == 200
    items: list[dict[str, Any]] = r.json()["products"]
    return items


def test_create_list_and_change_products(server: Server, keys: dict[str, str]) -> None:
    k = keys["studio"]
    made = call(server, "POST", "/products", k, json={
        "title": "Über Sword", "tagline": "Sharp", "description": "A long text",
        "price_credit": 250, "discoverable": True})
    assert made.status_code == 200
    body = made.json()
    assert body["ok"] is True and body["slug"] == "uber-sword" and body["discoverable"] is False
    twin = call(server, "POST", "/products", k, json={"title": "Über Sword"}).json()
    assert twin["slug"] == "uber-sword-2"
    listed = {p["id"]: p for p in products_of(server, k)}
    assert listed[body["id"]] == {
        "id": body["id"], "slug": "uber-sword", "title": "Über Sword", "tagline": "Sharp",
        "price_credit": 250, "discoverable": False, "licensing_enabled": True,
        "current_version": None}
    assert "description" not in listed[body["id"]]

    changed = call(server, "POST", "/products", k, json={
        "id": body["id"], "title": "Renamed", "discoverable": True})
    assert changed.status_code == 200
    assert changed.json() == {"ok": True, "id": body["id"], "slug": "uber-sword",
                              "discoverable": True}
    after = {p["id"]: p for p in products_of(server, k)}[body["id"]]
    assert after["title"] == "Renamed" and after["tagline"] == "Sharp"
    assert after["price_credit"] == 250 and after["discoverable"] is True
    back = call(server, "POST", "/products", k, json={"id": body["id"], "discoverable": False})
    assert back.json()["discoverable"] is False


def test_another_studios_product_is_not_found(server: Server, keys: dict[str, str]) -> None:
    mine = call(server, "POST", "/products", keys["studio"], json={"title": "Mine"}).json()
    r = call(server, "POST", "/products", keys["rival"], json={"id": mine["id"], "title": "X"})
    assert (r.status_code, r.json()["error"]) == (404, "not_found")
    r = call(server, "GET", "/licenses", keys["rival"], params={"product_id": mine["id"]})
    assert r.status_code == 404
    assert all(p["id"] != mine["id"] for p in products_of(server, keys["rival"]))


BAD_PRODUCT_BODIES = [
    ({}, "title"),
    ({"title": ""}, "title"),
    ({"title": 5}, "title"),
    ({"title": "x" * 81}, "title"),
    ({"title": "ok", "tagline": "t" * 141}, "tagline"),
    ({"title": "ok", "description": "d" * 5001}, "description"),
    ({"title": "ok", "price_credit": True}, "price_credit"),
    ({"title": "ok", "price_credit": 5.0}, "price_credit"),
    ({"title": "ok", "price_credit": "5"}, "price_credit"),
    ({"title": "ok", "price_credit": -1}, "price_credit"),
    ({"title": "ok", "price_credit": 1_000_001}, "price_credit"),
    ({"title": "ok", "discoverable": "yes"}, "discoverable"),
    ({"title": "ok", "colour": "red"}, "colour"),
]


@pytest.mark.parametrize(("body", "field"), BAD_PRODUCT_BODIES)
def test_bad_product_bodies_are_refused_and_change_nothing(
        server: Server, keys: dict[str, str], body: dict[str, Any], field: str) -> None:
    before = products_of(server, keys["studio"])
    r = call(server, "POST", "/products", keys["studio"], json=body)
    assert (r.status_code, r.json()["error"]) == (400, "invalid_request")
    assert field in r.json()["error_description"]
    assert products_of(server, keys["studio"]) == before


def test_bad_product_changes_and_non_json_change_nothing(server: Server,
                                                          keys: dict[str, str]) -> None:
    k = keys["studio"]
    made = call(server, "POST", "/products", k, json={"title": "Stable"}).json()
    before = products_of(server, k)
    for body, field in [({"id": made["id"], "price_credit": 2_000_000}, "price_credit"),
                        ({"id": made["id"], "title": None}, "title"),
                        ({"id": 7}, "id"),
                        ({"id": made["id"], "slug": "new"}, "slug")]:
        r = call(server, "POST", "/products", k, json=body)
        assert (r.status_code, r.json()["error"]) == (400, "invalid_request"), body
        assert field in r.json()["error_description"]
    for raw in (b"not json", b"[1, 2]", b'"text"', b"\xff\xfe"):
        r = call(server, "POST", "/products", k, content=raw,
                 headers={"content-type": "application/json"})
        assert (r.status_code, r.json()["error"]) == (400, "invalid_request"), raw
    assert products_of(server, k) == before


def test_grant_list_regrant_pause_resume_and_revoke(server: Server, people: People,
                                                    keys: dict[str, str]) -> None:
    k = keys["studio"]
    product = call(server, "POST", "/products", k, json={"title": "Licensed"}).json()["id"]
    granted = call(server, "POST", "/licenses", k, json={"product_id": product,
                                                         "user": "buyer5"})
    assert granted.status_code == 200, granted.text
    lic = granted.json()["license"]
    assert granted.json()["ok"] is True
    assert lic["platform_id"] == "25" and lic["is_active"] is True
    assert lic["source"] == "grant" and lic["verified_at"].endswith("Z")
    assert "key" not in granted.text.lower().replace("licensing", "")
    by_id = call(server, "POST", "/licenses", k, json={"product_id": product, "user": "4242"})
    assert by_id.status_code == 200

    dup = call(server, "POST", "/licenses", k, json={"product_id": product, "user": "25"})
    assert (dup.status_code, dup.json()["error"]) == (409, "already_owned")
    unknown = call(server, "POST", "/licenses", k, json={"product_id": product,
                                                         "user": "nobody"})
    assert (unknown.status_code, unknown.json()["error"]) == (404, "not_found")

    listed = call(server, "GET", "/licenses", k, params={"product_id": product}).json()
    assert sorted(x["platform_id"] for x in listed["licenses"]) == ["25", "4242"]

    library = call(server, "GET", "/library", keys["library"]).json()["products"]
    assert [p["id"] for p in library] == [product]
    assert library[0]["studio"] == "Studio5" and library[0]["acquired_at"].endswith("Z")

    pause = call(server, "POST", "/licenses/pause", k, json={"product_id": product,
                                                             "user": "buyer5"})
    assert pause.json() == {"ok": True}
    assert call(server, "GET", "/library", keys["library"]).json()["products"] == []
    paused = call(server, "GET", "/licenses", k, params={"product_id": product}).json()
    assert {x["platform_id"]: x["is_active"] for x in paused["licenses"]}["25"] is False
    dup_paused = call(server, "POST", "/licenses", k, json={"product_id": product,
                                                            "user": "25"})
    assert dup_paused.status_code == 409
    call(server, "POST", "/licenses/resume", k, json={"product_id": product, "user": "25"})
    assert len(call(server, "GET", "/library", keys["library"]).json()["products"]) == 1

    revoked = call(server, "DELETE", "/licenses", k, params={"product_id": product,
                                                             "user": "buyer5"})
    assert revoked.status_code == 200 and revoked.json() == {"ok": True}
    again = call(server, "DELETE", "/licenses", k, params={"product_id": product, "user": "25"})
    assert again.json() == {"ok": True}
    missing = call(server, "DELETE", "/licenses", k, params={"product_id": product,
                                                             "user": "777"})
    assert (missing.status_code, missing.json()["error"]) == (404, "not_found")
    inactive = {x["platform_id"]: x for x in call(server, "GET", "/licenses", k, params={
        "product_id": product}).json()["licenses"]}["25"]
    assert inactive["is_active"] is False
    assert call(server, "GET", "/library", keys["library"]).json()["products"] == []

    regrant = call(server, "POST", "/licenses", k, json={"product_id": product,
                                                         "user": "buyer5"})
    assert regrant.status_code == 200 and regrant.json()["license"]["id"] == lic["id"]
    assert regrant.json()["license"]["is_active"] is True


def test_the_license_list_filtered_to_one_user(server: Server, people: People,
                                              keys: dict[str, str]) -> None:
    """`GET /licenses?product_id=&user=` (extension): that user's license alone, by name or
    platform id; a user without one gets an empty list, an unknown name `404 not_found`."""
    k = keys["studio"]
    product = call(server, "POST", "/products", k, json={"title": "Filtered"}).json()["id"]
    for user in ("buyer5", "4243"):
        assert call(server, "POST", "/licenses", k,
                    json={"product_id": product, "user": user}).status_code == 200

    def listed(user: str) -> list[str]:
        r = call(server, "GET", "/licenses", k, params={"product_id": product, "user": user})
        assert r.status_code == 200, r.text
        return [x["platform_id"] for x in r.json()["licenses"]]

    assert listed("buyer5") == ["25"] and listed("25") == ["25"] and listed("4243") == ["4243"]
    assert listed("999") == []
    unknown = call(server, "GET", "/licenses", k, params={"product_id": product,
                                                          "user": "nobody"})
    assert (unknown.status_code, unknown.json()["error"]) == (404, "not_found")
    bad = call(server, "GET", "/licenses", k, params={"product_id": product, "user": ""})
    assert (bad.status_code, bad.json()["error"]) == (400, "invalid_request")
    rival = call(server, "GET", "/licenses", keys["rival"], params={"product_id": product,
                                                                     "user": "25"})
    assert rival.status_code == 404


@pytest.mark.parametrize(("method", "path", "kw", "field"), [
    ("POST", "/licenses", {"json": {"user": "25"}}, "product_id"),
    ("POST", "/licenses", {"json": {"product_id": "p"}}, "user"),
    ("POST", "/licenses", {"json": {"product_id": 5, "user": "25"}}, "product_id"),
    ("POST", "/licenses", {"json": {"product_id": "p", "user": 25}}, "user"),
    ("POST", "/licenses", {"json": {"product_id": "p", "user": "25", "x": 1}}, "x"),
    ("POST", "/licenses", {"content": b"nope"}, "JSON"),
    ("POST", "/licenses/pause", {"json": {"product_id": "p"}}, "user"),
    ("DELETE", "/licenses", {"params": {"user": "25"}}, "product_id"),
    ("DELETE", "/licenses", {"params": {"product_id": "p"}}, "user"),
    ("GET", "/licenses", {"params": {}}, "product_id"),
    ("GET", "/products", {"params": {"limit": "0"}}, "limit"),
    ("GET", "/products", {"params": {"limit": "1001"}}, "limit"),
    ("GET", "/products", {"params": {"limit": "ten"}}, "limit"),
])
def test_bad_license_requests(server: Server, keys: dict[str, str], method: str, path: str,
                              kw: dict[str, Any], field: str) -> None:
    r = call(server, method, path, keys["studio"], **kw)
    assert (r.status_code, r.json()["error"]) == (400, "invalid_request"), r.text
    assert field in r.json()["error_description"]


def test_library_versions_and_alerts_lists(server: Server, people: People,
                                           keys: dict[str, str]) -> None:
    k = keys["studio"]
    product = call(server, "POST", "/products", k, json={"title": "Versioned"}).json()["id"]
    call(server, "POST", "/licenses", k, json={"product_id": product, "user": "buyer5"})
    versions = call(server, "GET", "/library", keys["library"],
                    params={"product_id": product, "versions": "1"})
    assert versions.status_code == 200 and versions.json() == {"versions": []}
    other = call(server, "GET", "/library", keys["library"],
                 params={"product_id": "prd_nope", "versions": "1"})
    assert other.status_code == 404
    alerts = call(server, "GET", "/alerts", k, params={"product_id": product})
    assert alerts.status_code == 200 and alerts.json() == {"alerts": []}
    paged = call(server, "GET", "/alerts", k, params={"limit": "5"})
    assert paged.json() == {"alerts": [], "next_cursor": None}


def test_pagination_over_http(server: Server, keys: dict[str, str]) -> None:
    k = keys["rival"]
    made = [call(server, "POST", "/products", k, json={"title": f"Page {i}"}).json()["id"]
            for i in range(5)]
    seen: list[str] = []
    params = {"limit": "2"}
    while True:
        page = call(server, "GET", "/products", k, params=params).json()
        seen += [p["id"] for p in page["products"]]
        if page["next_cursor"] is None:
            break
        params = {"limit": "2", "cursor": page["next_cursor"]}
    assert [s for s in seen if s in made] == made and len(seen) == len(set(seen))


def test_121st_request_in_a_minute_is_429_and_other_keys_are_unaffected(
        server: Server, people: People) -> None:
    first = obtain_key(server, people, "products:read", people.owner_id, people.studio_id)
    second = obtain_key(server, people, "products:read", people.owner_id, people.studio_id)
    server.next_window()  # the counter is a fixed minute window: a fresh one
    with httpx.Client(base_url=server.url, headers=auth(first)) as c:
        answers = [c.get("/v1/products") for _ in range(120)]
        limited = c.get("/v1/products")
    assert [a.status_code for a in answers] == [200] * 120
    # every answer tells the caller how much of the minute's allowance is left
    assert [int(a.headers["ratelimit-remaining"]) for a in answers] == list(range(119, -1, -1))
    assert {a.headers["ratelimit-limit"] for a in answers} == {"120"}
    assert 1 <= int(answers[-1].headers["ratelimit-reset"]) <= 60
    assert limited.status_code == 429
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert limited.headers["ratelimit-remaining"] == "0"
    assert call(server, "GET", "/products", second).status_code == 200


def test_unknown_paths_and_methods_use_the_error_shape(server: Server,
                                                       keys: dict[str, str]) -> None:
    r = call(server, "GET", "/nothing-here", keys["studio"])
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    r = call(server, "PUT", "/products", keys["studio"])
    assert r.status_code == 405 and set(r.json()) == {"error", "error_description"}


def test_logs_hold_no_secret(server: Server, people: People, keys: dict[str, str]) -> None:
    from tests.http.e2e import core, start_flow

    flow = start_flow(server, people.client_id, "library:read")
    httpx.post(f"{server.url}/auth/device/token", json={"device_code": flow["device_code"]})
    # Calls of its own, so that it checks the same lines run alone or after the others: a
    # grant (a license key exists and went through the server) and an authenticated listing.
    product = call(server, "POST", "/products", keys["studio"],
                   json={"title": "Logged"}).json()["id"]
    granted = call(server, "POST", "/licenses", keys["studio"],
                   json={"product_id": product, "user": "4242"})
    assert granted.status_code == 200, granted.text
    products_of(server, keys["studio"])
    log = server.log()
    assert '"path": "/v1/products"' in log and '"key_id": "key_' in log
    secrets = [flow["device_code"], *keys.values()]

    async def license_keys(d: Any) -> list[str]:
        out = []
        async with d.storage.unit_of_work() as uow:
            for product in (await uow.products.of_studio(people.studio_id, None, None)).items:
                page = await uow.licenses.of_product(product.id, None, None)
                for lic in page.items:
                    if lic.key_ciphertext:
                        out.append(d.vault.decrypt(lic.key_ciphertext, lic.id))
        return out

    secrets += core(server.database_url, license_keys)
    assert len(secrets) > 4  # the device code, three API keys, at least one license key
    for secret in secrets:
        assert secret not in log


def test_the_hub_place_is_a_setting_the_store_links_to(server: Server,
                                                        people: People) -> None:
    key = obtain_key(server, people, "products:write packages:write", people.owner_id,
                     people.studio_id)
    pid = call(server, "POST", "/products", key, json={"title": "Hub Sword"}).json()["id"]
    r = call(server, "POST", "/packages/settings", key,
             json={"product_id": pid, "hub_place_id": 4455667788})
    assert r.status_code == 200 and r.json()["hub_place_id"] == "4455667788", r.text
    for bad in ("12a", "1" * 21, -5, True):
        r = call(server, "POST", "/packages/settings", key,
                 json={"product_id": pid, "hub_place_id": bad})
        assert (r.status_code, r.json()["error"]) == (400, "invalid_request"), bad
        assert "hub_place_id" in r.json()["error_description"]
    shown = call(server, "POST", "/packages/settings", key, json={"product_id": pid})
    assert shown.json()["hub_place_id"] == "4455667788"  # nothing changed
    r = call(server, "POST", "/packages/settings", key, json={"product_id": pid,
                                                                "hub_place_id": ""})
    assert r.status_code == 200 and r.json()["hub_place_id"] is None
