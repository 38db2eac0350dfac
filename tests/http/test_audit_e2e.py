"""The audit trail over real HTTP against a real `licore serve`, on SQLite and PostgreSQL
(docs/audit.md): an app's grant, revoke and re-key are told with the app, its key id and
the request id the answer carried; a dashboard action names the person, an operator verb the
operator, a license's expiry (the server's own sweep) the service; a refused call leaves no
entry; no secret made here appears in any entry; `GET /v1/audit` filters and pages."""

from __future__ import annotations

import getpass
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import attrs
import httpx
import pytest

from licore.services.wiring import UseCases
from tests.http.e2e import (
    People,
    auth,
    cli,
    core,
    decide,
    end_a_minute_ago,
    license_key,
    obtain_key,
    poll,
    setup_people,
    start_flow,
)
from tests.support.server import Server, running_server

ALL = "products:read products:write licenses:read licenses:write"
TAG = "81"


@attrs.frozen
class World:
    server: Server
    people: People
    key: str
    key_id: str
    product: str
    timed_user: str  # granted for a day, then its end moved a minute into the past
    timed_key: str  # its license key, read before the expiry drops it

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, f"{self.server.url}/v1{path}", headers=auth(self.key),
                             timeout=30, **kwargs)

    def entries(self, **params: Any) -> list[dict[str, Any]]:
        r = self.api("GET", "/audit", params={"limit": 1000, **params})
        assert r.status_code == 200, r.text
        found: list[dict[str, Any]] = r.json()["entries"]
        return found


@pytest.fixture(scope="module")
def world(module_database_url: str) -> Iterator[World]:
    # A webhook to a loopback address nobody listens on: its secret is what matters here.
    # Sweeps every 200 ms: the expiry below is told within moments, not the default 20 s.
    with running_server(module_database_url, LICORE_WEBHOOK_ALLOW_PRIVATE="true",
                        LICORE_OUTBOX_SWEEP_MS="200") as server:
        people = setup_people(server.database_url, TAG)
        key = obtain_key(server, people, ALL, people.owner_id, people.studio_id)
        key_id = core(server.database_url,
                      lambda d: UseCases.of(d).keys.identify(key)).id
        made = httpx.post(f"{server.url}/v1/products", json={"title": "Audit kit"},
                          headers=auth(key))
        assert made.status_code == 200, made.text
        product = made.json()["id"]
        timed = httpx.post(f"{server.url}/v1/licenses", headers=auth(key), json={
            "product_id": product, "user": "8105", "duration_days": 1})
        assert timed.status_code == 200, timed.text
        timed_key = license_key(server, product, "8105")
        end_a_minute_ago(server.database_url, product, "8105")
        yield World(server, people, key, key_id, product, "8105", timed_key)


def test_grant_revoke_and_rekey_name_the_app_its_key_and_the_request(world: World) -> None:
    target = {"product_id": world.product, "user": "8101"}
    asked = []
    for r in (world.api("POST", "/licenses", json=target),
              world.api("POST", "/licenses/rekey", json=target),
              world.api("DELETE", "/licenses", params=target)):
        assert r.status_code == 200, r.text
        asked.append(r.headers["x-request-id"])
    told = {e["request_id"]: e for e in world.entries(subject="license")}
    for rid, action in zip(asked, ("license.granted", "license.rekeyed", "license.revoked"),
                           strict=True):
        entry = told[rid]
        assert entry["action"] == action
        assert entry["actor"] == {"kind": "app", "id": world.people.client_id,
                                  "key_id": world.key_id}
    revoked = {c["field"]: c for c in told[asked[2]]["changes"]}
    assert revoked["state"] == {"field": "state", "shown": True, "old": "active",
                                "new": "inactive"}


def test_a_refused_call_leaves_no_entry(world: World) -> None:
    first = world.api("POST", "/licenses", json={"product_id": world.product, "user": "8102"})
    again = world.api("POST", "/licenses", json={"product_id": world.product, "user": "8102"})
    bad = world.api("POST", "/licenses/pause", json={"product_id": world.product,
                                                     "user": "8102", "extra": 1})
    assert first.status_code == 200 and again.status_code == 409 and bad.status_code == 400
    seen = {e["request_id"] for e in world.entries()}
    assert first.headers["x-request-id"] in seen
    assert again.headers["x-request-id"] not in seen
    assert bad.headers["x-request-id"] not in seen


def _signed_in(world: World, username: str, password: str) -> httpx.Client:
    web = httpx.Client(base_url=world.server.url, follow_redirects=True, timeout=30)
    token = re.search(r'name="csrf" value="([^"]+)"', web.get("/signin").text)
    assert token is not None
    r = web.post("/signin", data={"csrf": token.group(1), "username": username,
                                  "password": password})
    assert r.status_code == 200, r.text
    return web


