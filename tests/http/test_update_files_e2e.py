"""Updates as files (docs/runtime.md) against a real `licore serve`, on SQLite and
PostgreSQL: `/update` with `"delivery": "file"` seals only the file's key and digest; the
file at the URL it names is the buyer's nodes encrypted under that key, exactly the
instances the specification's answer carries; it is made once, immutable (ETag,
`Cache-Control: immutable`, ranges, 304), remade byte for byte when the host lost it, and
the specification's `/update` is unchanged beside it."""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
from typing import Any

import attrs
import httpx
import pytest

from adapters_formats.zstd_text import ZstdText
from licore.update_files import keystream_xor
from tests.http.e2e import People, license_key, owner_key, setup_people
from tests.http.test_builds_e2e import file_of, upload
from tests.http.test_runtime_e2e import ALL, v1
from tests.support.models import product_model
from tests.support.server import Server, running_server
from tests.support.spec_verifier import open_envelope

BUYER = "248"  # the buyer account's platform id (setup_people: "2" + tag)


@attrs.frozen
class Shop:
    product: str
    license_key: str


@pytest.fixture(scope="module")
def people(server: Server) -> People:
    return setup_people(server.database_url, "48")


@pytest.fixture(scope="module")
def shop(server: Server, people: People) -> Shop:
    key = owner_key(server, people, ALL)
    product = v1(server, "POST", "/products", key, json={"title": "Files"}).json()["id"]
    r = upload(server, key, product, "1.0.0", file_of(product_model(extra=30)))
    assert r.status_code == 200, r.text
    v1(server, "POST", "/packages/publish", key,
       json={"product_id": product, "version_id": r.json()["version"]["id"]})
    v1(server, "POST", "/licenses", key, json={"product_id": product, "user": BUYER})
    return Shop(product, license_key(server, product, BUYER))


def update(server: Server, shop: Shop, **extra: Any) -> tuple[dict[str, Any], str]:
    nonce = secrets.token_hex(16)
    r = httpx.post(f"{server.url}/runtime/update", json={
        "user_id": BUYER, "product_id": shop.product, "key": shop.license_key,
        "nonce": nonce, **extra})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body, nonce


