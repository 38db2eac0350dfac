"""The license lifecycle on the seller dashboard (docs/licenses.md, docs/web.md): each action
is clicked in Chromium against a real server, and its effect is checked where it matters,
through the Partner API and the Runtime API."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from licore.model import Client, Studio
from licore.scopes import Permission
from tests.browser.site import (
    Person,
    add_client,
    add_collaborator,
    add_person,
    add_studio,
    id_in,
    runtime_check,
    sign_in,
    start_flow,
)
from tests.http.e2e import decide, license_key
from tests.support.server import Server

pytestmark = pytest.mark.browser

DAY = 86400


@attrs.frozen
class World:
    sam: Person  # owns Sam Scripts
    una: Person  # collaborator who may manage products only
    ben: Person  # buyers
    nora: Person
    studio: Studio
    app: Client
    api_key: str  # a Partner API key acting for the studio, to see what the pages did


@pytest.fixture(scope="module")
def world(site: Server) -> World:
    sam = add_person(site, "sam", "7101")
    una = add_person(site, "una", "7102")
    ben = add_person(site, "ben", "7104")
    nora = add_person(site, "nora", "7105")
    studio = add_studio(site, "Sam Scripts", sam)
    add_collaborator(site, studio, una, Permission.MANAGE_PRODUCTS)
    app = add_client(site, "Audit Bot", "products:read licenses:read")
    flow = start_flow(site, app, "products:read licenses:read")
    decide(site.database_url, sam.account.id, flow["user_code"], True, studio.id)
    r = httpx.post(f"{site.url}/auth/device/token", json={"device_code": flow["device_code"]})
    assert r.status_code == 200, r.text
    return World(sam, una, ben, nora, studio, app, r.json()["access_token"])


def partner(site: Server, world: World, path: str, **params: str) -> Any:
    r = httpx.get(f"{site.url}/v1{path}", params=params,
                  headers={"Authorization": f"Bearer {world.api_key}"})
    assert r.status_code == 200, r.text
    return r.json()


def listed(site: Server, world: World, product: str, platform_id: str) -> dict[str, Any]:
    found = partner(site, world, "/licenses", product_id=product)["licenses"]
    mine = [lc for lc in found if lc["platform_id"] == platform_id]
    assert len(mine) == 1, found
    entry: dict[str, Any] = mine[0]
    return entry


def unix(iso_text: str) -> int:
    return int(datetime.fromisoformat(iso_text.replace("Z", "+00:00")).timestamp())


def create_product(page: Any, world: World, title: str) -> str:
    page.goto(f"/dashboard/{world.studio.id}")
    page.get_by_text("New product").click()
    page.get_by_label("Title").fill(title)
    page.get_by_role("button", name="Create draft").click()
    assert page.get_by_role("heading", level=1).inner_text() == title
    return id_in(page.url, "prd")


def grant(page: Any, user: str, days: str = "", tier: str | None = None) -> None:
    page.get_by_label("Username or platform user id").fill(user)
    page.get_by_label("Ends after (days; empty: never)").fill(days)
    if tier is not None:
        page.locator("#grant-tier").select_option(tier)
    page.get_by_role("button", name="Grant license").click()


def status(page: Any) -> str:
    return str(page.get_by_role("status").inner_text())


def test_rekey_from_the_license_row_kills_the_old_key_and_the_new_one_passes(
        site: Server, world: World, page: Any) -> None:
    sign_in(page, world.sam)
    product = create_product(page, world, "Ray Gun")
    buyer = world.ben.account.platform_id
    grant(page, "ben")
    assert status(page) == "License for ben granted."
    row = page.locator("#licenses tbody tr", has_text=buyer)
    assert row.locator("td").nth(0).inner_text() == "active"
    assert row.locator("td").nth(1).inner_text() == "never"
    old_key = license_key(site, product, buyer)
    assert runtime_check(site, product, buyer, old_key)

    page.get_by_role("button", name=f"Re-key license of {buyer}").click()
    assert status(page).startswith(f"License for {buyer} re-keyed: the old key")
    new_key = license_key(site, product, buyer)
    assert new_key != old_key
    assert not runtime_check(site, product, buyer, old_key)
    assert runtime_check(site, product, buyer, new_key)
    assert old_key not in page.content() and new_key not in page.content()


def test_policy_then_grant_places_tier_renew_and_transfer_on_the_license_page(
        site: Server, world: World, page: Any, screenshots: Path) -> None:
    sign_in(page, world.sam)
    product = create_product(page, world, "Jet Pack")
    page.get_by_label("Place limit").fill("1")
    page.get_by_label("Past the limit").select_option("enforce")
    page.get_by_label("Trial days").fill("7")
    page.get_by_label("New tier name").fill("pro")
    page.get_by_label("New tier data (JSON)").fill('{"edition": "pro"}')
    page.get_by_role("button", name="Save license policy").click()
    assert status(page) == "License policy saved."
    assert partner(site, world, "/products/policy", product_id=product) == {
        "product_id": product, "place_limit": 1, "place_policy": "enforce", "trial_days": 7,
        "reminder_days": 0, "tiers": [{"name": "pro", "unlock_data": {"edition": "pro"}}],
        "grace_days": 0, "plans": []}
    assert page.get_by_label("Tier 1 name").input_value() == "pro"
    assert page.get_by_label("Tier 1 data (JSON)").input_value() == '{"edition":"pro"}'

    buyer, heir = world.ben.account.platform_id, world.nora.account.platform_id
    before = int(time.time())
    grant(page, buyer, days="10", tier="pro")
    assert status(page).startswith(f"License for {buyer} granted, until ")
    seen = listed(site, world, product, buyer)
    assert (seen["status"], seen["tier"]) == ("active", "pro")
    assert before + 10 * DAY <= unix(seen["expires_at"]) <= int(time.time()) + 10 * DAY
    row = page.locator("#licenses tbody tr", has_text=buyer)
    assert row.locator("td").nth(2).inner_text() == "pro"

    # Places: the limit of 1 is enforced; a reset lets another place in.
    key = license_key(site, product, buyer)
    assert runtime_check_at(site, product, buyer, key, "111")
    assert not runtime_check_at(site, product, buyer, key, "222")
    page.get_by_role("link", name=f"Manage license of {buyer}").click()
    assert page.get_by_role("heading", level=1).inner_text() == f"License of {buyer}"
    places = page.locator("#places tbody").inner_text()
    assert "111" in places
    page.screenshot(path=str(screenshots / "dashboard-license.png"), full_page=True)
    page.get_by_role("button", name="Reset places").click()
    assert "Places of" in status(page) and "reset" in status(page)
    assert partner(site, world, "/licenses/places", product_id=product,
                   user=buyer)["places"] == []
    assert page.get_by_text("Not used from any place yet.").is_visible()
    assert runtime_check_at(site, product, buyer, key, "222")

    # Tier back to the product's own data.
    page.get_by_label("Tier", exact=True).select_option("")
    page.get_by_role("button", name="Change tier").click()
    assert status(page) == f"License for {buyer} is on the product's own unlock data."
    assert listed(site, world, product, buyer)["tier"] is None

    # Renew: by days from the current end, then to a date.
    end = unix(listed(site, world, product, buyer)["expires_at"])
    page.get_by_label("Extend by (days)").fill("5")
    page.get_by_role("button", name="Renew license").click()
    assert status(page).startswith(f"License for {buyer} renewed: it ends ")
    assert unix(listed(site, world, product, buyer)["expires_at"]) == end + 5 * DAY
    target = (datetime.now(UTC) + timedelta(days=400)).date()
    page.get_by_label("Or end on (00:00 UTC of that date)").fill(target.isoformat())
    page.get_by_role("button", name="Renew license").click()
    midnight = datetime(target.year, target.month, target.day, tzinfo=UTC)
    assert unix(listed(site, world, product, buyer)["expires_at"]) == int(midnight.timestamp())
    # Both at once is refused on the page, and nothing changes.
    page.get_by_label("Extend by (days)").fill("5")
    page.get_by_label("Or end on (00:00 UTC of that date)").fill(target.isoformat())
    with page.expect_response(lambda r: r.request.method == "POST") as refused:
        page.get_by_role("button", name="Renew license").click()
    assert refused.value.status == 400
    assert "days or a date" in page.get_by_role("alert").inner_text()
    assert unix(listed(site, world, product, buyer)["expires_at"]) == int(midnight.timestamp())

    # Transfer: the old holder's license is inactive, the new one's active with a new key.
    page.goto(f"/dashboard/{world.studio.id}/products/{product}/licenses/{buyer}")
    page.get_by_label("To username or platform user id").fill("nora")
    page.get_by_role("button", name="Transfer license").click()
    assert status(page).startswith(f"License moved from {buyer} to {heir}")
    old, new = listed(site, world, product, buyer), listed(site, world, product, heir)
    assert (old["status"], old["is_active"]) == ("inactive", False)
    assert (new["status"], new["is_active"]) == ("active", True)
    assert new["expires_at"] == old["expires_at"]
    heir_key = license_key(site, product, heir)
    assert not runtime_check(site, product, buyer, key)
    assert runtime_check(site, product, heir, heir_key)
    moved = page.locator("#licenses tbody tr", has_text=f"moved to {heir}")
    assert moved.locator("td").nth(0).inner_text().startswith("inactive")
    # A second transfer to someone who holds it already is refused on the page (409).
    grant(page, world.sam.account.platform_id)
    page.goto(f"/dashboard/{world.studio.id}/products/{product}/licenses/"
              f"{world.sam.account.platform_id}")
    page.get_by_label("To username or platform user id").fill(heir)
    with page.expect_response(lambda r: r.request.method == "POST") as refused:
        page.get_by_role("button", name="Transfer license").click()
    assert refused.value.status == 409
    assert page.get_by_role("heading", level=1).inner_text() == "Already done"
    assert runtime_check(site, product, heir, heir_key)


def runtime_check_at(site: Server, product: str, user: str, key: str, place: str) -> bool:
    r = httpx.post(f"{site.url}/runtime/check", json={
        "user_id": user, "product_id": product, "key": key, "game_id": place})
    assert r.status_code == 200, r.text
    passed: bool = r.json()["success"]
    return passed


def test_alert_rows_rekey_pause_revoke_and_blacklist(
        site: Server, world: World, page: Any, screenshots: Path) -> None:
    sign_in(page, world.sam)
    product = create_product(page, world, "Leaky Blade")
    buyer = world.ben.account.platform_id
    grant(page, buyer)
    grant(page, "9101")  # the leaker's own license, to see the blacklist at the runtime
    leaker_key = license_key(site, product, "9101")
    leaked = license_key(site, product, buyer)
    assert not runtime_check_at(site, product, "9101", leaked, "555")  # someone else's key
    assert runtime_check(site, product, "9101", leaker_key)

    page.goto(f"/dashboard/{world.studio.id}")
    found = page.locator("#alerts tbody tr", has_text="Leaky Blade")
    assert found.count() == 1
    alert_id = (found.get_attribute("id") or "").removeprefix("alert-")
    row = page.locator(f"#alert-{alert_id}")  # later calls raise alerts of their own
    assert "Leaked key" in row.inner_text() and "9101" in row.inner_text()
    assert row.locator("td[data-label='License now'] .tag").inner_text() == "active"

    row.get_by_role("button", name="Re-key").click()
    assert status(page).startswith(f"License of {buyer} re-keyed")
    assert f"Done: License of {buyer} re-keyed" in row.inner_text()
    row.screenshot(path=str(screenshots / "dashboard-alert-acted.png"))
    fresh = license_key(site, product, buyer)
    assert not runtime_check(site, product, buyer, leaked)
    assert runtime_check(site, product, buyer, fresh)

    row.get_by_role("button", name="Pause").click()
    assert status(page) == f"License of {buyer} paused."
    assert listed(site, world, product, buyer)["status"] == "paused"
    assert row.locator("td[data-label='License now'] .tag").inner_text() == "paused"
    assert not runtime_check(site, product, buyer, fresh)

    row.get_by_role("button", name="Revoke").click()
    assert status(page) == f"License of {buyer} revoked."
    assert listed(site, world, product, buyer)["status"] == "inactive"
    assert row.locator("td[data-label='License now'] .tag").inner_text() == "inactive"
    assert row.get_by_role("button", name="Revoke").count() == 0  # nothing left to revoke

    row.get_by_role("button", name="Blacklist user").click()
    assert status(page) == "User 9101 blacklisted."
    assert "User 9101" in page.locator("#blacklist").inner_text()
    assert "blacklisted" in row.locator("td[data-label='User']").inner_text()
    assert not runtime_check(site, product, "9101", leaker_key)

    # A refused action is a page with the reason, never a 500.
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    refused = page.request.post(f"/dashboard/{world.studio.id}/alerts/{alert_id}",
                                form={"csrf": token, "action": "pause"})
    assert 400 <= refused.status < 500, refused.text()
    unknown = page.request.post(f"/dashboard/{world.studio.id}/alerts/{alert_id}",
                                form={"csrf": token, "action": "explode"})
    assert (unknown.status, "unknown alert action" in unknown.text()) == (400, True)


def test_who_may_act_license_actions_need_manage_licenses_and_strangers_get_404(
        site: Server, world: World, page: Any) -> None:
    sign_in(page, world.sam)
    product = create_product(page, world, "Guarded Gem")
    grant(page, "ben")
    page.get_by_role("button", name="Sign out").click()

    sign_in(page, world.una)  # manage products only
    base = f"/dashboard/{world.studio.id}/products/{product}"
    page.goto(base)
    assert "Licenses need the manage licenses permission" in page.locator("#licenses").inner_text()
    page.get_by_label("Trial days").fill("3")
    page.get_by_role("button", name="Save license policy").click()
    assert status(page) == "License policy saved."
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    for action in ("rekey", "transfer", "renew", "tier", "reset_places"):
        refused = page.request.post(f"{base}/licenses", form={
            "csrf": token, "action": action, "user": world.ben.account.platform_id,
            "to_user": "nora", "days": "3"})
        assert refused.status == 403, action
        assert "manage licenses permission" in refused.text()
    assert page.goto(f"{base}/licenses/{world.ben.account.platform_id}").status == 403
    # Without the form token, nothing is done at all.
    assert page.request.post(f"{base}/licenses", form={
        "action": "rekey", "user": world.ben.account.platform_id}).status == 403
    page.get_by_role("button", name="Sign out").click()

    sign_in(page, world.nora)  # in no studio
    assert page.goto(f"{base}/licenses/{world.ben.account.platform_id}").status == 404
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    for path, form in ((f"{base}/licenses", {"action": "rekey", "user": "ben"}),
                       (f"{base}/policy", {"place_policy": "alert"}),
                       (f"/dashboard/{world.studio.id}/alerts/alr_x", {"action": "revoke"})):
        assert page.request.post(path, form={"csrf": token, **form}).status == 404, path
