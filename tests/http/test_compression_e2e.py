"""gzip over real HTTP against a real `licore serve`, on SQLite and PostgreSQL: `/update` and a
download of nodes (or XML) are gzip-encoded when the caller accepts gzip (as Roblox's
HttpService always does), decode to exactly the answer a caller that does not accept it gets,
and say so with `Content-Encoding: gzip` and `Vary: Accept-Encoding`; small runtime answers and
binary model files (compressed already) are untouched."""

from __future__ import annotations

import gzip
import json
import random
import secrets
from typing import Any

import attrs
import httpx
import pytest

from adapters_http.compression import GZIP_ABOVE
from licore.builds.tree import Model
from tests.http.e2e import People, auth, license_key, obtain_key, owner_key, setup_people
from tests.http.test_builds_e2e import file_of, upload
from tests.http.test_runtime_e2e import ALL, v1
from tests.support.models import product_model, script
from tests.support.server import Server
from tests.support.spec_verifier import open_envelope

BUYER = "233"  # the buyer account's platform id (setup_people: "2" + tag)


@attrs.frozen
class Shop:
    product: str
    library_key: str  # the buyer's key for the Partner API's library
    license_key: str


@pytest.fixture(scope="module")
def people(server: Server) -> People:
    return setup_people(server.database_url, "33")


def big_model() -> Model:
    model = product_model()
    # A script of varied text, so that the build and its /update are well over GZIP_ABOVE.
    rng = random.Random(33)
    # (values in one table: Luau allows 200 locals a function, and the default protection
    # refuses a script that could not run)
    lines = [f"V[{i}] = {rng.randrange(10**9)} -- {rng.random():.12f}\n" for i in range(900)]
    model.roots[0].children.append(script("Tables", "local V = {}\n" + "".join(lines)))
    return model


@pytest.fixture(scope="module")
def shop(server: Server, people: People) -> Shop:
    key = owner_key(server, people, ALL)
    product = v1(server, "POST", "/products", key, json={"title": "Gzip"}).json()["id"]
    r = upload(server, key, product, "1.0.0", file_of(big_model()))
    assert r.status_code == 200, r.text
    v1(server, "POST", "/packages/publish", key,
       json={"product_id": product, "version_id": r.json()["version"]["id"]})
    v1(server, "POST", "/licenses", key, json={"product_id": product, "user": BUYER})
    library = obtain_key(server, people, "library:read library:download", people.buyer_id, None)
    return Shop(product, library, license_key(server, product, BUYER))


def raw(method: str, url: str, accept: str, **kw: Any) -> tuple[httpx.Response, bytes]:
    """The answer and its bytes as they came over the wire (httpx would decode them)."""
    with httpx.Client() as client, client.stream(
            method, url, headers={**kw.pop("headers", {}), "Accept-Encoding": accept},
            **kw) as r:
        return r, b"".join(r.iter_raw())


def update(server: Server, shop: Shop, accept: str) -> tuple[httpx.Response, bytes, str]:
    n = secrets.token_hex(16)
    r, body = raw("POST", f"{server.url}/runtime/update", accept, json={
        "user_id": BUYER, "product_id": shop.product, "key": shop.license_key, "nonce": n})
    assert r.status_code == 200
    return r, body, n


def opened(shop: Shop, text: bytes, nonce: str) -> dict[str, Any]:
    body = json.loads(text)
    payload: dict[str, Any] = json.loads(
        open_envelope(shop.license_key, nonce, body["cipher"], body["tag"]))
    assert payload.pop("nonce") == nonce
    return payload


