"""The approval page in Chromium against a real server, with an app polling for its key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from licore.model import Client, Studio
from licore.scopes import Permission
from tests.browser.site import (
    Person,
    PollingApp,
    add_client,
    add_collaborator,
    add_person,
    add_studio,
    sign_in,
    start_flow,
)
from tests.support.server import Server

pytestmark = pytest.mark.browser


@attrs.frozen
class World:
    olive: Person  # owns Olive Works; in Pine Studio with manage_licenses only
    hazel: Person  # in Olive Works with manage_licenses only
    basil: Person  # in no studio
    works: Studio
    pine: Studio
    app: Client


@pytest.fixture(scope="module")
def world(site: Server) -> World:
    olive = add_person(site, "olive", "5001")
    hazel = add_person(site, "hazel", "5002")
    basil = add_person(site, "basil", "5003")
    pine_owner = add_person(site, "pete", "5004")
    works = add_studio(site, "Olive Works", olive)
    pine = add_studio(site, "Pine Studio", pine_owner)
    add_collaborator(site, pine, olive, Permission.MANAGE_LICENSES)
    add_collaborator(site, works, hazel, Permission.MANAGE_LICENSES)
    app = add_client(site, "Model Installer",
                     "products:read products:write licenses:read licenses:write "
                     "library:read library:download")
    return World(olive, hazel, basil, works, pine, app)


@pytest.fixture
def page(browser: Any, site: Server) -> Iterator[Any]:
    context = browser.new_context(base_url=site.url, viewport={"width": 1000, "height": 900})
    opened = context.new_page()
    try:
        yield opened
    finally:
        context.close()


def test_approving_a_studio_key_for_the_chosen_studio_gives_the_polling_app_the_survivors(
        site: Server, world: World, page: Any, screenshots: Path) -> None:
    flow = start_flow(site, world.app, "products:read licenses:read licenses:write")
    app = PollingApp(site, flow)
    # The link the app shows sends an anonymous visitor to sign in, then back with the code.
    sign_in(page, world.olive, at=flow["verification_uri_complete"])
    code_box = page.get_by_label("Code shown by the app")
    assert code_box.input_value() == flow["user_code"]
    page.get_by_role("button", name="Continue").click()

    assert page.get_by_role("heading", level=1).inner_text() == "Approve Model Installer?"
    body = page.locator("main").inner_text()
    assert "Model Installer installs licensed models into your game" in body
    assert flow["user_code"] in body
    for words in ("See the studio's products", "See who owns the studio's products",
                  "Grant and revoke licenses to the studio's products"):
        assert words in body
    assert flow["device_code"] not in page.content()
    # Each studio says what survives there and what is dropped.
    pine_detail = page.locator(".choice", has_text="Pine Studio")
    assert "products:read (needs manage products)" in pine_detail.inner_text()
    assert page.get_by_label("Olive Works").is_checked()
    page.screenshot(path=str(screenshots / "approval.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(screenshots / "approval-phone.png"), full_page=True)
    page.set_viewport_size({"width": 1000, "height": 900})

    assert app.still_pending()
    page.get_by_label("Pine Studio").check()
    page.get_by_role("button", name="Approve").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Approved"
    assert "Dropped, because you may not grant them there: products:read" in page.inner_text(
        "main")

    token = app.result()
    assert token.status_code == 200, token.text
    granted = token.json()
    assert granted["scope"] == "licenses:read licenses:write"
    assert granted["studio_id"] == world.pine.id
    assert granted["access_token"] not in page.content()
    headers = {"Authorization": f"Bearer {granted['access_token']}"}
    assert httpx.get(f"{site.url}/v1/alerts", headers=headers).status_code == 200
    assert httpx.get(f"{site.url}/v1/products", headers=headers).status_code == 403


def test_denying_gives_the_app_access_denied(site: Server, world: World, page: Any) -> None:
    flow = start_flow(site, world.app, "library:read")
    app = PollingApp(site, flow)
    sign_in(page, world.basil)
    cookie = next(c for c in page.context.cookies() if c["name"] == "licore_session")
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["secure"]) == (True, "Lax", False)
    assert page.evaluate("document.cookie") == ""  # out of reach of any script
    page.goto("/device")
    page.get_by_label("Code shown by the app").fill(flow["user_code"].lower().replace("-", ""))
    page.get_by_role("button", name="Continue").click()
    assert "List the products you own and their versions" in page.inner_text("main")
    page.get_by_role("button", name="Deny").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Denied"
    answer = app.result()
    assert (answer.status_code, answer.json()["error"]) == (400, "access_denied")


def test_a_collaborator_without_manage_products_cannot_approve_products_scopes(
        site: Server, world: World, page: Any) -> None:
    flow = start_flow(site, world.app, "products:read products:write")
    app = PollingApp(site, flow)
    try:
        sign_in(page, world.hazel, at=flow["verification_uri_complete"])
        page.get_by_role("button", name="Continue").click()
        works = page.locator(".choice", has_text="Olive Works")
        assert "Nothing can be granted here" in works.inner_text()
        page.get_by_label("Olive Works").check()
        with page.expect_response(lambda r: r.url.endswith("/device/decide")) as answer:
            page.get_by_role("button", name="Approve").click()
        assert answer.value.status == 403
        why = page.get_by_role("alert").inner_text()
        assert "in Olive Works you may not grant any of the scopes" in why
        assert "need the manage products permission" in why
        assert app.still_pending()
    finally:
        app.stop()


def test_five_wrong_codes_burn_the_session_and_the_linked_request(
        site: Server, world: World, page: Any) -> None:
    flow = start_flow(site, world.app, "library:read library:download")
    app = PollingApp(site, flow)
    sign_in(page, world.basil, at=flow["verification_uri_complete"])
    box = page.get_by_label("Code shown by the app")
    for tries_left in (4, 3, 2, 1):
        box.fill("BCDF-BCDF")
        page.get_by_role("button", name="Continue").click()
        assert f"{tries_left} {'try' if tries_left == 1 else 'tries'} left" in page.get_by_role(
            "alert").inner_text()
    box.fill("BCDF-BCDF")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.get_by_role("button", name="Continue").click()
    assert answer.value.status == 403
    assert page.get_by_role("heading", level=1).inner_text() == "Too many wrong codes"

    # The app's request is burned with the session; its polls now say start over.
    done = app.result()
    assert (done.status_code, done.json()["error"]) == (400, "expired_token")
    # The session takes no code at all, not even a right one, until the person signs in again.
    fresh = start_flow(site, world.app, "library:read")
    page.goto(fresh["verification_uri_complete"])
    assert page.get_by_role("heading", level=1).inner_text() == "Too many wrong codes"
    page.get_by_role("button", name="Sign out").first.click()
    sign_in(page, world.basil, at=fresh["verification_uri_complete"])
    page.get_by_role("button", name="Continue").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Approve Model Installer?"