def test_a_dashboard_action_names_the_person(world: World) -> None:
    studio = world.people.studio_id
    web = _signed_in(world, f"owner{TAG}", "owner-password")
    try:
        board = web.get(f"/dashboard/{studio}").text
        token = re.search(r'name="csrf" value="([^"]+)"', board)
        assert token is not None
        r = web.post(f"/dashboard/{studio}/blacklist",
                     data={"csrf": token.group(1), "platform_id": "8199"})
        assert r.status_code == 200, r.text
        page = web.get(f"/dashboard/{studio}/audit", params={"action": "blacklist"})
        by_app = web.get(f"/dashboard/{studio}/audit", params={"action": "license"})
    finally:
        web.close()
    [entry] = world.entries(action="blacklist")
    assert entry["action"] == "blacklist.added" and entry["subject"]["id"] == "8199"
    assert entry["actor"] == {"kind": "person", "id": world.people.owner_id, "key_id": None}
    assert entry["request_id"]
    assert page.status_code == 200 and "blacklist.added" in page.text
    # The page names the person and the app (issue 45 item 2), beside their ids.
    assert f"person <strong>owner{TAG}</strong>" in page.text
    assert f"app <strong>Installer {TAG}</strong>" in by_app.text


def test_an_operator_verb_names_the_operator(world: World) -> None:
    cli(world.server.database_url, "studio", "collaborator", f"Studio{TAG}", f"buyer{TAG}",
        "--manage-products")
    [entry] = world.entries(subject=world.people.buyer_id)
    assert entry["action"] == "collaborator.added"
    assert entry["actor"] == {"kind": "operator", "id": getpass.getuser(), "key_id": None}
    assert entry["request_id"] is None
    assert {c["field"]: c["new"] for c in entry["changes"]} == {
        "permissions": ["manage_products"]}


def test_the_list_filters_pages_and_refuses_bad_input(world: World) -> None:
    first = world.api("GET", "/audit", params={"limit": 2})
    assert first.status_code == 200
    body = first.json()
    assert len(body["entries"]) == 2 and body["next_cursor"]
    rest = world.api("GET", "/audit", params={"limit": 2, "cursor": body["next_cursor"]})
    assert rest.json()["entries"][0]["id"] < body["entries"][-1]["id"]
    assert world.api("GET", "/audit").json()["next_cursor"] is None  # 100 a page by default
    everything = world.entries()
    assert all(e["actor"]["kind"] == "app" for e in world.entries(actor="app"))
    at = everything[-1]["at"]
    assert world.entries(until=0) == []
    assert world.entries(since=253_402_300_799) == []
    assert at.endswith("Z")
    for params in ({"since": "yesterday"}, {"limit": 0}, {"action": ""}):
        r = world.api("GET", "/audit", params=params)
        assert r.status_code == 400 and r.json()["error"] == "invalid_request", params


def test_no_secret_made_here_appears_in_any_entry(world: World) -> None:
    hook = world.api("POST", "/webhooks", json={"url": "http://127.0.0.1:9/audit",
                                                "events": ["license.granted"]})
    assert hook.status_code == 200, hook.text
    rotated = world.api("POST", "/webhooks/rotate", json={"id": hook.json()["id"]})
    assert rotated.status_code == 200, rotated.text
    granted = world.api("POST", "/licenses", json={"product_id": world.product,
                                                   "user": "8103"})
    assert granted.status_code == 200
    # A device flow an app completes (its device code, the key it takes), and a session
    # cookie of a person who changes something on the dashboard.
    flow = start_flow(world.server, world.people.client_id, "licenses:read")
    decide(world.server.database_url, world.people.owner_id, flow["user_code"], True,
           world.people.studio_id)
    taken = poll(world.server, flow["device_code"])
    assert taken.status_code == 200, taken.text
    web = _signed_in(world, f"owner{TAG}", "owner-password")
    try:
        cookie = web.cookies["licore_session"]
        token = re.search(r'name="csrf" value="([^"]+)"',
                          web.get(f"/dashboard/{world.people.studio_id}").text)
        assert token is not None
        r = web.post(f"/dashboard/{world.people.studio_id}/blacklist",
                     data={"csrf": token.group(1), "platform_id": "8198"})
        assert r.status_code == 200
    finally:
        web.close()
    secrets = [world.key, hook.json()["secret"], rotated.json()["secret"],
               flow["device_code"], taken.json()["access_token"], cookie,
               license_key(world.server, world.product, "8103"),
               world.timed_key,
               "owner-password", "buyer-password"]
    text = json.dumps(world.entries())
    assert "webhook.secret_rotated" in text and "api_key.issued" in text
    for secret in secrets:
        assert secret not in text


def test_an_expiry_names_the_service(world: World) -> None:
    """The server's sweep tells the expiry of the license whose end the fixture moved back."""
    deadline = time.monotonic() + 60
    while not (found := world.entries(action="license.expired")):
        assert time.monotonic() < deadline, "the expiry was never told"
        time.sleep(0.1)
    [entry] = found
    assert entry["actor"] == {"kind": "service", "id": "licore", "key_id": None}
    assert entry["request_id"] is None
