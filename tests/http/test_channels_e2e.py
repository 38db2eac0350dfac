"""Release channels and withdrawn builds over real HTTP against a real `licore serve`, on
SQLite and PostgreSQL: publishing to beta, a buyer's opt-in, `/version` and `/update` with
and without a channel, withdrawing the live build, and a withdrawn build's download."""

from __future__ import annotations

import json
import secrets
from typing import Any

import attrs
import httpx
import pytest

from adapters_formats.codec import RobloxModelCodec
from tests.http.e2e import People, auth, license_key, obtain_key, setup_people
from tests.http.test_runtime_e2e import ALL, v1
from tests.support.models import product_model
from tests.support.server import Server
from tests.support.spec_verifier import open_envelope

BUYER = "28"
LIBRARY = "library:read library:download"


@attrs.frozen
class Shop:
    key: str  # the studio's
    product: str
    versions: dict[str, str]  # label -> id
    library: str  # the buyer's library key
    license_key: str


@pytest.fixture(scope="module")
def shop(server: Server) -> Shop:
    people: People = setup_people(server.database_url, "8")
    key = obtain_key(server, people, ALL, people.owner_id, people.studio_id)
    product = v1(server, "POST", "/products", key, json={"title": "Channels"}).json()["id"]
    data = RobloxModelCodec().write(product_model())
    versions = {}
    for label in ("1.0", "2.0", "3.0-beta"):
        r = httpx.post(f"{server.url}/v1/packages/versions", headers=auth(key),
                       params={"product_id": product, "version": label}, content=data)
        assert r.status_code == 200, r.text
        versions[label] = r.json()["version"]["id"]
    v1(server, "POST", "/licenses", key, json={"product_id": product, "user": BUYER})
    library = obtain_key(server, people, LIBRARY, people.buyer_id, None)
    return Shop(key, product, versions, library, license_key(server, product, BUYER))


def runtime(server: Server, shop: Shop, path: str, **sent: Any) -> httpx.Response:
    body = {"user_id": BUYER, "product_id": shop.product, "key": shop.license_key, **sent}
    return httpx.post(f"{server.url}/runtime{path}", json=body)


def version(server: Server, shop: Shop, **sent: Any) -> dict[str, Any]:
    r = runtime(server, shop, "/version", **sent)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def update(server: Server, shop: Shop, **sent: Any) -> dict[str, Any]:
    """The decrypted /update payload, with the outer `version` and `update` beside it."""
    nonce = secrets.token_hex(16)
    r = runtime(server, shop, "/update", nonce=nonce, **sent)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"ok", "version", "update", "cipher", "tag"}
    payload = json.loads(open_envelope(shop.license_key, nonce, body["cipher"], body["tag"]))
    assert payload["nonce"] == nonce and payload["version"] == body["version"]
    return {"version": body["version"], "update": body["update"],
            "instances": len(payload["instances"])}


def publish(server: Server, shop: Shop, label: str, **sent: Any) -> dict[str, Any]:
    body: dict[str, Any] = v1(server, "POST", "/packages/publish", shop.key, json={
        "product_id": shop.product, "version_id": shop.versions[label], **sent}).json()
    return body


def withdraw(server: Server, shop: Shop, label: str) -> dict[str, Any]:
    body: dict[str, Any] = v1(server, "POST", "/packages/withdraw", shop.key, json={
        "product_id": shop.product, "version_id": shop.versions[label]}).json()
    return body


def download(server: Server, shop: Shop, label: str | None = None) -> httpx.Response:
    params = {"product_id": shop.product}
    if label is not None:
        params["version_id"] = shop.versions[label]
    return httpx.get(f"{server.url}/v1/library/download", headers=auth(shop.library),
                     params=params)


def library_versions(server: Server, shop: Shop) -> list[tuple[str, str, bool]]:
    r = v1(server, "GET", "/library", shop.library,
           params={"product_id": shop.product, "versions": "1"})
    return [(v["version"], v.get("channel", "-"), v["live"]) for v in r.json()["versions"]]


