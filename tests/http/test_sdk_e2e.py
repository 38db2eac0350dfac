"""The Luau SDK in the real Luau VM against a real `licore serve`: Python makes the HTTP
calls and hands each answer to the Luau code through the SDK's injected http function."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from typing import Any

import attrs
import httpx
import pytest

from adapters_formats.codec import RobloxModelCodec
from licore.builds.nodes import nodes_json, to_nodes
from tests.http.e2e import People, auth, license_key, obtain_key, owner_key, setup_people
from tests.http.test_runtime_e2e import ALL, UNLOCK_DATA, v1
from tests.sdk import encoding_service
from tests.sdk.luau_sdk import LuauSdk, as_bytes, method
from tests.support.models import PLAIN_SCRIPT, product_model
from tests.support.server import Server

CODEC = RobloxModelCodec()
Http = Callable[[str, str], tuple[bool, int, str]]


@attrs.frozen
class Game:
    product: str
    buyer: str
    key: str
    other_buyer: str
    other_key: str
    library_key: str
    studio_key: str


@pytest.fixture(scope="module")
def sdk() -> LuauSdk:
    return LuauSdk()


@pytest.fixture(scope="module")
def game(server: Server) -> Game:
    people: People = setup_people(server.database_url, "6")
    key = owner_key(server, people, ALL)
    product = v1(server, "POST", "/products", key, json={"title": "SDK"}).json()["id"]
    # Greeter is checked by /verify-source below, so the seller keeps the scripts as
    # written (rules {}); the copies then show the buyer's key where the placeholder was.
    v1(server, "POST", "/packages/settings", key,
       json={"product_id": product, "unlock_data": UNLOCK_DATA, "protection": {}})
    r = httpx.post(f"{server.url}/v1/packages/versions", headers=auth(key),
                   params={"product_id": product, "version": "1.0"},
                   content=CODEC.write(product_model()))
    assert r.status_code == 200, r.text
    v1(server, "POST", "/packages/publish", key,
       json={"product_id": product, "version_id": r.json()["version"]["id"]})
    for user in ("26", "36"):
        v1(server, "POST", "/licenses", key, json={"product_id": product, "user": user})
    library = obtain_key(server, people, "library:read library:download", people.buyer_id,
                         None)
    return Game(product, "26", license_key(server, product, "26"), "36",
                license_key(server, product, "36"), library, key)


def real_http(url: str, body: str) -> tuple[bool, int, str]:
    try:
        r = httpx.post(url, content=body, headers={"Content-Type": "application/json"})
    except httpx.TransportError:
        return False, 0, ""
    return True, r.status_code, r.text


def real_get(url: str) -> tuple[bool, int, bytes]:
    try:
        r = httpx.get(url)
    except httpx.TransportError:
        return False, 0, b""
    return True, r.status_code, r.content


Get = Callable[[str], tuple[bool, int, bytes]]


def lua_get(sdk: LuauSdk, get: Get) -> Any:
    """`get` as the SDK's injected `httpGet`: the body handed over as a Luau string of bytes."""

    def call(_lua: Any, args: tuple[Any, ...]) -> tuple[bool, int, Any]:
        ok, status, body = get(as_bytes(args[0]).decode())
        return ok, status, sdk.bytes_in(body)

    return sdk.lua.create_function(call)


def client(sdk: LuauSdk, server: Server, game: Game, http: Http = real_http,
           now: int | None = None, get: Get = real_get, **extra: Any) -> Any:
    return sdk.client(http, httpGet=lua_get(sdk, get), **extra, license_key=game.key,
                      nonces=[secrets.token_hex(16) for _ in range(4)],
                      now=int(time.time()) if now is None else now,
                      runtimeUrl=f"{server.url}/runtime", productId=game.product,
                      userId=game.buyer)


def rewriting(change: Callable[[dict[str, Any]], None]) -> Http:
    """Real HTTP, with the answer's JSON changed on the way back (an interceptor)."""

    def http(url: str, body: str) -> tuple[bool, int, str]:
        ok, status, text = real_http(url, body)
        answer = json.loads(text)
        change(answer)
        return ok, status, json.dumps(answer)

    return http


