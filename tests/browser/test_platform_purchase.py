"""Buying for real, in Chromium: a buyer signs in with the platform (a stand-in OpenID
provider on loopback), claims a product whose purchase pass they own, an app gets their
library key through the device flow and downloads their copy, and the seller's dashboard
shows the license's source."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters_formats.codec import RobloxModelCodec
from licore.licenses import Source
from licore.model import Account, License
from licore.services.deps import Deps
from tests.browser.site import PollingApp, add_client, add_person, add_studio, id_in, sign_in
from tests.browser.site import start_flow as start_device_flow
from tests.http.e2e import core, license_key, whose_copy
from tests.support.models import product_model
from tests.support.platform_standin import Platform, running_platform, server_env
from tests.support.server import Server, running_server

pytestmark = pytest.mark.browser

PASS = "24681357"
BUYER = "3141592"


@pytest.fixture(scope="module")
def platform() -> Iterator[Platform]:
    with running_platform() as p:
        yield p


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory, platform: Platform) -> Iterator[Server]:
    url = f"sqlite:///{tmp_path_factory.mktemp('shop') / 'licore.db'}"
    with running_server(url, LICORE_DEVICE_INTERVAL="1", **server_env(platform)) as server:
        yield server


@pytest.fixture
def context(browser: Any, shop: Server) -> Iterator[Any]:
    opened = browser.new_context(base_url=shop.url, viewport={"width": 1100, "height": 900})
    try:
        yield opened
    finally:
        opened.close()


def test_buyer_signs_in_with_the_platform_claims_and_downloads(
        shop: Server, platform: Platform, context: Any, browser: Any, tmp_path: Path,
        screenshots: Path) -> None:
    sally = add_person(shop, "sally", "9001")
    studio = add_studio(shop, "Sally Scripts", sally)
    app = add_client(shop, "Place Installer", "library:read library:download")

    # The seller makes the product, publishes a build, names the pass and lists it.
    seller = browser.new_context(base_url=shop.url, viewport={"width": 1100, "height": 900})
    page = seller.new_page()
    sign_in(page, sally)
    page.goto(f"/dashboard/{studio.id}")
    page.get_by_text("New product").click()
    page.get_by_label("Title").fill("Jetpack")
    page.get_by_role("button", name="Create draft").click()
    product = id_in(page.url, "prd")
    model = tmp_path / "jetpack.rbxm"
    model.write_bytes(RobloxModelCodec().write(product_model()))
    page.get_by_label("Version label").fill("1.0")
    page.get_by_label("Model file (.rbxm or .rbxmx)").set_input_files(str(model))
    page.get_by_role("button", name="Upload draft").click()
    page.get_by_role("button", name="Publish 1.0").click()
    page.get_by_label("Purchase pass id").fill(PASS)
    page.get_by_role("button", name="Save settings").click()
    assert page.get_by_role("status").inner_text() == "Settings saved."
    page.get_by_label("Listed in the store").check()
    page.get_by_role("button", name="Save details").click()
    assert page.get_by_label("Purchase pass id").input_value() == PASS

    # The buyer bought the pass on the platform and signs in with it.
    platform.users[BUYER] = "jet_fan"
    platform.signed_in_as = BUYER
    platform.own(BUYER, PASS)
    buyer = context.new_page()
    buyer.goto("/signin")
    buyer.get_by_role("link", name="Sign in with Roblox").click()
    buyer.wait_for_load_state()
    assert buyer.get_by_role("status").filter(has_text="Signed in as jet_fan").count() == 1
    account: Account | None = core(shop.database_url, lambda d: _account(d, BUYER))
    assert account is not None and account.platform_id == BUYER

    buyer.goto("/store")
    buyer.get_by_role("button", name="I bought Jetpack").click()
    result = buyer.locator("#claim-result")
    assert result.get_attribute("data-result") == "granted"
    assert "is in your library now" in result.inner_text()
    buyer.screenshot(path=str(screenshots / "claim-granted.png"), full_page=True)
    buyer.goto("/library")
    assert "Jetpack" in buyer.locator("main table").inner_text()

    # An app asks for the buyer's library key; the buyer approves it in the browser.
    flow = start_device_flow(shop, app, "library:read library:download")
    polling = PollingApp(shop, flow)
    buyer.goto(flow["verification_uri_complete"])
    buyer.get_by_role("button", name="Continue").click()
    buyer.get_by_role("button", name="Approve").click()
    assert buyer.get_by_role("heading", level=1).inner_text() == "Approved"
    token = polling.result()
    assert token.status_code == 200, token.text
    headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
    r = httpx.get(f"{shop.url}/v1/library/download", headers=headers,
                  params={"product_id": product})
    assert r.status_code == 200, r.text
    # the buyer's own copy, protected by default: the key hidden, the copy traced to them
    own_key = license_key(shop, product, BUYER)
    assert own_key.encode() not in r.content and b"LICORE_LICENSE_KEY" not in r.content
    assert whose_copy(shop, product, BUYER, r.content)

    # The seller sees where the license came from.
    page.goto(f"/dashboard/{studio.id}/products/{product}")
    row = page.locator("#licenses tbody tr", has_text=BUYER)
    assert row.locator("td[data-label='Source']").inner_text() == "purchase pass"
    stored: License | None = core(shop.database_url, lambda d: _license(d, product))
    assert stored is not None and stored.source is Source.PURCHASE_PASS
    seller.close()


async def _account(d: Deps, platform_id: str) -> Account | None:
    async with d.storage.unit_of_work() as uow:
        return await uow.accounts.by_platform_id(platform_id)


async def _license(d: Deps, product_id: str) -> License | None:
    async with d.storage.unit_of_work() as uow:
        return await uow.licenses.for_user(product_id, BUYER)