def opened(shop: Shop, body: dict[str, Any], nonce: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(
        open_envelope(shop.license_key, nonce, body["cipher"], body["tag"]))
    assert payload["nonce"] == nonce
    return payload


def test_an_update_as_a_file_opens_to_the_specifications_instances(
        server: Server, shop: Shop) -> None:
    body, nonce = update(server, shop, delivery="file", nodes="compact")
    assert set(body) == {"ok", "exp", "version", "update", "file", "cipher", "tag"}
    assert body["ok"] is True and body["update"] is True and body["version"] == "1.0.0"
    sealed = opened(shop, body, nonce)
    # Only the key and the digest are sealed, not the build.
    assert set(sealed) == {"nonce", "version", "exp", "file"}
    assert (sealed["version"], sealed["exp"]) == ("1.0.0", body["exp"])
    assert set(sealed["file"]) == {"key", "sha256", "size"}
    assert sealed["file"]["sha256"] == body["file"]["sha256"]
    assert sealed["file"]["size"] == body["file"]["size"]
    assert len(body["cipher"]) < 1024
    url = body["file"]["url"]
    assert url == f"/runtime/files/{body['file']['sha256']}-{body['file']['size']}"

    r = httpx.get(server.url + url)
    assert r.status_code == 200
    assert hashlib.sha256(r.content).hexdigest() == sealed["file"]["sha256"]
    assert len(r.content) == sealed["file"]["size"]
    text = keystream_xor(bytes.fromhex(sealed["file"]["key"]), r.content)

    spec, spec_nonce = update(server, shop, nodes="compact")
    assert set(spec) == {"ok", "version", "update", "cipher", "tag"}  # unchanged
    assert json.loads(text) == opened(shop, spec, spec_nonce)["instances"]


def test_the_file_is_made_once_and_served_as_immutable(server: Server, shop: Shop) -> None:
    first, n1 = update(server, shop, delivery="file")
    again, n2 = update(server, shop, delivery="file")
    assert first["file"] == again["file"]  # the same file, named by its content
    assert opened(shop, first, n1)["file"] == opened(shop, again, n2)["file"]
    url = server.url + first["file"]["url"]
    whole = httpx.get(url)
    assert whole.status_code == 200
    etag = whole.headers["etag"]
    assert etag == f'"{first["file"]["sha256"]}"'
    assert "immutable" in whole.headers["cache-control"]
    assert "public" in whole.headers["cache-control"]
    assert whole.headers["accept-ranges"] == "bytes"
    assert whole.headers["content-type"] == "application/octet-stream"
    assert "content-encoding" not in whole.headers  # encrypted bytes do not compress

    part = httpx.get(url, headers={"Range": "bytes=10-99"})
    assert part.status_code == 206
    assert part.content == whole.content[10:100]
    assert part.headers["content-range"] == f"bytes 10-99/{len(whole.content)}"

    cached = httpx.get(url, headers={"If-None-Match": etag})
    assert cached.status_code == 304 and cached.content == b""
    head = httpx.head(url)
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == len(whole.content)


def test_a_host_that_lost_the_file_remakes_it_byte_for_byte(
        server: Server, shop: Shop) -> None:
    body, _ = update(server, shop, delivery="file", nodes="tagged")
    url = server.url + body["file"]["url"]
    before = httpx.get(url).content
    shutil.rmtree(server.data_dir / "update-files")  # another host, or a lost disk
    after = httpx.get(url)
    assert after.status_code == 200
    assert after.content == before


def test_unknown_and_malformed_file_names_are_not_found(server: Server, shop: Shop) -> None:
    for name in ("0" * 64 + "-10", "nope", "../../licore.db", "A" * 64 + "-1"):
        r = httpx.get(f"{server.url}/runtime/files/{name}")
        assert r.status_code == 404, name
    body, _ = update(server, shop, delivery="file")
    r = httpx.post(server.url + body["file"]["url"])
    assert r.status_code == 405
    assert r.headers["allow"] == "GET, HEAD"


def test_delivery_is_checked_and_a_caller_up_to_date_gets_no_file(
        server: Server, shop: Shop) -> None:
    r = httpx.post(f"{server.url}/runtime/update", json={
        "user_id": BUYER, "product_id": shop.product, "key": shop.license_key,
        "nonce": secrets.token_hex(16), "delivery": "carrier pigeon"})
    assert (r.status_code, r.json()) == (400, {"ok": False})
    body, nonce = update(server, shop, delivery="file", current="1.0.0")
    assert set(body) == {"ok", "version", "update", "cipher", "tag"}
    assert body["update"] is False
    assert opened(shop, body, nonce)["instances"] == []
    sealed, n2 = update(server, shop, delivery="sealed")
    assert "file" not in sealed and opened(shop, sealed, n2)["instances"]


def test_a_cdn_base_and_the_proxys_location_are_used_when_set(
        module_database_url: str) -> None:
    with running_server(module_database_url,
                        LICORE_UPDATE_FILES_URL="https://cdn.example/licore-files/",
                        LICORE_UPDATE_FILES_ACCEL="/_licore_update_files/") as other:
        people = setup_people(other.database_url, "49")
        key = owner_key(other, people, ALL)
        product = v1(other, "POST", "/products", key, json={"title": "Cdn"}).json()["id"]
        r = upload(other, key, product, "1.0.0", file_of(product_model()))
        v1(other, "POST", "/packages/publish", key,
           json={"product_id": product, "version_id": r.json()["version"]["id"]})
        v1(other, "POST", "/licenses", key, json={"product_id": product, "user": "249"})
        shop = Shop(product, license_key(other, product, "249"))
        nonce = secrets.token_hex(16)
        body = httpx.post(f"{other.url}/runtime/update", json={
            "user_id": "249", "product_id": product, "key": shop.license_key,
            "nonce": nonce, "delivery": "file"}).json()
        name = f"{body['file']['sha256']}-{body['file']['size']}"
        assert body["file"]["url"] == f"https://cdn.example/licore-files/{name}"
        # The CDN's origin is this server: the proxy sends the file, licore only checks.
        r = httpx.get(f"{other.url}/runtime/files/{name}")
        assert r.status_code == 200 and r.content == b""
        assert r.headers["x-accel-redirect"] == f"/_licore_update_files/{name[:2]}/{name}"
        assert r.headers["etag"] == f'"{body["file"]["sha256"]}"'
        assert "immutable" in r.headers["cache-control"]
        on_disk = other.data_dir / "update-files" / name[:2] / name
        key_hex = opened(shop, body, nonce)["file"]["key"]
        assert json.loads(keystream_xor(bytes.fromhex(key_hex), on_disk.read_bytes()))


def test_a_compressed_file_is_a_fraction_of_the_plain_one_and_opens_to_the_same_nodes(
        server: Server, shop: Shop) -> None:
    plain, _ = update(server, shop, delivery="file", nodes="compact")
    packed, nonce = update(server, shop, delivery="file", nodes="compact", compression="zstd")
    assert packed["file"]["compression"] == "zstd" and "compression" not in plain["file"]
    sealed = opened(shop, packed, nonce)["file"]
    assert sealed["compression"] == "zstd"  # what the reader does is sealed too
    data = httpx.get(server.url + packed["file"]["url"]).content
    assert hashlib.sha256(data).hexdigest() == sealed["sha256"]
    assert len(data) < plain["file"]["size"] / 3
    text = ZstdText().decompress(keystream_xor(bytes.fromhex(sealed["key"]), data))
    spec, spec_nonce = update(server, shop, nodes="compact")
    assert json.loads(text) == opened(shop, spec, spec_nonce)["instances"]
    r = httpx.post(f"{server.url}/runtime/update", json={
        "user_id": BUYER, "product_id": shop.product, "key": shop.license_key,
        "nonce": secrets.token_hex(16), "delivery": "file", "compression": "gzip"})
    assert (r.status_code, r.json()) == (400, {"ok": False})
