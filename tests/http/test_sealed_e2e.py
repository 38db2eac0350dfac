"""Sealed functions end to end: a buyer's copy downloaded from a real `licore serve`, run in
the real Luau VM with the SDK calling that server's `/unlock` (docs/protection.md, "Sealed
functions")."""

from __future__ import annotations

import json
from typing import Any

import attrs
import httpx
import pytest

from adapters_formats.codec import RobloxModelCodec
from licore.builds.tree import Instance, Model, Prop
from tests.http.e2e import auth, license_key, obtain_key, setup_people
from tests.http.test_runtime_e2e import ALL, UNLOCK_DATA, v1
from tests.protection.sealed_vm import SealedWorld
from tests.support.models import script
from tests.support.server import Server

CODEC = RobloxModelCodec()
NO_LICENSE = "licore: sealed code needs a live license"
SEALED_SCRIPT = '''local KEY = "LICORE_LICENSE_KEY"
--@sealed
local function damage(base, level)
  local steps = {}
  for i = 1, level do steps[i] = base * i end
  return `damage {#steps} {steps[level]} SECRET_MULTIPLIER`
end
print(damage(3, 4))
'''


@attrs.frozen
class Shop:
    product: str
    buyer: str
    key: str
    other: str
    other_key: str
    library_key: str
    seller_key: str


@pytest.fixture(scope="module")
def shop(server: Server) -> Shop:
    people = setup_people(server.database_url, "8")
    key = obtain_key(server, people, ALL, people.owner_id, people.studio_id)
    product = v1(server, "POST", "/products", key, json={"title": "Sealed"}).json()["id"]
    v1(server, "POST", "/packages/settings", key, json={
        "product_id": product, "unlock_data": UNLOCK_DATA,
        "protection": {"rules": [{"paths": ["*"], "preset": "strong"}]}})
    model = Model("binary", [Instance("Folder", "root", {"Name": Prop("String", b"Product")},
                                      children=[script("Combat", SEALED_SCRIPT)])])
    r = httpx.post(f"{server.url}/v1/packages/versions", headers=auth(key),
                   params={"product_id": product, "version": "1.0"}, content=CODEC.write(model))
    assert r.status_code == 200, r.text
    v1(server, "POST", "/packages/publish", key,
       json={"product_id": product, "version_id": r.json()["version"]["id"]})
    for user in ("28", "38"):
        v1(server, "POST", "/licenses", key, json={"product_id": product, "user": user})
    library = obtain_key(server, people, "library:read library:download", people.buyer_id,
                         None)
    return Shop(product, "28", license_key(server, product, "28"), "38",
                license_key(server, product, "38"), library, key)


def real_http(url: str, body: str) -> tuple[bool, int, str]:
    r = httpx.post(url, content=body, headers={"Content-Type": "application/json"})
    return True, r.status_code, r.text


def world(server: Server, shop: Shop, *, user: str, key: str,
          http: Any = real_http) -> SealedWorld:
    import time
    return SealedWorld(None, http=http, runtime_url=f"{server.url}/runtime",
                       product_id=shop.product, license_key=key, user_id=user,
                       now=int(time.time()))


@pytest.fixture(scope="module")
def copy(server: Server, shop: Shop) -> str:
    r = httpx.get(f"{server.url}/v1/library/download", headers=auth(shop.library_key),
                  params={"product_id": shop.product})
    assert r.status_code == 200, r.text
    (root,) = CODEC.read(r.content).roots
    (combat,) = root.children
    source: str = combat.properties["Source"].value.decode()
    return source


def test_the_buyers_copy_runs_its_sealed_function_with_a_live_license(
        server: Server, shop: Shop, copy: str) -> None:
    assert shop.key in copy or "LICORE_LICENSE_KEY" not in copy
    assert "SECRET_MULTIPLIER" not in copy and "steps" not in copy
    buyer = world(server, shop, user=shop.buyer, key=shop.key)
    assert buyer.run(copy) == "damage 4 12 SECRET_MULTIPLIER"
    assert buyer.run(copy) == "damage 4 12 SECRET_MULTIPLIER"
    assert buyer.unlocks == 1  # once per server


def test_without_the_buyers_license_the_sealed_function_never_runs(
        server: Server, shop: Shop, copy: str) -> None:
    # Another buyer's live license unlocks their own key, which opens nothing here.
    other = world(server, shop, user=shop.other, key=shop.other_key)
    assert other.run(copy) == f"error: script:?: {NO_LICENSE}"
    # The buyer's key under someone else's user id is refused (and alerts the seller).
    thief = world(server, shop, user="999", key=shop.key)
    assert thief.run(copy) == f"error: script:?: {NO_LICENSE}"


