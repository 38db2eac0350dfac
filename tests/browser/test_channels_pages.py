"""Release channels in Chromium against a real server: a seller publishes to beta and
withdraws the live build from the dashboard, a buyer opts in to beta from their library,
and the Runtime API follows each step at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters_formats.codec import RobloxModelCodec
from tests.browser.site import add_person, add_studio, id_in, sign_in
from tests.http.e2e import license_key
from tests.support.models import product_model
from tests.support.server import Server

pytestmark = pytest.mark.browser


def latest(site: Server, product: str, buyer: str, key: str, **sent: str) -> str:
    r = httpx.post(f"{site.url}/runtime/version", json={
        "user_id": buyer, "product_id": product, "key": key, **sent})
    assert r.status_code == 200, r.text
    label: str = r.json()["latest"]
    return label


def states(page: Any) -> list[tuple[str, str, str]]:
    """(label, state, channel) of each row of the versions list."""
    rows = page.locator("#versions tbody tr")

    def cell(row: int, n: int) -> str:
        return str(rows.nth(row).locator("td").nth(n).inner_text()).strip()

    return [(cell(i, 0), cell(i, 1), cell(i, 2)) for i in range(rows.count())]


def test_a_seller_publishes_to_beta_and_withdraws_and_a_buyer_opts_in(
        site: Server, page: Any, tmp_path: Path, screenshots: Path) -> None:
    seller, buyer = add_person(site, "cora", "7101"), add_person(site, "finn", "7102")
    studio = add_studio(site, "Cora Craft", seller)
    sign_in(page, seller)
    page.goto(f"/dashboard/{studio.id}")
    page.get_by_text("New product").click()
    page.get_by_label("Title").fill("Jetpack")
    page.get_by_role("button", name="Create draft").click()
    product = id_in(page.url, "prd")
    for n, label in enumerate(("1.0", "2.0", "3.0-beta")):
        model = tmp_path / f"jetpack-{n}.rbxm"
        model.write_bytes(RobloxModelCodec().write(product_model(extra=n)))
        page.get_by_label("Version label").fill(label)
        page.get_by_label("Model file (.rbxm or .rbxmx)").set_input_files(str(model))
        page.get_by_role("button", name="Upload draft").click()
    page.get_by_role("button", name="Publish 1.0").click()
    page.get_by_role("button", name="Publish 2.0").click()
    page.get_by_role("button", name="Publish to beta: 3.0-beta").click()
    assert page.get_by_role("status").inner_text() == "Version 3.0-beta is the beta build."
    assert states(page) == [("1.0", "published before", "stable"), ("2.0", "live", "stable"),
                            ("3.0-beta", "beta", "beta")]
    page.get_by_label("Username or platform user id").fill("finn")
    page.get_by_role("button", name="Grant license").click()
    key = license_key(site, product, "7102")
    assert latest(site, product, "7102", key, channel="beta") == "2.0"  # finn did not opt in

    # finn opts in from his library.
    finn = page.context.browser.new_context(base_url=site.url,
                                            viewport={"width": 1100, "height": 900})
    try:
        library = finn.new_page()
        sign_in(library, buyer)
        library.goto("/library")
        row = library.locator("main table tbody tr").filter(has_text="Jetpack")
        assert "Stable" in row.locator("td[data-label=Builds]").inner_text()
        library.get_by_role("button", name="Get beta builds of Jetpack").click()
        assert library.get_by_role("status").inner_text() == (
            "You get beta builds of this product now.")
        builds = library.locator("main table tbody tr").filter(
            has_text="Jetpack").locator("td[data-label=Builds]").inner_text()
        assert "Beta (3.0-beta)" in builds
        library.screenshot(path=str(screenshots / "library-beta.png"), full_page=True)
        assert latest(site, product, "7102", key, channel="beta") == "3.0-beta"
        assert latest(site, product, "7102", key) == "2.0"  # no channel named: stable
    finally:
        finn.close()

    # The seller withdraws the live build, through its confirmation step.
    page.goto(f"/dashboard/{studio.id}/products/{product}#versions")
    confirm = page.get_by_role("button", name="Yes, withdraw 2.0")
    assert not confirm.is_visible()  # nothing is withdrawn by a single click
    page.get_by_text("Withdraw 2.0…").click()
    assert "The newest stable version left goes live" in page.locator(
        "#versions details[open]").inner_text()
    page.locator("#versions").screenshot(path=str(screenshots / "dashboard-withdraw.png"))
    confirm.click()
    assert page.get_by_role("status").inner_text() == (
        "Version 2.0 withdrawn. Live version: 1.0.")
    assert states(page) == [("1.0", "live", "stable"), ("2.0", "withdrawn", "stable"),
                            ("3.0-beta", "beta", "beta")]
    assert page.get_by_role("button", name="Yes, withdraw 2.0").count() == 0
    assert latest(site, product, "7102", key) == "1.0"
    assert latest(site, product, "7102", key, channel="beta") == "3.0-beta"
    page.locator("#versions").screenshot(path=str(screenshots / "dashboard-channels.png"))

