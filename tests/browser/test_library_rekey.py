"""A buyer's own new key from their library, in Chromium against a real server (issue 45,
item 6; docs/licenses.md "Re-key"): nothing happens on a single click; once confirmed, the
old key stops answering and the new one works."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.browser.site import add_person, add_studio, id_in, sign_in
from tests.http.e2e import license_key
from tests.support.server import Server

pytestmark = pytest.mark.browser


def checks(site: Server, product: str, user: str, key: str) -> bool:
    r = httpx.post(f"{site.url}/runtime/check", json={
        "user_id": user, "product_id": product, "key": key})
    assert r.status_code == 200, r.text
    return bool(r.json()["success"])


def test_a_buyer_takes_a_new_key_from_the_library(site: Server, page: Any) -> None:
    seller, buyer = add_person(site, "rhea", "7201"), add_person(site, "otto", "7202")
    studio = add_studio(site, "Rhea Rigs", seller)
    sign_in(page, seller)
    page.goto(f"/dashboard/{studio.id}")
    page.get_by_text("New product").click()
    page.get_by_label("Title").fill("Grapple")
    page.get_by_role("button", name="Create draft").click()
    product = id_in(page.url, "prd")
    page.get_by_label("Username or platform user id").fill("otto")
    page.get_by_role("button", name="Grant license").click()
    old = license_key(site, product, "7202")

    otto = page.context.browser.new_context(base_url=site.url)
    try:
        library = otto.new_page()
        sign_in(library, buyer)
        library.goto("/library")
        confirm = library.get_by_role("button", name="Yes, a new key for Grapple")
        assert not confirm.is_visible()  # nothing changes on a single click
        library.locator("summary", has_text="New key…").click()
        confirm.click()
        assert "New key made" in library.get_by_role("status").inner_text()
    finally:
        otto.close()
    new = license_key(site, product, "7202")
    assert new != old
    assert not checks(site, product, "7202", old) and checks(site, product, "7202", new)
