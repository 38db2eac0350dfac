"""Build files over real HTTP against a real `licore serve`, on SQLite and PostgreSQL:
upload, publish, the per-buyer download, `/update` and `/verify-source` (issue 5)."""

from __future__ import annotations

import json
import secrets
from typing import Any

import attrs
import httpx
import pytest

from adapters_formats.codec import RobloxModelCodec
from licore.builds.nodes import to_nodes
from licore.builds.tree import Model, set_source, source_of
from licore.services import operator
from tests.formats.test_xml import LAUGHS
from tests.http.e2e import (
    People,
    altered,
    auth,
    core,
    license_key,
    obtain_key,
    owner_key,
    setup_people,
)
from tests.http.test_runtime_e2e import ALL, v1
from tests.support.dbdump import tables_and_rows
from tests.support.hostile_models import deep_chain, referent_cycle, zstd_bomb
from tests.support.models import PLACEHOLDER, PLAIN_SCRIPT, product_model, script
from tests.support.server import Server
from tests.support.spec_verifier import open_envelope

CODEC = RobloxModelCodec()


@attrs.frozen
class Store:
    key: str  # the studio's key
    product: str
    v1_id: str
    v2_id: str
    buyers: dict[str, str]  # platform id -> library key
    keys: dict[str, str]  # platform id -> license key


def upload(server: Server, key: str, product: str, label: str, data: bytes) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/packages/versions", headers=auth(key),
                      params={"product_id": product, "version": label}, content=data)


def file_of(model: Model) -> bytes:
    return CODEC.write(model)


@pytest.fixture(scope="module")
def people(server: Server) -> People:
    return setup_people(server.database_url, "5")


@pytest.fixture(scope="module")
def store(server: Server, people: People) -> Store:
    key = owner_key(server, people, ALL)
    product = v1(server, "POST", "/products", key, json={"title": "Builds"}).json()["id"]
    # Scripts checked by /verify-source stay as written: the seller says so (rules {}), and
    # the copies then show each buyer's key where the placeholder was.
    v1(server, "POST", "/packages/settings", key,
       json={"product_id": product, "verify_scripts": True, "protection": {}})
    r = upload(server, key, product, "1.0.0", file_of(product_model()))
    assert r.status_code == 200, r.text
    first = r.json()["version"]
    assert first["live"] is False and first["published"] is False
    assert first["format"] == "binary"
    v1(server, "POST", "/packages/publish", key,
       json={"product_id": product, "version_id": first["id"]})
    second_model = product_model()
    greeter = second_model.roots[0].children[1]
    set_source(greeter, source_of(greeter) + b"-- v2\n")
    r = upload(server, key, product, "2.0.0", file_of(second_model))
    assert r.status_code == 200, r.text
    second = r.json()["version"]
    v1(server, "POST", "/packages/publish", key,
       json={"product_id": product, "version_id": second["id"]})
    buyers: dict[str, str] = {}
    keys: dict[str, str] = {}
    for platform_id, account_id in (("25", people.buyer_id), ("35", people.helper_id)):
        v1(server, "POST", "/licenses", key, json={"product_id": product, "user": platform_id})
        buyers[platform_id] = obtain_key(server, people, "library:read library:download",
                                         account_id, None)
        keys[platform_id] = license_key(server, product, platform_id)
    return Store(key, product, first["id"], second["id"], buyers, keys)


def download(server: Server, store: Store, buyer: str, **params: str) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/library/download", headers=auth(store.buyers[buyer]),
                     params={"product_id": store.product, **params})


def sources(data: bytes) -> dict[str, bytes]:
    return {s.name: source_of(s) for _, s in CODEC.read(data).scripts()}


def test_each_buyer_downloads_their_own_keyed_copy_of_the_live_build(
        server: Server, store: Store) -> None:
    a, b = "25", "35"
    got = {who: download(server, store, who) for who in (a, b)}
    for who, other in ((a, b), (b, a)):
        r = got[who]
        assert r.status_code == 200, r.text
        assert r.headers["x-service-version"] == "2.0.0"
        texts = sources(r.content)
        check = texts["LicenseCheck"]
        assert store.keys[who].encode() in check
        assert store.keys[other].encode() not in r.content
        assert PLACEHOLDER.encode() not in r.content
        assert texts["Greeter"].endswith(b"-- v2\n")
    # A repeat download is the cached copy, byte for byte.
    assert download(server, store, a).content == got[a].content