def test_a_recorded_unlock_answer_opens_nothing_for_anyone_else(
        server: Server, shop: Shop, copy: str) -> None:
    recorded: dict[str, str] = {}

    def recording(url: str, body: str) -> tuple[bool, int, str]:
        ok, status, text = real_http(url, body)
        recorded.update(request=body, answer=text)
        return ok, status, text

    assert world(server, shop, user=shop.buyer, key=shop.key, http=recording).run(copy) == (
        "damage 4 12 SECRET_MULTIPLIER")
    # The server refuses the recorded request when it is sent again (its nonce is spent).
    again = httpx.post(f"{server.url}/runtime/unlock", content=recorded["request"],
                       headers={"Content-Type": "application/json"})
    assert again.json() == {"ok": False}
    # Another user's game handed the recorded answer: it is sealed under another key and
    # nonce, so the SDK rejects it and the sealed function does not run.
    replayed = world(server, shop, user=shop.other, key=shop.other_key,
                     http=lambda url, body: (True, 200, recorded["answer"]))
    assert replayed.run(copy) == f"error: script:?: {NO_LICENSE}"
    assert json.loads(recorded["answer"])["ok"] is True


def _sealed_key_in(answer: str, license_key_: str, request: str) -> str:
    from licore.sealing import open_sealed
    sent, got = json.loads(request), json.loads(answer)
    plain = json.loads(open_sealed(license_key_, sent["nonce"], got["cipher"], got["tag"]))
    key: str = plain["sealed"]
    return key


def test_the_sealed_key_moves_with_a_new_version(server: Server, shop: Shop, copy: str,
                                                 ) -> None:
    """A key recorded from the buyer's own `/unlock` for one version's copy opens nothing of
    the next version's copy, which asks for the key of its own version; a key generation the
    license no longer has gets no key at all. (Last in the module: it publishes 2.0.)"""
    recorded: dict[str, str] = {}

    def recording(url: str, body: str) -> tuple[bool, int, str]:
        ok, status, text = real_http(url, body)
        recorded.update(request=body, answer=text)
        return ok, status, text

    assert world(server, shop, user=shop.buyer, key=shop.key, http=recording).run(copy) == (
        "damage 4 12 SECRET_MULTIPLIER")
    sealed_for = json.loads(recorded["request"])["sealed_for"]
    version_id, generation = sealed_for.rsplit(".", 1)
    old_key = _sealed_key_in(recorded["answer"], shop.key, recorded["request"])
    stale = httpx.post(f"{server.url}/runtime/unlock", json={
        "user_id": shop.buyer, "product_id": shop.product, "key": shop.key,
        "nonce": "n" * 24, "sealed_for": f"{version_id}.{int(generation) + 1}"})
    assert stale.json() == {"ok": False}
    malformed = httpx.post(f"{server.url}/runtime/unlock", json={
        "user_id": shop.buyer, "product_id": shop.product, "key": shop.key,
        "nonce": "m" * 24, "sealed_for": "not a context"})
    assert malformed.status_code == 400 and malformed.json() == {"ok": False}

    model = Model("binary", [Instance("Folder", "root", {"Name": Prop("String", b"Product")},
                                      children=[script("Combat", SEALED_SCRIPT)])])
    r = httpx.post(f"{server.url}/v1/packages/versions", headers=auth(shop.seller_key),
                   params={"product_id": shop.product, "version": "2.0"},
                   content=CODEC.write(model))
    assert r.status_code == 200, r.text
    v1(server, "POST", "/packages/publish", shop.seller_key,
       json={"product_id": shop.product, "version_id": r.json()["version"]["id"]})
    r = httpx.get(f"{server.url}/v1/library/download", headers=auth(shop.library_key),
                  params={"product_id": shop.product})
    assert r.status_code == 200, r.text
    (root,) = CODEC.read(r.content).roots
    newer = root.children[0].properties["Source"].value.decode()
    assert world(server, shop, user=shop.buyer, key=shop.key).run(newer) == (
        "damage 4 12 SECRET_MULTIPLIER")
    replay = SealedWorld(None, sealed_key=old_key, runtime_url=f"{server.url}/runtime",
                         product_id=shop.product, license_key=shop.key, user_id=shop.buyer)
    assert replay.run(copy) == "damage 4 12 SECRET_MULTIPLIER"  # the key of that very copy
    assert replay.run(newer) == f"error: script:?: {NO_LICENSE}"