def test_a_beta_build_reaches_only_callers_that_ask_for_beta_for_an_opted_in_buyer(
        server: Server, shop: Shop) -> None:
    publish(server, shop, "1.0")
    before = version(server, shop)
    done = publish(server, shop, "2.0", channel="stable")
    assert (done["current_version"], done["beta_version"]) == ("2.0", None)
    done = publish(server, shop, "3.0-beta", channel="beta")
    assert (done["current_version"], done["beta_version"]) == ("2.0", "3.0-beta")
    assert (done["version"]["channel"], done["version"]["beta"],
            done["version"]["live"]) == ("beta", True, False)
    # The specification's caller: the same body as ever, the newest stable build.
    plain = version(server, shop, current="1.0")
    assert plain == {"ok": True, "latest": "2.0", "update": True,
                     "fileId": shop.versions["2.0"]}
    assert set(plain) == set(before)
    assert version(server, shop, current="1.0", channel="stable") == plain
    # Asking for beta before the buyer opted in: stable.
    assert version(server, shop, current="1.0", channel="beta") == plain
    # Not following beta: the specification's version shape, without a channel.
    assert library_versions(server, shop) == [("1.0", "-", False), ("2.0", "-", True)]
    listed = v1(server, "GET", "/library", shop.library).json()["products"]
    assert [(p["id"], p["channel"], p["beta_version"]) for p in listed] == [
        (shop.product, "stable", "3.0-beta")]
    # The store page names the beta build apart from the versions anyone gets.
    v1(server, "POST", "/products", shop.key, json={"id": shop.product, "discoverable": True})
    store = httpx.get(f"{server.url}/store/{shop.product}").text
    listed_part, _, beta_part = store.partition('id="store-beta"')
    assert "3.0-beta" in beta_part.partition("</p>")[0] and "3.0-beta" not in listed_part

    r = v1(server, "POST", "/library/channel", shop.library,
           json={"product_id": shop.product, "channel": "beta"})
    assert r.json() == {"ok": True, "product_id": shop.product, "channel": "beta"}
    assert version(server, shop, current="2.0", channel="beta") == {
        "ok": True, "latest": "3.0-beta", "update": True, "fileId": shop.versions["3.0-beta"]}
    got = update(server, shop, current="2.0", channel="beta")
    assert (got["version"], got["update"]) == ("3.0-beta", True) and got["instances"] > 0
    # Opted in, but the call names no channel: still exactly the stable answer.
    assert version(server, shop, current="1.0") == plain
    assert update(server, shop, current="2.0") == {"version": "2.0", "update": False,
                                                   "instances": 0}
    assert library_versions(server, shop) == [("1.0", "stable", False),
                                              ("2.0", "stable", True),
                                              ("3.0-beta", "beta", False)]
    beta = download(server, shop, "3.0-beta")
    assert beta.status_code == 200 and beta.headers["X-Service-Version"] == "3.0-beta"
    assert download(server, shop).headers["X-Service-Version"] == "2.0"


def test_withdrawing_the_live_build_falls_back_and_stops_its_downloads(
        server: Server, shop: Shop) -> None:
    # Runs after the test above: 2.0 live, 3.0-beta the beta build, the buyer opted in.
    done = withdraw(server, shop, "2.0")
    assert (done["current_version"], done["beta_version"]) == ("1.0", "3.0-beta")
    assert (done["version"]["withdrawn"], done["version"]["live"]) == (True, False)
    assert version(server, shop, current="2.0") == {
        "ok": True, "latest": "1.0", "update": True, "fileId": shop.versions["1.0"]}
    assert update(server, shop, current="2.0")["version"] == "1.0"
    gone = download(server, shop, "2.0")
    assert gone.status_code == 404
    assert gone.json()["error"] == "not_found" and "withdrawn" in gone.json()[
        "error_description"]
    assert library_versions(server, shop) == [("1.0", "stable", True),
                                              ("3.0-beta", "beta", False)]
    listed = v1(server, "GET", "/packages/versions", shop.key,
                params={"product_id": shop.product}).json()["versions"]
    assert [(v["version"], v["channel"], v["withdrawn"], v["withdrawn_at"] is not None)
            for v in listed] == [("1.0", "stable", False, False), ("2.0", "stable", True, True),
                                 ("3.0-beta", "beta", False, False)]

    # The beta build goes: beta callers get stable.
    assert withdraw(server, shop, "3.0-beta")["beta_version"] is None
    assert version(server, shop, channel="beta")["latest"] == "1.0"
    # A withdrawn build is never published again; a second withdraw changes nothing.
    r = httpx.post(f"{server.url}/v1/packages/publish", headers=auth(shop.key),
                   json={"product_id": shop.product, "version_id": shop.versions["2.0"]})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"
    assert withdraw(server, shop, "2.0")["current_version"] == "1.0"
    # The last stable build goes: no live version, as before anything was published.
    assert withdraw(server, shop, "1.0")["current_version"] is None
    assert version(server, shop) == {"ok": True, "latest": "", "update": False, "fileId": ""}
    assert runtime(server, shop, "/update", nonce=secrets.token_hex(16)).json() == {"ok": False}
    assert download(server, shop).status_code == 404


@pytest.mark.parametrize("path", ["/version", "/update"])
def test_an_unknown_channel_is_the_runtime_failure_body_with_400(
        server: Server, shop: Shop, path: str) -> None:
    r = runtime(server, shop, path, channel="nightly", nonce=secrets.token_hex(16))
    assert (r.status_code, r.json()) == (400, {"ok": False})


def test_refusals_of_the_partner_calls(server: Server, shop: Shop) -> None:
    def post(path: str, key: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(f"{server.url}/v1{path}", headers=auth(key), json=body)

    target = {"product_id": shop.product, "version_id": shop.versions["1.0"]}
    r = post("/packages/publish", shop.key, {**target, "channel": "nightly"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"
    assert "stable or beta" in r.json()["error_description"]
    assert post("/packages/withdraw", shop.library, target).status_code == 403
    r = post("/packages/withdraw", shop.key, {**target, "version_id": "ver_nothing"})
    assert (r.status_code, r.json()["error"]) == (404, "not_found")
    r = post("/library/channel", shop.library, {"product_id": shop.product, "channel": "x"})
    assert (r.status_code, r.json()["error"]) == (400, "invalid_request")
    r = post("/library/channel", shop.library, {"product_id": "prd_none", "channel": "beta"})
    assert (r.status_code, r.json()["error"]) == (404, "not_found")
    assert post("/library/channel", shop.key, {"product_id": shop.product,
                                               "channel": "beta"}).status_code == 403