def _normal(node: dict[str, Any]) -> dict[str, Any]:
    """The SDK's JSON encoder writes an empty table as []: read it as the empty object."""
    return {**node, "Properties": node["Properties"] or {},
            "Children": [_normal(c) for c in node["Children"] or []]}


def flip_first(hexed: str) -> str:
    return f"{int(hexed[:2], 16) ^ 0x01:02x}{hexed[2:]}"


def test_a_genuine_unlock_yields_the_products_data(
        sdk: LuauSdk, server: Server, game: Game) -> None:
    data, reason = method(client(sdk, server, game), "unlock", game.buyer)
    assert reason is None
    assert sdk.to_python(data) == UNLOCK_DATA
    assert method(client(sdk, server, game), "check", game.buyer) == [True]


def _other_request(game: Game, swap: Callable[[dict[str, Any]], None]) -> Http:
    """Real HTTP, but the request the server sees is changed: its answer is then a genuine
    answer to another question."""

    def http(url: str, body: str) -> tuple[bool, int, str]:
        request = json.loads(body)
        swap(request)
        return real_http(url, json.dumps(request))

    return http


def _swap_nonce(request: dict[str, Any]) -> None:
    request["nonce"] = secrets.token_hex(16)


def _other_license(game: Game) -> Callable[[dict[str, Any]], None]:
    def swap(request: dict[str, Any]) -> None:
        request["key"], request["user_id"] = game.other_key, game.other_buyer

    return swap


@pytest.mark.parametrize(("case", "reason"), [
    ("cipher", "tag_mismatch"), ("tag", "tag_mismatch"), ("nonce", "tag_mismatch"),
    ("license", "tag_mismatch"), ("expired", "expired")])
def test_a_forged_or_stale_unlock_is_refused_with_its_reason(
        sdk: LuauSdk, server: Server, game: Game, case: str, reason: str) -> None:
    now = None
    http: Http = real_http
    if case == "cipher":
        http = rewriting(lambda a: a.update(cipher=flip_first(a["cipher"])))
    elif case == "tag":
        http = rewriting(lambda a: a.update(tag=flip_first(a["tag"])))
    elif case == "nonce":
        http = _other_request(game, _swap_nonce)
    elif case == "license":
        http = _other_request(game, _other_license(game))
    else:
        now = int(time.time()) + 301 + 5  # past the payload's five minutes
    assert method(client(sdk, server, game, http, now), "unlock", game.buyer) == [None, reason]


def test_a_genuine_update_equals_the_buyers_download_and_a_tampered_one_changes_nothing(
        sdk: LuauSdk, server: Server, game: Game) -> None:
    c = client(sdk, server, game, compactNodes=False)
    nodes, reason = method(c, "update", "0.9", game.buyer)
    assert reason is None
    download = httpx.get(f"{server.url}/v1/library/download", headers=auth(game.library_key),
                         params={"product_id": game.product})
    assert download.status_code == 200, download.text
    assert [_normal(n) for n in sdk.to_python(nodes)] == to_nodes(CODEC.read(download.content))
    assert game.key in json.dumps(sdk.to_python(nodes))
    before = sdk.to_python(c.get("build"))
    assert before["version"] == "1.0"
    # The same client, now behind an interceptor: the build it holds stays as it was.
    tampered = client(sdk, server, game, rewriting(
        lambda a: a.update(cipher=flip_first(a["cipher"]))))
    tampered.set("build", c.get("build"))
    assert method(tampered, "update", "0.9", game.buyer) == [None, "tag_mismatch"]
    assert sdk.to_python(tampered.get("build")) == before


@pytest.fixture(scope="module")
def native_sdk() -> LuauSdk:
    """The SDK where EncodingService hashes (the stand-in, through the host's hashlib)."""
    sdk = LuauSdk(before=encoding_service.install)
    assert sdk.module.get("nativeHashing") is True
    return sdk


def recording(seen: list[str], change: Callable[[bytes], bytes] = lambda b: b) -> Get:
    def get(url: str) -> tuple[bool, int, bytes]:
        seen.append(url)
        ok, status, body = real_get(url)
        return ok, status, change(body)

    return get


