"""Issue 46, item 4, against a real `licore serve` on SQLite and PostgreSQL: a list where a
list is documented and no unknown key inside an item, else `400 invalid_request` naming the
field and nothing changed (`tiers: ""` or `{}` deleted a product's tiers; the same for
`image_ids` and `roles: {}`; unknown keys in tier items were dropped silently); and the
answer of `POST /v1/packages/settings` is the one its OpenAPI schema describes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.http.e2e import People, auth, owner_key, setup_people
from tests.http.test_openapi_e2e import check
from tests.support.server import Server

SCOPES = "products:read products:write packages:read packages:write"
NOT_LISTS: list[Any] = ["", {}, "gold", {"name": "gold"}, 5, True]
GOLD = {"name": "gold", "unlock_data": {"damage": 40}}


@pytest.fixture(scope="module")
def shop(server: Server) -> dict[str, str]:
    people: People = setup_people(server.database_url, "46")
    key = owner_key(server, people, SCOPES)
    product = httpx.post(f"{server.url}/v1/products", headers=auth(key),
                         json={"title": "Strict"}).json()["id"]
    return {"key": key, "product": product}


def call(server: Server, shop: dict[str, str], method: str, path: str,
         **json: Any) -> httpx.Response:
    body = {"product_id": shop["product"], **json}
    if method == "GET":
        return httpx.get(f"{server.url}/v1{path}", headers=auth(shop["key"]),
                         params={"product_id": shop["product"]})
    return httpx.post(f"{server.url}/v1{path}", headers=auth(shop["key"]), json=body)


def refused(r: httpx.Response, description: str) -> None:
    assert r.status_code == 400, r.text
    assert r.json() == {"error": "invalid_request", "error_description": description}


@pytest.mark.parametrize("not_a_list", NOT_LISTS, ids=repr)
def test_tiers_that_are_not_a_list_are_refused_and_the_tiers_stay(
        server: Server, shop: dict[str, str], not_a_list: Any) -> None:
    assert call(server, shop, "POST", "/products/policy", tiers=[GOLD]).status_code == 200
    refused(call(server, shop, "POST", "/products/policy", tiers=not_a_list),
            "tiers must be a list (a JSON array)")
    policy = call(server, shop, "GET", "/products/policy").json()
    assert [t["name"] for t in policy["tiers"]] == ["gold"]


def test_an_unknown_key_inside_a_tier_is_refused(server: Server, shop: dict[str, str]) -> None:
    assert call(server, shop, "POST", "/products/policy", tiers=[GOLD]).status_code == 200
    refused(call(server, shop, "POST", "/products/policy",
                 tiers=[{**GOLD, "name": "silver", "price": 5}]),
            "unknown field in tiers: price")
    policy = call(server, shop, "GET", "/products/policy").json()
    assert [t["name"] for t in policy["tiers"]] == ["gold"]


@pytest.mark.parametrize("not_a_list", NOT_LISTS, ids=repr)
def test_roles_and_image_order_that_are_not_lists_are_refused(
        server: Server, shop: dict[str, str], not_a_list: Any) -> None:
    before = call(server, shop, "GET", "/chat-roles").json()
    refused(call(server, shop, "POST", "/chat-roles", roles=not_a_list),
            "roles must be a list (a JSON array)")
    assert call(server, shop, "GET", "/chat-roles").json() == before
    refused(call(server, shop, "POST", "/products/images/order", image_ids=not_a_list),
            "image_ids must be a list (a JSON array)")


def test_an_unknown_key_inside_a_role_is_refused(server: Server, shop: dict[str, str]) -> None:
    role = {"guild_id": "123456789012345678", "role_id": "223456789012345678", "x": 1}
    refused(call(server, shop, "POST", "/chat-roles", roles=[role]),
            "unknown field in roles: x")


def test_the_settings_answer_is_the_documented_one(server: Server,
                                                    shop: dict[str, str]) -> None:
    doc = httpx.get(f"{server.url}/openapi.json").json()
    r = call(server, shop, "POST", "/packages/settings", placeholder="KEY_HERE")
    assert r.status_code == 200 and "beta_version" in r.json()
    check(doc, "POST", "/v1/packages/settings", r)