def test_an_older_version_id_downloads_that_version(server: Server, store: Store) -> None:
    r = download(server, store, "25", version_id=store.v1_id)
    assert r.status_code == 200, r.text
    assert r.headers["x-service-version"] == "1.0.0"
    assert sources(r.content)["Greeter"] == PLAIN_SCRIPT.encode()


def test_the_library_lists_published_versions_with_the_live_one_marked(
        server: Server, store: Store) -> None:
    r = httpx.get(f"{server.url}/v1/library", headers=auth(store.buyers["25"]),
                  params={"product_id": store.product, "versions": "1"})
    assert r.status_code == 200, r.text
    versions = r.json()["versions"]
    assert [(v["version"], v["live"]) for v in versions] == [("1.0.0", False), ("2.0.0", True)]
    for v in versions:
        assert set(v) == {"id", "version", "size_bytes", "sha256", "live", "created_at"}
        assert len(v["sha256"]) == 64 and v["size_bytes"] > 0


def test_a_label_used_twice_is_a_conflict_and_garbage_is_refused_storing_nothing(
        server: Server, store: Store) -> None:
    again = upload(server, store.key, store.product, "1.0.0", file_of(product_model()))
    assert again.status_code == 409
    assert again.json()["error"] == "already_exists"
    before = tables_and_rows(server.database_url, skip=("rate_counters",))
    hostile = [b"not a model", b"<roblox!\x89\xff\r\n\x1a\n" + bytes(10),
               file_of(product_model())[:-30], referent_cycle(), deep_chain(5000),
               zstd_bomb(), LAUGHS, file_of(product_model("xml"))[:-40]]
    for bad in hostile:
        r = upload(server, store.key, store.product, "9.9.9", bad)
        assert r.status_code == 400, r.text
        assert r.json()["error"] == "invalid_request"
        assert "model" in r.json()["error_description"]
    assert tables_and_rows(server.database_url, skip=("rate_counters",)) == before


def test_a_draft_cannot_be_downloaded_by_id(server: Server, store: Store) -> None:
    model = product_model()
    model.roots[0].children.append(script("DraftOnly", "print('draft')\n"))
    r = upload(server, store.key, store.product, "3.0.0-draft", file_of(model))
    assert r.status_code == 200, r.text
    draft = r.json()["version"]["id"]
    assert download(server, store, "25", version_id=draft).status_code == 404
    listed = v1(server, "GET", "/packages/versions", store.key,
                params={"product_id": store.product}).json()["versions"]
    assert [(v["version"], v["live"], v["published"]) for v in listed] == [
        ("1.0.0", False, True), ("2.0.0", True, True), ("3.0.0-draft", False, False)]
    packages = v1(server, "GET", "/packages", store.key).json()["packages"]
    mine = next(p for p in packages if p["product_id"] == store.product)
    assert mine["versions"] == ["1.0.0", "2.0.0", "3.0.0-draft"]
    assert mine["current_version"] == "2.0.0"


def nonce() -> str:
    return secrets.token_hex(16)


def runtime(server: Server, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.url}/runtime{path}", json=body)