def _download(server: Server, game: Game, compact: bool = False) -> list[dict[str, Any]]:
    """The buyer's download as nodes, in the form asked for."""
    r = httpx.get(f"{server.url}/v1/library/download", headers=auth(game.library_key),
                  params={"product_id": game.product})
    assert r.status_code == 200, r.text
    nodes: list[dict[str, Any]] = json.loads(nodes_json(CODEC.read(r.content), compact))
    return [_normal(n) for n in nodes]


@pytest.mark.parametrize("hashing", ["pure", "native"])
def test_the_sdk_takes_the_update_as_a_file_where_the_server_offers_it(
        sdk: LuauSdk, native_sdk: LuauSdk, server: Server, game: Game, hashing: str) -> None:
    vm = native_sdk if hashing == "native" else sdk
    seen: list[str] = []
    asked: list[dict[str, Any]] = []

    def http(url: str, body: str) -> tuple[bool, int, str]:
        asked.append(json.loads(body))
        return real_http(url, body)

    # The stand-in game has EncodingService and no HttpService: the SDK's own JSON code.
    codec = {"jsonEncode": vm.module.get("jsonEncode"), "jsonDecode": vm.module.get("jsonDecode")}
    for compact in (False, True):
        c = client(vm, server, game, http, get=recording(seen), compactNodes=compact, **codec)
        nodes, reason = method(c, "update", "0.9", game.buyer)
        assert reason is None
        assert [_normal(n) for n in vm.to_python(nodes)] == _download(server, game, compact)
        assert vm.to_python(c.get("build"))["version"] == "1.0"
    assert [a["delivery"] for a in asked] == ["file", "file"]
    # Where EncodingService decompresses natively the files come compressed.
    assert [a.get("compression") for a in asked] == (
        ["zstd", "zstd"] if hashing == "native" else [None, None])
    # One file a node form, fetched from the origin the client calls.
    assert len(seen) == 2 and len(set(seen)) == 2
    assert all(u.startswith(f"{server.url}/runtime/files/") for u in seen)


def test_a_file_changed_on_its_way_is_refused_and_the_sealed_answer_taken_instead(
        sdk: LuauSdk, server: Server, game: Game) -> None:
    seen: list[str] = []
    flipped = recording(seen, lambda b: bytes([b[0] ^ 1]) + b[1:])
    c = client(sdk, server, game, get=flipped)
    nodes, reason = method(c, "update", "0.9", game.buyer)
    assert reason is None and len(seen) == 1  # the file was fetched, and not used
    assert [_normal(n) for n in sdk.to_python(nodes)] == _download(server, game, True)
    assert c.get("fileUpdates") is False  # sealed answers from now on
    method(c, "update", "0.9", game.buyer)
    assert len(seen) == 1


def test_a_client_told_not_to_never_asks_for_a_file(
        sdk: LuauSdk, server: Server, game: Game) -> None:
    seen: list[str] = []
    asked: list[dict[str, Any]] = []

    def http(url: str, body: str) -> tuple[bool, int, str]:
        asked.append(json.loads(body))
        return real_http(url, body)

    c = client(sdk, server, game, http, get=recording(seen), fileUpdates=False)
    nodes, reason = method(c, "update", "0.9", game.buyer)
    assert reason is None and seen == [] and "delivery" not in asked[0]
    assert asked[0]["nodes"] == "compact"  # the SDK's default since 0.6.0
    assert [_normal(n) for n in sdk.to_python(nodes)] == _download(server, game, True)


def test_verify_source_reports_the_exact_live_source(
        sdk: LuauSdk, server: Server, game: Game) -> None:
    v1(server, "POST", "/packages/settings", game.studio_key,
       json={"product_id": game.product, "verify_scripts": True})
    c = client(sdk, server, game)
    assert method(c, "verifySource", "Greeter", PLAIN_SCRIPT, game.buyer) == [True]
    assert method(c, "verifySource", "Greeter", PLAIN_SCRIPT + " ", game.buyer) == [False]
