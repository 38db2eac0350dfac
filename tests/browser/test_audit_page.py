"""The dashboard's audit page in Chromium against a real server (docs/web.md): what a person
does on the dashboard is listed with their name for it, filtered by action and day; the page
is for those who may manage the studio's licenses only."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from licore.scopes import Permission
from tests.browser.site import add_collaborator, add_person, add_studio, sign_in
from tests.support.server import Server

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser: Any, site: Server) -> Iterator[Any]:
    context = browser.new_context(base_url=site.url, viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    try:
        yield opened
    finally:
        context.close()


def test_a_dashboard_change_is_listed_with_its_person_and_filtered(
        site: Server, page: Any, screenshots: Path) -> None:
    owner = add_person(site, "aude", "9101")
    maker = add_person(site, "mako", "9102")  # may manage products only
    studio = add_studio(site, "Aude Arms", owner)
    add_collaborator(site, studio, maker, Permission.MANAGE_PRODUCTS)

    sign_in(page, owner)
    page.goto(f"/dashboard/{studio.id}")
    page.get_by_text("New product").click()
    page.get_by_label("Title").fill("Halberd")
    page.get_by_role("button", name="Create draft").click()
    page.goto(f"/dashboard/{studio.id}#blacklist")
    page.get_by_label("Platform user id").fill("9199")
    page.get_by_role("button", name="Blacklist", exact=True).click()

    page.goto(f"/dashboard/{studio.id}")
    page.get_by_role("link", name="Audit trail").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Audit trail"
    everything = page.locator("#audit-entries tbody tr")
    actions = [everything.nth(i).locator("th").inner_text()
               for i in range(everything.count())]
    assert actions[:2] == ["blacklist.added", "product.created"]

    page.get_by_label("Action").fill("blacklist")
    page.get_by_label("From").fill(datetime.now(UTC).strftime("%Y-%m-%d"))
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("#audit-entries tbody tr")
    assert rows.count() == 1
    row = rows.first.inner_text()
    assert "blacklist.added" in row and f"person aude {owner.account.id}" in row
    assert "user 9199" in row and "blacklisted: false → true" in row
    page.screenshot(path=str(screenshots / "dashboard-audit.png"), full_page=True)
    # At 1280 px the whole table is in view: nothing to scroll sideways, changes included.
    page.set_viewport_size({"width": 1280, "height": 900})
    region = page.get_by_role("region", name="Audit entries")
    assert region.evaluate("r => r.scrollWidth <= r.clientWidth")
    changes = rows.first.locator("td[data-label=Changes]").bounding_box()
    box = region.bounding_box()
    assert changes is not None and box is not None
    assert changes["x"] + changes["width"] <= box["x"] + box["width"] + 1

    page.get_by_label("Action").fill("webhook")
    page.get_by_role("button", name="Filter").click()
    assert "No entries match these filters." in page.locator("main").inner_text()

    # Someone who may not manage the studio's licenses is refused the page.
    other = page.context.browser.new_context(base_url=site.url).new_page()
    sign_in(other, maker)
    other.goto(f"/dashboard/{studio.id}")
    assert other.get_by_role("link", name="Audit trail").count() == 0
    refused = other.goto(f"/dashboard/{studio.id}/audit")
    assert refused is not None and refused.status == 403
    other.context.close()