def test_update_seals_the_buyers_copy_as_instance_nodes(server: Server, store: Store) -> None:
    buyer = "35"
    n = nonce()
    base = {"user_id": buyer, "product_id": store.product, "key": store.keys[buyer]}
    r = runtime(server, "/update", {**base, "nonce": n, "current": "1.0.0"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"ok", "version", "update", "cipher", "tag"}
    assert body["ok"] is True and body["update"] is True and body["version"] == "2.0.0"
    payload = json.loads(open_envelope(store.keys[buyer], n, body["cipher"], body["tag"]))
    assert payload["nonce"] == n and payload["version"] == "2.0.0"
    copy = download(server, store, buyer).content
    assert payload["instances"] == to_nodes(CODEC.read(copy))
    folder = payload["instances"][0]
    names = [c["Name"] for c in folder["Children"]]
    assert names[:2] == ["LicenseCheck", "Greeter"]
    link = folder["Children"][-1]
    assert link["Properties"]["Value"] == {"type": "Ref", "value": folder["Children"][-2]["Id"]}
    # Current: nothing to send, still sealed.
    n2 = nonce()
    r = runtime(server, "/update", {**base, "nonce": n2, "current": "2.0.0"})
    body = r.json()
    assert body["update"] is False
    assert json.loads(open_envelope(store.keys[buyer], n2, body["cipher"], body["tag"])) == {
        "nonce": n2, "version": "2.0.0", "instances": []}
    # A repeated nonce, a bad nonce, a wrong key: the failure body.
    assert runtime(server, "/update", {**base, "nonce": n2}).json() == {"ok": False}
    assert runtime(server, "/update", {**base, "nonce": "short"}).status_code == 400
    assert runtime(server, "/update", {**base, "key": "lk_x" * 12,
                                       "nonce": nonce()}).json() == {"ok": False}


def alert_kinds(server: Server, store: Store) -> list[tuple[str, str | None]]:
    r = v1(server, "GET", "/alerts", store.key, params={"product_id": store.product})
    return sorted((a["kind"], a["script_name"]) for a in r.json()["alerts"])


def test_verify_source_holds_only_for_the_exact_live_source(
        server: Server, store: Store, people: People) -> None:
    buyer = "25"
    greeter = (PLAIN_SCRIPT + "-- v2\n")
    base = {"user_id": buyer, "product_id": store.product, "key": store.keys[buyer],
            "script_name": "Greeter"}

    def verify(**changes: Any) -> dict[str, Any]:
        r = runtime(server, "/verify-source", {**base, "source": greeter, **changes})
        assert r.status_code == 200, r.text
        answer: dict[str, Any] = r.json()
        return answer

    assert verify() == {"ok": True}
    assert alert_kinds(server, store) == []
    changed = greeter.replace("hello", "hellp")
    assert verify(source=changed) == {"ok": False}
    assert verify(source=greeter + "\n") == {"ok": False}
    assert alert_kinds(server, store) == [("stolen_product", "Greeter")]  # one row, count 2
    # The live version's source, not an older one's, and not a draft-only script.
    assert verify(source=PLAIN_SCRIPT) == {"ok": False}
    assert verify(script_name="DraftOnly", source="print('draft')\n") == {"ok": False}
    # A wrong key for this user's license.
    assert verify(key=altered(store.keys["25"])) == {"ok": False}
    assert ("invalid_key_for_license", "Greeter") in alert_kinds(server, store)
    # Another buyer's key under this user: the key belongs to a different account.
    assert verify(key=store.keys["35"]) == {"ok": False}
    assert ("key_user_mismatch", "Greeter") in alert_kinds(server, store)
    # Blacklisted: false, whatever the source.
    core(server.database_url, lambda d: operator.set_blacklisted(
        d.storage, d.clock, people.studio_id, buyer, True))
    assert verify() == {"ok": False}
    core(server.database_url, lambda d: operator.set_blacklisted(
        d.storage, d.clock, people.studio_id, buyer, False))
    assert verify() == {"ok": True}
    # Paused: false, and the seller hears of it.
    v1(server, "POST", "/licenses/pause", store.key,
       json={"product_id": store.product, "user": buyer})
    assert verify() == {"ok": False}
    assert download(server, store, buyer).status_code == 404
    v1(server, "POST", "/licenses/resume", store.key,
       json={"product_id": store.product, "user": buyer})
    assert verify() == {"ok": True}
    # The setting off: always false.
    v1(server, "POST", "/packages/settings", store.key,
       json={"product_id": store.product, "verify_scripts": False})
    assert verify() == {"ok": False}
    v1(server, "POST", "/packages/settings", store.key,
       json={"product_id": store.product, "verify_scripts": True})
    kinds = {k for k, _ in alert_kinds(server, store)}
    assert kinds == {"stolen_product", "invalid_key_for_license", "key_user_mismatch"}
    # Malformed: 400 with the failure body.
    r = runtime(server, "/verify-source", {**base})
    assert r.status_code == 400 and r.json() == {"ok": False}


def test_an_xml_build_downloads_as_xml_with_the_buyers_key(server: Server, people: People,
                                                            store: Store) -> None:
    r = upload(server, store.key, store.product, "5.0-xml", file_of(product_model("xml")))
    assert r.status_code == 200, r.text
    version = r.json()["version"]
    assert version["format"] == "xml"
    got = download(server, store, "35", version_id=version["id"])
    assert got.status_code == 404  # a draft
    v1(server, "POST", "/packages/publish", store.key,
       json={"product_id": store.product, "version_id": version["id"]})
    got = download(server, store, "35")
    assert got.status_code == 200 and got.headers["content-type"] == "application/xml"
    assert got.content.startswith(b"<roblox")
    model = CODEC.read(got.content)
    assert model.format == "xml"
    texts = {s.name: source_of(s) for _, s in model.scripts()}
    assert store.keys["35"].encode() in texts["LicenseCheck"]
    assert PLACEHOLDER.encode() not in got.content
    # Put the binary build back live for the other tests of this module.
    v1(server, "POST", "/packages/publish", store.key,
       json={"product_id": store.product, "version_id": store.v2_id})
