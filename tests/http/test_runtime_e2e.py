"""The Runtime API over real HTTP against a real `licore serve`, on SQLite and PostgreSQL."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from licore.model import License
from licore.services import operator
from licore.services.deps import Deps
from tests.http.e2e import (
    People,
    altered,
    auth,
    core,
    license_key,
    owner_key,
    setup_people,
)
from tests.support.server import Server, running_server
from tests.support.spec_verifier import SpecCheckFailed, verify

ALL = "packages:read packages:write products:read products:write licenses:read licenses:write"
UNLOCK_DATA = {"weapons": ["sword", "bow"], "level": 3, "note": "ünïcode"}


@attrs.frozen
class Shop:
    key: str
    product: str
    other_product: str
    buyer_key: str
    buyer: str


@pytest.fixture(scope="module")
def people(server: Server) -> People:
    return setup_people(server.database_url, "4")


def v1(server: Server, method: str, path: str, key: str, **kw: Any) -> httpx.Response:
    r = httpx.request(method, f"{server.url}/v1{path}", headers=auth(key), **kw)
    # Every Partner API call these tests make is meant to succeed; say so when one does not.
    assert r.status_code == 200, (method, path, r.status_code, r.text)
    return r


def stored_license(server: Server, product_id: str, platform_id: str) -> License:
    async def read(d: Deps) -> License:
        async with d.storage.unit_of_work() as uow:
            lic = await uow.licenses.for_user(product_id, platform_id)
        assert lic is not None
        return lic

    return core(server.database_url, read)


def new_shop(server: Server, people: People, buyer: str = "24") -> Shop:
    key = owner_key(server, people, ALL)
    product = v1(server, "POST", "/products", key, json={"title": "Runtime"}).json()["id"]
    other = v1(server, "POST", "/products", key, json={"title": "Other"}).json()["id"]
    r = v1(server, "POST", "/packages/settings", key,
           json={"product_id": product, "unlock_data": UNLOCK_DATA})
    assert r.status_code == 200, r.text
    assert v1(server, "POST", "/licenses", key, json={"product_id": product,
                                                      "user": buyer}).status_code == 200
    return Shop(key, product, other, license_key(server, product, buyer), buyer)


def rt(server: Server, path: str, body: Any) -> httpx.Response:
    return httpx.post(f"{server.url}/runtime{path}", json=body)


def check(server: Server, shop: Shop, **changes: Any) -> httpx.Response:
    body = {"user_id": shop.buyer, "product_id": shop.product, "key": shop.buyer_key,
            **changes}
    return rt(server, "/check", {k: v for k, v in body.items() if v is not None})


def alerts(server: Server, shop: Shop) -> list[dict[str, Any]]:
    r = v1(server, "GET", "/alerts", shop.key, params={"product_id": shop.product})
    assert r.status_code == 200
    items: list[dict[str, Any]] = r.json()["alerts"]
    return items


def nonce() -> str:
    return secrets.token_hex(16)


def test_check_passes_and_fails_as_the_specification_says(server: Server,
                                                          people: People) -> None:
    shop = new_shop(server, people)
    ok = check(server, shop)
    assert (ok.status_code, ok.json()) == (200, {"success": True})
    assert check(server, shop, user_id=int(shop.buyer)).json() == {"success": True}
    assert check(server, shop, key=altered(shop.buyer_key)).json() == {"success": False}
    assert check(server, shop, product_id=shop.other_product).json() == {"success": False}
    nobody = check(server, shop, user_id="31337", key="lk_" + "Z" * 40)
    assert (nobody.status_code, nobody.json()) == (200, {"success": False})

    target = {"product_id": shop.product, "user": shop.buyer}
    v1(server, "POST", "/licenses/pause", shop.key, json=target)
    assert check(server, shop).json() == {"success": False}
    v1(server, "POST", "/licenses/resume", shop.key, json=target)
    assert check(server, shop).json() == {"success": True}

    studio = people.studio_id
    core(server.database_url, lambda d: operator.set_blacklisted(
        d.storage, d.clock, studio, shop.buyer, True))
    assert check(server, shop).json() == {"success": False}
    core(server.database_url, lambda d: operator.set_blacklisted(
        d.storage, d.clock, studio, shop.buyer, False))
    assert check(server, shop).json() == {"success": True}

    v1(server, "DELETE", "/licenses", shop.key, params=target)
    assert check(server, shop).json() == {"success": False}
    v1(server, "POST", "/licenses", shop.key, json=target)
    assert check(server, shop).json() == {"success": False}  # the old key died with revoke
    fresh = license_key(server, shop.product, shop.buyer)
    assert fresh != shop.buyer_key
    assert check(server, shop, key=fresh).json() == {"success": True}


@pytest.mark.parametrize("body", [
    b"not json", b"[]",
])
def test_check_is_http_200_even_for_malformed_requests(server: Server, body: bytes) -> None:
    r = httpx.post(f"{server.url}/runtime/check", content=body)
    assert (r.status_code, r.json()) == (200, {"success": False})


def test_check_malformed_fields(server: Server, people: People) -> None:
    shop = new_shop(server, people, "41")
    for changes in ({"user_id": True}, {"user_id": "abc"}, {"user_id": 1.5},
                    {"product_id": 5}, {"key": ""}, {"game_id": [1]}):
        r = check(server, shop, **changes)
        assert (r.status_code, r.json()) == (200, {"success": False}), changes
    missing = rt(server, "/check", {"user_id": shop.buyer, "product_id": shop.product})
    assert (missing.status_code, missing.json()) == (200, {"success": False})


def test_a_key_under_another_user_raises_one_leaked_key_alert(server: Server,
                                                              people: People) -> None:
    shop = new_shop(server, people, "42")
    r = check(server, shop, user_id="666", game_id=123456)
    assert r.json() == {"success": False}
    found = [a for a in alerts(server, shop) if a["kind"] == "leaked_key"]
    assert len(found) == 1
    alert = found[0]
    assert alert["platform_id"] == "666" and alert["key_owner_platform_id"] == "42"
    assert alert["game_id"] == "123456" and alert["count"] == 1
    assert shop.buyer_key not in str(alert)
    check(server, shop, user_id="666", game_id=123456)
    again = [a for a in alerts(server, shop) if a["kind"] == "leaked_key"]
    assert len(again) == 1 and again[0]["count"] == 2 and again[0]["id"] == alert["id"]
    unlock = rt(server, "/unlock", {"user_id": "666", "product_id": shop.product,
                                    "key": shop.buyer_key, "nonce": nonce()})
    assert unlock.json() == {"ok": False}


def test_more_places_than_allowed_raise_unrecognised_place(server: Server,
                                                           people: People) -> None:
    shop = new_shop(server, people, "43")
    for place in ("1", "2", "3", "1"):
        assert check(server, shop, game_id=place).json() == {"success": True}
    assert [a for a in alerts(server, shop) if a["kind"] == "unrecognised_place"] == []
    assert check(server, shop, game_id="4").json() == {"success": True}
    found = [a for a in alerts(server, shop) if a["kind"] == "unrecognised_place"]
    assert len(found) == 1 and found[0]["game_id"] == "4" and found[0]["count"] == 1
    check(server, shop, game_id="4")
    check(server, shop, game_id="2")
    again = [a for a in alerts(server, shop) if a["kind"] == "unrecognised_place"]
    assert len(again) == 1 and again[0]["count"] == 2


def test_unlock_answers_pass_the_four_checks(server: Server, people: People) -> None:
    shop = new_shop(server, people, "44")
    n = nonce()
    r = rt(server, "/unlock", {"user_id": int(shop.buyer), "product_id": shop.product,
                               "key": shop.buyer_key, "nonce": n, "game_id": "9"})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"ok", "exp", "cipher", "tag"} and body["ok"] is True
    assert abs(body["exp"] - (time.time() + 300)) < 10
    payload = verify(shop.buyer_key, n, body, int(time.time()))
    assert payload["data"] == UNLOCK_DATA and payload["nonce"] == n
    with pytest.raises(SpecCheckFailed) as refused:
        verify(shop.buyer_key, n, {**body, "cipher": _flip(body["cipher"])}, int(time.time()))
    assert refused.value.check == "tag"
    with pytest.raises(SpecCheckFailed):
        verify(shop.buyer_key, nonce(), body, int(time.time()))
    with pytest.raises(SpecCheckFailed) as late:
        verify(shop.buyer_key, n, body, body["exp"] + 1)
    assert late.value.check == "exp"


def _flip(hex_text: str) -> str:
    return ("0" if hex_text[0] != "0" else "1") + hex_text[1:]


@pytest.mark.parametrize("bad", ["a" * 15, "a" * 129, "abcdefgh-ijklmnop", "abcdefgh ijklmnop",
                                 "", 1234567890123456789, None])
def test_malformed_nonces_are_refused_with_exactly_ok_false(server: Server, people: People,
                                                            bad: Any) -> None:
    shop = new_shop(server, people, "45")
    body = {"user_id": shop.buyer, "product_id": shop.product, "key": shop.buyer_key}
    if bad is not None:
        body["nonce"] = bad
    r = rt(server, "/unlock", body)
    assert (r.status_code, r.json()) == (400, {"ok": False})
    assert r.content == b'{"ok":false}'


def test_a_nonce_works_once_and_edge_lengths_work(server: Server, people: People) -> None:
    shop = new_shop(server, people, "46")
    for n in ("a" * 16, "Z9" * 64):
        body = {"user_id": shop.buyer, "product_id": shop.product, "key": shop.buyer_key,
                "nonce": n}
        assert rt(server, "/unlock", body).json()["ok"] is True
        replay = rt(server, "/unlock", body)
        assert (replay.status_code, replay.json()) == (200, {"ok": False})


def test_unlock_failures_are_exactly_ok_false(server: Server, people: People) -> None:
    shop = new_shop(server, people, "47")
    base = {"user_id": shop.buyer, "product_id": shop.product, "key": shop.buyer_key}
    for changes in ({"key": "lk_wrong"}, {"product_id": shop.other_product},
                    {"user_id": "1"}):
        r = rt(server, "/unlock", {**base, **changes, "nonce": nonce()})
        assert (r.status_code, r.content) == (200, b'{"ok":false}'), changes
    r = httpx.post(f"{server.url}/runtime/unlock", content=b"{")
    assert (r.status_code, r.content) == (400, b'{"ok":false}')


def test_version_reports_latest_update_and_file_id(server: Server, people: People) -> None:
    shop = new_shop(server, people, "48")
    base = {"user_id": shop.buyer, "product_id": shop.product, "key": shop.buyer_key}

    async def publish(d: Deps, label: str) -> None:
        async with d.storage.unit_of_work() as uow:
            product = await uow.products.by_id(shop.product)
            assert product is not None
            await uow.products.save(attrs.evolve(product, current_version=label,
                                                 current_version_id=f"ver_{label}"))

    none = rt(server, "/version", base).json()
    assert none == {"ok": True, "latest": "", "update": False, "fileId": ""}
    core(server.database_url, lambda d: publish(d, "1.2.0"))
    assert rt(server, "/version", base).json() == {
        "ok": True, "latest": "1.2.0", "update": True, "fileId": "ver_1.2.0"}
    assert rt(server, "/version", {**base, "current": "1.2.0"}).json()["update"] is False
    assert rt(server, "/version", {**base, "current": "1.1.0"}).json()["update"] is True
    bad = rt(server, "/version", {**base, "key": "lk_nope"})
    assert (bad.status_code, bad.json()) == (200, {"ok": False})
    malformed = rt(server, "/version", {**base, "current": 5})
    assert (malformed.status_code, malformed.json()) == (400, {"ok": False})


def test_runtime_rate_limit_per_key(module_database_url: str) -> None:
    with running_server(module_database_url, LICORE_RUNTIME_KEY_RATE_LIMIT="5") as server:
        people = setup_people(module_database_url, "6")
        shop = new_shop(server, people, "49")
        server.next_window()
        answers = [check(server, shop) for _ in range(6)]
        assert [a.json() for a in answers[:5]] == [{"success": True}] * 5
        assert answers[5].status_code == 429 and answers[5].json() == {"success": False}
        assert int(answers[5].headers["retry-after"]) >= 1


def test_paused_and_blacklisted_fail_every_runtime_call(server: Server, people: People) -> None:
    shop = new_shop(server, people, "50")
    base = {"user_id": shop.buyer, "product_id": shop.product, "key": shop.buyer_key}
    target = {"product_id": shop.product, "user": shop.buyer}

    def answers() -> list[Any]:
        return [rt(server, "/check", base).json(),
                rt(server, "/unlock", {**base, "nonce": nonce()}).json(),
                rt(server, "/version", base).json()]

    assert [a.get("success", a.get("ok")) for a in answers()] == [True, True, True]
    v1(server, "POST", "/licenses/pause", shop.key, json=target)
    assert answers() == [{"success": False}, {"ok": False}, {"ok": False}]
    v1(server, "POST", "/licenses/resume", shop.key, json=target)
    studio = people.studio_id
    core(server.database_url, lambda d: operator.set_blacklisted(
        d.storage, d.clock, studio, shop.buyer, True))
    assert answers() == [{"success": False}, {"ok": False}, {"ok": False}]


def test_serve_with_two_workers_and_its_metrics_folder_goes_with_it(
        module_database_url: str) -> None:
    with running_server(module_database_url, workers="2") as server:
        answers = {httpx.get(f"{server.url}/healthz").status_code for _ in range(20)}
        assert answers == {200}
        children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
        workers = [p for p in children.read_text().split() if p]
        assert len(workers) >= 2
        # Forked from the supervisor, which imported their modules once (licore_cli/
        # supervisor.py): a forked worker runs the supervisor's command line; a spawned one
        # would run multiprocessing's own (`... --multiprocessing-fork`).
        command = Path(f"/proc/{server.process.pid}/cmdline").read_bytes()
        lines = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in workers]
        assert sum(line == command for line in lines) == 2, lines
        assert not any(b"--multiprocessing-fork" in line for line in lines), lines
        # The folder a worker writes its metrics into: prometheus-client maps its files
        # there (workers are forked, so /proc/PID/environ still shows the supervisor's
        # environment as it was at start, before serve set PROMETHEUS_MULTIPROC_DIR).
        maps = [line for pid in workers
                for line in Path(f"/proc/{pid}/maps").read_text().splitlines()]
        (folder,) = {str(Path(line.split()[-1]).parent) for line in maps
                     if "/licore-metrics-" in line}
        assert Path(folder).is_dir()
    assert not Path(folder).exists()  # removed when serve stopped
