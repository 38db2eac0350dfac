"""The dashboard's usage charts in Chromium against a real server (docs/web.md, "Usage"):
after runtime calls with known outcomes, the chart's bars and the table hold the numbers
`GET /v1/usage` answers, point by point, for a product and for the studio, over each
period the picker offers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from licore.model import Studio
from tests.browser.site import (
    Person,
    add_client,
    add_person,
    add_studio,
    runtime_check,
    sign_in,
    start_flow,
)
from tests.http.e2e import auth, decide, license_key
from tests.support.server import Server

pytestmark = pytest.mark.browser


@attrs.frozen
class Shop:
    seller: Person
    studio: Studio
    key: str
    product: str


@pytest.fixture(scope="module")
def shop(site: Server) -> Shop:
    """A product with one buyer: 4 checks pass, 2 are denied (a wrong key)."""
    seller = add_person(site, "uma", "8201")
    studio = add_studio(site, "Uma Usage", seller)
    app = add_client(site, "Usage Bot", "products:read products:write licenses:write")
    flow = start_flow(site, app, "products:read products:write licenses:write")
    decide(site.database_url, seller.account.id, flow["user_code"], True, studio.id)
    key = httpx.post(f"{site.url}/auth/device/token",
                     json={"device_code": flow["device_code"]}).json()["access_token"]
    product = httpx.post(f"{site.url}/v1/products", headers=auth(key),
                         json={"title": "Chart Sword"}).json()["id"]
    r = httpx.post(f"{site.url}/v1/licenses", headers=auth(key),
                   json={"product_id": product, "user": "8202"})
    assert r.status_code == 200, r.text
    buyer_key = license_key(site, product, "8202")
    for _ in range(4):
        assert runtime_check(site, product, "8202", buyer_key)
    for _ in range(2):
        assert not runtime_check(site, product, "8202", "lk_" + "Q" * 40)
    return Shop(seller, studio, key, product)


def api_points(site: Server, shop: Shop, page: Any, product: str | None) -> list[dict[str, Any]]:
    """The API's series for exactly the range the page shows (the page names the call)."""
    shown = page.locator("#usage-api").text_content().removeprefix("GET ")
    params = dict(httpx.URL(shown).params)
    params.pop("format")
    if product is None:
        assert "product_id" not in params
    r = httpx.get(f"{site.url}/v1/usage", headers=auth(shop.key), params=params)
    assert r.status_code == 200, r.text
    points: list[dict[str, Any]] = r.json()["points"]
    return points