def test_update_is_gzip_encoded_for_a_caller_that_accepts_it(
        server: Server, shop: Shop) -> None:
    zipped, wire, n = update(server, shop, "gzip, deflate")
    assert zipped.headers["content-encoding"] == "gzip"
    assert zipped.headers["vary"] == "Accept-Encoding"
    assert "content-length" not in zipped.headers  # sent in pieces as it is compressed
    text = gzip.decompress(wire)
    assert len(text) > GZIP_ABOVE
    # The same JSON text an uncompressed answer is written as, and about half the bytes:
    # the cipher is hex, four bits of information in each eight-bit character.
    assert text == json.dumps(json.loads(text), separators=(",", ":")).encode()
    assert len(wire) < 0.6 * len(text)

    plain, plain_wire, n2 = update(server, shop, "identity")
    assert "content-encoding" not in plain.headers
    assert plain.headers["vary"] == "Accept-Encoding"
    assert int(plain.headers["content-length"]) == len(plain_wire)
    # Each answer is sealed for its own nonce; what they carry is the same build.
    assert opened(shop, text, n) == opened(shop, plain_wire, n2)
    assert set(json.loads(text)) == set(json.loads(plain_wire))


def test_a_nodes_download_decodes_to_the_same_file_as_the_plain_one(
        server: Server, shop: Shop) -> None:
    url = f"{server.url}/v1/library/download"
    kw: dict[str, Any] = {"headers": auth(shop.library_key),
                          "params": {"product_id": shop.product, "nodes": "compact"}}
    plain, plain_bytes = raw("GET", url, "identity", **dict(kw))
    assert plain.status_code == 200, plain_bytes[:300]
    assert "content-encoding" not in plain.headers
    assert plain.headers["vary"] == "Accept-Encoding"
    assert len(plain_bytes) > GZIP_ABOVE
    zipped, wire = raw("GET", url, "gzip", **dict(kw))
    assert zipped.status_code == 200
    assert zipped.headers["content-encoding"] == "gzip"
    assert zipped.headers["vary"] == "Accept-Encoding"
    assert gzip.decompress(wire) == plain_bytes  # the same nodes, byte for byte
    for name in ("content-disposition", "x-service-version", "cache-control", "content-type"):
        assert zipped.headers[name] == plain.headers[name]


def test_a_binary_download_is_sent_as_it_is_to_a_caller_that_accepts_gzip(
        server: Server, shop: Shop) -> None:
    """A `.rbxm`'s chunks are compressed already: gzip would cost CPU for few bytes."""
    url = f"{server.url}/v1/library/download"
    kw: dict[str, Any] = {"headers": auth(shop.library_key),
                          "params": {"product_id": shop.product}}
    r, wire = raw("GET", url, "gzip, deflate", **dict(kw))
    assert r.status_code == 200, wire[:300]
    assert r.headers["content-type"] == "application/octet-stream"
    assert len(wire) > GZIP_ABOVE
    assert "content-encoding" not in r.headers and "vary" not in r.headers
    assert int(r.headers["content-length"]) == len(wire)
    assert wire[:8] == b"<roblox!"  # the model file itself


@pytest.mark.parametrize("accept", ["gzip;q=0", "br", "identity, *;q=0", "gzip;q=0, *"])
def test_a_caller_that_refuses_gzip_gets_the_plain_update(
        server: Server, shop: Shop, accept: str) -> None:
    r, body, n = update(server, shop, accept)
    assert "content-encoding" not in r.headers
    assert r.headers["vary"] == "Accept-Encoding"
    assert opened(shop, body, n)["version"] == "1.0.0"


def test_small_runtime_answers_are_untouched(server: Server, shop: Shop) -> None:
    base = {"user_id": BUYER, "product_id": shop.product, "key": shop.license_key}
    for path, body in (("/check", base), ("/unlock", {**base, "nonce": secrets.token_hex(16)}),
                       ("/update", {**base, "nonce": secrets.token_hex(16),
                                    "current": "1.0.0"})):
        r, wire = raw("POST", f"{server.url}/runtime{path}", "gzip, deflate", json=body)
        assert r.status_code == 200, wire
        assert "content-encoding" not in r.headers and "vary" not in r.headers
        assert int(r.headers["content-length"]) == len(wire) < GZIP_ABOVE
        json.loads(wire)
