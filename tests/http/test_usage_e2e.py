"""Usage over time over real HTTP against a real `licore serve`, on SQLite and PostgreSQL:
runtime calls with known outcomes, then `GET /v1/usage` as JSON and as CSV, exact."""

from __future__ import annotations

import csv
import io
import time
from typing import Any

import httpx
import pytest

from tests.http.e2e import People, auth, setup_people
from tests.http.test_runtime_e2e import Shop, check, new_shop, nonce, rt, v1
from tests.support.server import Server

HOUR = 3600


@pytest.fixture(scope="module")
def people(server: Server) -> People:
    return setup_people(server.database_url, "5")


@pytest.fixture(scope="module")
def shop(server: Server, people: People) -> Shop:
    return new_shop(server, people, "51")


@pytest.fixture(scope="module")
def made(server: Server, shop: Shop) -> dict[str, int]:
    """5 passed checks (two places), 3 denied checks, 2 passed and 1 denied unlock."""
    for game in ("g1", "g1", "g2", None, None):
        assert check(server, shop, game_id=game).json() == {"success": True}
    for _ in range(3):
        assert check(server, shop, key="lk_" + "Z" * 40).json() == {"success": False}
    body = {"user_id": shop.buyer, "product_id": shop.product, "key": shop.buyer_key}
    for _ in range(2):
        assert rt(server, "/unlock", {**body, "nonce": nonce()}).json()["ok"] is True
    spent = nonce()
    assert rt(server, "/unlock", {**body, "nonce": spent}).json()["ok"] is True
    assert rt(server, "/unlock", {**body, "nonce": spent}).json() == {"ok": False}
    # A second license granted and revoked: with the buyer's, two grants and a revocation.
    other = {"product_id": shop.product, "user": "52"}
    v1(server, "POST", "/licenses", shop.key, json=other)
    v1(server, "DELETE", "/licenses", shop.key, params=other)
    return {"check_ok": 5, "check_denied": 3, "unlock_ok": 3, "unlock_denied": 1}


def usage(server: Server, shop: Shop, **params: Any) -> httpx.Response:
    hour = int(time.time()) // HOUR * HOUR
    asked = {"product_id": shop.product, "from": hour - 2 * HOUR, "to": hour + HOUR,
             **params}
    return httpx.get(f"{server.url}/v1/usage", headers=auth(shop.key),
                     params={k: v for k, v in asked.items() if v is not None})


def test_the_series_counts_every_call_by_endpoint_and_outcome(
        server: Server, shop: Shop, made: dict[str, int]) -> None:
    r = usage(server, shop)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["granularity"] == "hour" and len(body["points"]) == 3
    summed: dict[str, int] = {}
    for p in body["points"]:
        for endpoint, by in p["calls"].items():
            for outcome, n in by.items():
                summed[f"{endpoint}_{outcome}"] = summed.get(f"{endpoint}_{outcome}", 0) + n
    assert {k: n for k, n in summed.items() if n} == made
    # The calls fall in the current hour (a run across an hour's end splits them).
    busy = [p for p in body["points"] if p["total"]]
    assert sum(p["total"] for p in busy) == 12
    assert max(p["users"] for p in busy) == 1  # the one buyer
    assert sum(p["new_places"] for p in busy) == 2  # g1 and g2
    granted = {k: sum(p["licenses"][k] for p in body["points"]) for k in p["licenses"]}
    assert granted == {"granted": 2, "claimed": 0, "expired": 0, "revoked": 1}


def test_csv_has_the_same_numbers(server: Server, shop: Shop, made: dict[str, int]) -> None:
    as_json = usage(server, shop).json()
    for r in (usage(server, shop, format="csv"),
              httpx.get(f"{server.url}/v1/usage", params=dict(usage(
                  server, shop).request.url.params),
                  headers={**auth(shop.key), "Accept": "text/csv"})):
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
        rows = list(csv.DictReader(io.StringIO(r.text)))
        assert [int(row["start"]) for row in rows] == [p["start"] for p in as_json["points"]]
        for row, p in zip(rows, as_json["points"], strict=True):
            assert int(row["total"]) == p["total"]
            assert int(row["check_denied"]) == p["calls"]["check"]["denied"]
            assert int(row["unlock_ok"]) == p["calls"]["unlock"]["ok"]
            assert int(row["licenses_granted"]) == p["licenses"]["granted"]
            assert int(row["licenses_revoked"]) == p["licenses"]["revoked"]


def test_the_studio_wide_series_and_days(server: Server, shop: Shop,
                                         made: dict[str, int]) -> None:
    by_day = usage(server, shop, product_id=None, granularity="day").json()
    assert by_day["product_id"] is None and by_day["granularity"] == "day"
    assert sum(p["total"] for p in by_day["points"]) >= 12  # the studio's other products too


@pytest.mark.parametrize(("params", "field"), [
    ({"from": "soon"}, "from"),
    ({"to": None}, "to"),
    ({"to": 1000, "from": 2000}, "to"),
    ({"from": 0, "to": 10**9}, "to"),  # too many hours
    ({"granularity": "week"}, "granularity"),
    ({"format": "xml"}, "format"),
])
def test_bad_ranges_are_400_in_the_specifications_shape(
        server: Server, shop: Shop, params: dict[str, Any], field: str) -> None:
    r = usage(server, shop, **params)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "invalid_request" and field in r.json()["error_description"]


def test_another_studios_product_is_not_found(server: Server, shop: Shop,
                                               people: People) -> None:
    other = setup_people(server.database_url, "6")
    from tests.http.e2e import obtain_key
    key = obtain_key(server, other, "products:read", other.owner_id, other.studio_id)
    now = int(time.time())
    r = httpx.get(f"{server.url}/v1/usage", headers=auth(key),
                  params={"product_id": shop.product, "from": now - HOUR, "to": now})
    assert r.status_code == 404