def bars(page: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = page.eval_on_selector_all(
        "#calls-chart g.bar",
        "gs => gs.map(g => ({ok: +g.dataset.ok, denied: +g.dataset.denied,"
        " limited: +g.dataset.rateLimited, text: g.getAttribute('aria-label')}))")
    return found


def outcome_sum(p: dict[str, Any], outcome: str) -> int:
    return sum(by[outcome] for by in p["calls"].values())


def check_page_matches_api(site: Server, shop: Shop, page: Any, product: str | None) -> None:
    points = api_points(site, shop, page, product)
    shown = bars(page)
    assert len(shown) == len(points)
    for bar, p in zip(shown, points, strict=True):
        assert (bar["ok"], bar["denied"], bar["limited"]) == (
            outcome_sum(p, "ok"), outcome_sum(p, "denied"), outcome_sum(p, "rate_limited"))
        # The numbers are words too: readable without colour, and by a screen reader.
        assert f"{p['total']:,} calls" in bar["text"]
    rows = page.locator("#usage-table tbody tr")
    assert rows.count() == len(points)
    for i, p in enumerate(points):
        cells = rows.nth(i).locator("td").all_text_contents()  # in a closed <details>
        assert [int(c) for c in cells] == [outcome_sum(p, "ok"), outcome_sum(p, "denied"),
                                           outcome_sum(p, "rate_limited"), p["total"],
                                           p["users"], p["places"], p["new_places"],
                                           *p["licenses"].values(),
                                           sum(p["downloads"].values())]
    assert sum(b["ok"] for b in shown) == 4 and sum(b["denied"] for b in shown) == 2
    assert sum(p["licenses"]["granted"] for p in points) == 1  # the buyer's


def test_the_product_chart_shows_the_apis_numbers_for_each_period(
        site: Server, shop: Shop, page: Any, screenshots: Path) -> None:
    sign_in(page, shop.seller)
    page.goto(f"/dashboard/{shop.studio.id}/products/{shop.product}")
    page.get_by_role("link", name="Usage", exact=True).click()
    assert page.get_by_role("heading", level=1).inner_text() == "Usage of Chart Sword"
    check_page_matches_api(site, shop, page, shop.product)
    assert len(bars(page)) in (168, 169)  # a week by the hour
    chart = page.get_by_role("img", name="Runtime calls of Chart Sword, by hour")
    assert chart.count() == 1
    page.screenshot(path=str(screenshots / "dashboard-usage.png"), full_page=True)
    for days in (30, 90):
        page.get_by_role("link", name=f"Last {days} days").click()
        assert page.get_by_role("link", name=f"Last {days} days").get_attribute(
            "aria-current") == "page"
        check_page_matches_api(site, shop, page, shop.product)
        assert page.get_by_role("img", name="Runtime calls of Chart Sword, by day").count() == 1


def test_the_studio_chart_sums_its_products(site: Server, shop: Shop, page: Any) -> None:
    sign_in(page, shop.seller)
    page.goto(f"/dashboard/{shop.studio.id}")
    page.get_by_role("link", name="Usage", exact=True).click()
    assert page.get_by_role("heading", level=1).inner_text() == "Usage of Uma Usage"
    check_page_matches_api(site, shop, page, None)
    assert page.get_by_role("link", name="Chart Sword").count() == 1


def test_a_period_not_offered_is_refused(site: Server, shop: Shop, page: Any) -> None:
    sign_in(page, shop.seller)
    r = page.goto(f"/dashboard/{shop.studio.id}/usage?days=8")
    assert r.status == 400


@pytest.mark.parametrize("where", ["product", "studio"])
def test_the_csv_download_is_the_apis_csv_for_the_range_shown(
        site: Server, shop: Shop, page: Any, where: str) -> None:
    """A seller signed in downloads the numbers from the page, without an app key: the file
    is what `GET /v1/usage?format=csv` answers for the same range."""
    sign_in(page, shop.seller)
    base = f"/dashboard/{shop.studio.id}"
    page.goto(f"{base}/products/{shop.product}/usage?days=30" if where == "product"
              else f"{base}/usage?days=30")
    shown = page.locator("#usage-api").text_content().removeprefix("GET ")
    with page.expect_download() as got:
        page.get_by_role("link", name="Download these numbers as CSV").click()
    download = got.value
    saved = Path(download.path()).read_bytes()
    api = httpx.get(f"{site.url}/v1/usage", headers=auth(shop.key),
                    params=dict(httpx.URL(shown).params))
    assert api.status_code == 200 and api.headers["content-type"].startswith("text/csv")
    assert saved == api.content
    assert saved.count(b"\r\n") in (31, 32)  # the header and 30 days (today's partly)
    rows = [line.split(b",") for line in saved.splitlines()[1:]]
    assert sum(int(r[2]) for r in rows) == 4 and sum(int(r[3]) for r in rows) == 2
    assert download.suggested_filename.startswith(
        f"usage-{shop.product if where == 'product' else 'studio'}-")


def test_the_csv_is_the_sellers_alone(site: Server, shop: Shop) -> None:
    # No session: the sign-in page, never the numbers.
    r = httpx.get(f"{site.url}/dashboard/{shop.studio.id}/usage.csv?days=7",
                  follow_redirects=False)
    assert r.status_code in (302, 303, 401, 403) and b"start," not in r.content
