"""The seller dashboard, a person's own pages and the store, in Chromium against a real
server: what the pages do must show in the Runtime and Partner APIs at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from adapters_formats.codec import RobloxModelCodec
from licore.commands import DownloadCopy
from licore.model import Client, Studio
from licore.scopes import Permission
from licore.services.wiring import UseCases
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
from tests.http.e2e import core, decide, license_key, whose_copy
from tests.support.models import product_model, script
from tests.support.server import Server

pytestmark = pytest.mark.browser


@attrs.frozen
class World:
    dora: Person  # owns Dora Designs
    lena: Person  # collaborator with manage_licenses only
    nora: Person  # in no studio
    ben: Person  # a buyer
    studio: Studio
    app: Client


@pytest.fixture(scope="module")
def world(site: Server) -> World:
    dora = add_person(site, "dora", "7001")
    lena = add_person(site, "lena", "7002")
    nora = add_person(site, "nora", "7003")
    ben = add_person(site, "ben", "7004")
    studio = add_studio(site, "Dora Designs", dora)
    add_collaborator(site, studio, lena, Permission.MANAGE_LICENSES)
    app = add_client(site, "Build Bot", "products:read products:write licenses:read "
                                        "library:read library:download")
    return World(dora, lena, nora, ben, studio, app)


def obtain_key(site: Server, world: World, scope: str, who: Person,
               studio_id: str | None) -> str:
    flow = start_flow(site, world.app, scope)
    decide(site.database_url, who.account.id, flow["user_code"], True, studio_id)
    r = httpx.post(f"{site.url}/auth/device/token", json={"device_code": flow["device_code"]})
    assert r.status_code == 200, r.text
    token: str = r.json()["access_token"]
    return token


def create_product(page: Any, world: World, title: str, tagline: str) -> str:
    page.goto(f"/dashboard/{world.studio.id}")
    page.get_by_text("New product").click()
    page.get_by_label("Title").fill(title)
    page.get_by_label("Tagline").fill(tagline)
    page.get_by_label("Price (credits)").fill("250")
    page.get_by_role("button", name="Create draft").click()
    assert page.get_by_role("heading", level=1).inner_text() == title
    return id_in(page.url, "prd")


def license_row_button(page: Any, action: str, platform_id: str) -> Any:
    return page.get_by_role("button", name=f"{action} license of {platform_id}")


def test_grant_pause_resume_and_revoke_in_the_dashboard_are_followed_by_check(
        site: Server, world: World, page: Any, screenshots: Path) -> None:
    sign_in(page, world.dora)
    product = create_product(page, world, "Laser Sword", "Cuts through anything")
    buyer = world.ben.account.platform_id

    page.get_by_label("Username or platform user id").fill("ben")
    page.get_by_role("button", name="Grant license").click()
    assert page.get_by_role("status").inner_text() == "License for ben granted."
    page.screenshot(path=str(screenshots / "dashboard-product.png"), full_page=True)
    key = license_key(site, product, buyer)
    assert runtime_check(site, product, buyer, key)

    license_row_button(page, "Pause", buyer).click()
    assert not runtime_check(site, product, buyer, key)
    license_row_button(page, "Resume", buyer).click()
    assert runtime_check(site, product, buyer, key)
    license_row_button(page, "Revoke", buyer).click()
    assert page.locator("#licenses tbody").inner_text().split("\t")[1].strip() == "inactive"
    assert not runtime_check(site, product, buyer, key)


def test_versions_are_uploaded_published_and_rolled_back_in_the_dashboard(
        site: Server, world: World, page: Any, tmp_path: Path, screenshots: Path) -> None:
    sign_in(page, world.dora)
    product = create_product(page, world, "Grappling Hook", "Swing across")
    first, second, junk = tmp_path / "hook-1.rbxm", tmp_path / "hook-2.rbxm", tmp_path / "x.rbxm"
    first.write_bytes(RobloxModelCodec().write(product_model()))
    second.write_bytes(RobloxModelCodec().write(product_model(extra=1)))
    junk.write_bytes(b"not a model")

    def upload(label: str, path: Path, answer: str = "status") -> str:
        page.get_by_label("Version label").fill(label)
        page.get_by_label("Model file (.rbxm or .rbxmx)").set_input_files(str(path))
        page.get_by_role("button", name="Upload draft").click()
        return str(page.get_by_role(answer).inner_text())

    assert upload("1.0", first) == "Version 1.0 uploaded as a draft; publish it to make it live."
    assert "not a valid model" in upload("1.1", junk, "alert")
    page.goto(f"/dashboard/{world.studio.id}/products/{product}")
    assert upload("2.0", second).startswith("Version 2.0 uploaded")
    page.get_by_role("button", name="Publish 1.0").click()
    assert page.get_by_role("status").inner_text() == "Version 1.0 is live."
    page.get_by_role("button", name="Publish 2.0").click()
    rows = page.locator("#versions tbody tr")
    states = [rows.nth(i).locator("td").nth(1).inner_text().strip()
              for i in range(rows.count())]
    assert states == ["published before", "live"]
    page.locator("#versions").screenshot(path=str(screenshots / "dashboard-versions.png"))
    page.get_by_role("button", name="Roll back to 1.0").click()
    assert page.get_by_role("status").inner_text() == "Version 1.0 is live."
    # The Runtime API follows: /version names the live label.
    page.get_by_label("Username or platform user id").fill("ben")
    page.get_by_role("button", name="Grant license").click()
    buyer = world.ben.account.platform_id
    key = license_key(site, product, buyer)
    r = httpx.post(f"{site.url}/runtime/version", json={
        "user_id": buyer, "product_id": product, "key": key})
    assert r.json()["latest"] == "1.0"


def test_publishing_says_what_the_protector_works_around(
        site: Server, world: World, page: Any, tmp_path: Path) -> None:
    """A build with a script that reads getfenv publishes (the protector keeps that script's
    local names, a note, not a refusal), and the dashboard says so, as the API's answer does."""
    sign_in(page, world.dora)
    create_product(page, world, "Env Reader", "Reads its environment")
    path = tmp_path / "env.rbxm"
    reader = script("EnvReader", "local count = 1\nprint(getfenv(1), count)\n")
    path.write_bytes(RobloxModelCodec().write(product_model(also=[reader])))
    page.get_by_label("Version label").fill("1.0")
    page.get_by_label("Model file (.rbxm or .rbxmx)").set_input_files(str(path))
    page.get_by_role("button", name="Upload draft").click()
    page.get_by_role("button", name="Publish 1.0").click()
    said = page.get_by_role("status").inner_text()
    assert said.startswith("Version 1.0 is live. Protection notes: "), said
    assert "EnvReader line 2: uses getfenv" in said and "local names are kept" in said, said
    # New rules are tried on the live build when saved, and say the same.
    page.get_by_label("Protection rules (JSON)").fill(
        '{"rules": [{"paths": ["*"], "preset": "light"}, {"names": ["Greeter"], '
        '"preset": "minify"}]}')
    page.get_by_role("button", name="Save settings").click()
    said = page.get_by_role("status").inner_text()
    assert said.startswith("Settings saved. Protection notes: "), said
    assert "EnvReader line 2: uses getfenv" in said, said


def test_alerts_newest_first_and_revoking_a_connected_app_makes_its_next_call_401(
        site: Server, world: World, page: Any, screenshots: Path) -> None:
    key = obtain_key(site, world, "products:read licenses:read", world.dora, world.studio.id)
    headers = {"Authorization": f"Bearer {key}"}
    assert httpx.get(f"{site.url}/v1/products", headers=headers).status_code == 200

    sign_in(page, world.dora)
    product = create_product(page, world, "Rocket Boots", "Jump higher")
    page.get_by_label("Username or platform user id").fill("ben")
    page.get_by_role("button", name="Grant license").click()
    leaked = license_key(site, product, world.ben.account.platform_id)
    # The buyer's key turns up under other user ids: twice in one place, then in another.
    for user, place in (("9001", "111"), ("9001", "111"), ("9002", "222")):
        r = httpx.post(f"{site.url}/runtime/check", json={
            "user_id": user, "product_id": product, "key": leaked, "game_id": place})
        assert r.json() == {"success": False}

    page.goto(f"/dashboard/{world.studio.id}")
    rows = page.locator("#alerts tbody tr")
    assert rows.count() == 2
    newest, older = (rows.nth(i).locator("td").all_inner_texts() for i in (0, 1))
    assert newest[0] == "Rocket Boots" and newest[2:4] == ["222", "1"]
    assert older[2:4] == ["111", "2"]
    assert leaked not in page.content()
    apps = page.locator("#apps")
    row = apps.locator("tbody tr", has_text="Build Bot")
    assert "products:read, licenses:read" in row.inner_text()
    # Something for the alerts and blacklist sections to show in the picture.
    page.get_by_label("Platform user id").fill("666")
    page.get_by_role("button", name="Blacklist", exact=True).click()
    assert "User 666" in page.locator("#blacklist").inner_text()
    page.screenshot(path=str(screenshots / "dashboard.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(screenshots / "dashboard-phone.png"), full_page=True)

    page.locator("#apps").get_by_role("button", name="Disconnect Build Bot").click()
    assert "its key stops working now" in page.get_by_role("status").inner_text()
    r = httpx.get(f"{site.url}/v1/products", headers=headers)
    assert (r.status_code, r.json()["error"]) == (401, "invalid_token")


def test_a_person_sees_their_library_downloads_and_disconnects_their_own_app(
        site: Server, world: World, page: Any, tmp_path: Path) -> None:
    sign_in(page, world.dora)
    product = create_product(page, world, "Shield", "Blocks anything")
    page.get_by_label("Username or platform user id").fill(world.ben.account.platform_id)
    page.get_by_role("button", name="Grant license").click()
    model = tmp_path / "shield.rbxm"
    model.write_bytes(RobloxModelCodec().write(product_model()))
    page.get_by_label("Version label").fill("3.1")
    page.get_by_label("Model file (.rbxm or .rbxmx)").set_input_files(str(model))
    page.get_by_role("button", name="Upload draft").click()
    page.get_by_role("button", name="Publish 3.1").click()
    page.get_by_role("button", name="Sign out").click()

    key = obtain_key(site, world, "library:read", world.ben, None)
    headers = {"Authorization": f"Bearer {key}"}
    assert httpx.get(f"{site.url}/v1/library", headers=headers).status_code == 200
    sign_in(page, world.ben)
    page.goto("/library")
    owned = page.locator("main table").inner_text()
    assert "Shield" in owned and "Dora Designs" in owned
    with page.expect_download() as caught:
        page.get_by_role("link", name="Download Shield 3.1").click()
    copy = Path(caught.value.path()).read_bytes()
    # ben's own copy, protected by default: no placeholder, no key in sight, traced to him
    buyer_key = license_key(site, product, world.ben.account.platform_id)
    assert b"LICORE_LICENSE_KEY" not in copy and buyer_key.encode() not in copy
    assert whose_copy(site, product, world.ben.account.platform_id, copy)
    assert caught.value.suggested_filename == "3.1.rbxm"
    page.goto("/apps")
    assert "List the products you own and their versions" in page.inner_text("main")
    page.get_by_role("button", name="Disconnect Build Bot").click()
    assert page.get_by_text("No app acts for you.").is_visible()
    assert httpx.get(f"{site.url}/v1/library", headers=headers).status_code == 401
    # A buyer is in no studio: the studio's pages do not exist for them.
    assert page.goto(f"/dashboard/{world.studio.id}/products/{product}").status == 404


def test_the_store_shows_listed_products_and_never_drafts(
        site: Server, world: World, page: Any) -> None:
    sign_in(page, world.dora)
    listed = create_product(page, world, "Jetpack", "Flies for ten seconds")
    page.get_by_label("Listed in the store").check()
    page.get_by_role("button", name="Save details").click()
    assert page.get_by_role("status").inner_text() == "Product saved."
    create_product(page, world, "Secret Draft", "Not ready")

    page.goto("/store")
    store = page.locator("main").inner_text()
    assert "Secret Draft" not in store
    card = page.get_by_role("article", name="Jetpack")
    assert "Flies for ten seconds" in card.inner_text()
    assert "250 credits" in card.inner_text() and "by Dora Designs" in card.inner_text()
    # The settings of a product are saved through the same rules as the API.
    page.goto(f"/dashboard/{world.studio.id}/products/{listed}")
    page.get_by_label("License key placeholder").fill("bad placeholder!")
    page.get_by_label("Verify scripts").check()
    page.get_by_label("Unlock data (JSON)").fill('{"level": 3}')
    page.evaluate("document.getElementById('placeholder').removeAttribute('pattern')")
    with page.expect_response(lambda r: r.request.method == "POST") as refused:
        page.get_by_role("button", name="Save settings").click()
    assert refused.value.status == 400
    assert "placeholder must be 4 to 64" in page.get_by_role("alert").inner_text()
    page.go_back()
    page.get_by_label("License key placeholder").fill("MY_KEY_HERE")
    page.get_by_label("Verify scripts").check()
    page.get_by_label("Unlock data (JSON)").fill('{"level": 3}')
    page.get_by_role("button", name="Save settings").click()
    assert page.get_by_role("status").inner_text() == "Settings saved."
    assert page.get_by_label("License key placeholder").input_value() == "MY_KEY_HERE"
    assert page.get_by_label("Verify scripts").is_checked()
    assert page.get_by_label("Unlock data (JSON)").input_value() == '{"level":3}'


def test_a_store_card_opens_the_products_page_with_how_to_buy_it(
        site: Server, world: World, page: Any, tmp_path: Path,
        screenshots: Path) -> None:
    sign_in(page, world.dora)
    product = create_product(page, world, "Grapple Hook", "Swings between rooftops")
    page.get_by_label("Description").fill(
        "Hooks onto any part.\n\n<script>alert(1)</script> stays text.")
    page.get_by_label("Listed in the store").check()
    page.get_by_role("button", name="Save details").click()
    page.get_by_label("Hub place id").fill("4455667788")
    page.get_by_label("Purchase pass id").fill("99887766")
    page.get_by_role("button", name="Save settings").click()
    assert page.get_by_role("status").inner_text() == "Settings saved."
    assert page.get_by_label("Hub place id").input_value() == "4455667788"
    page.get_by_label("Trial days").fill("7")
    page.get_by_role("button", name="Save license policy").click()
    model = tmp_path / "hook.rbxm"
    model.write_bytes(RobloxModelCodec().write(product_model()))
    for label in ("1.0", "1.1"):
        page.get_by_label("Version label").fill(label)
        page.get_by_label("Model file (.rbxm or .rbxmx)").set_input_files(str(model))
        page.get_by_role("button", name="Upload draft").click()
        page.get_by_role("button", name=f"Publish {label}").click()
    page.get_by_role("button", name="Sign out").click()

    page.goto("/store")
    page.get_by_label("Find products").fill("ROOFTOPS dora")
    page.get_by_label("Order").select_option("price_desc")
    page.get_by_role("button", name="Find").click()
    assert page.get_by_role("article").count() == 1
    assert page.get_by_label("Find products").input_value() == "ROOFTOPS dora"
    page.get_by_label("Find products").fill("no such thing")
    page.get_by_role("button", name="Find").click()
    assert 'Nothing listed matches "no such thing".' in page.get_by_role("main").inner_text()
    assert page.goto("/store?sort=cheapest").status == 400
    page.goto("/store?q=grapple")
    page.get_by_role("article", name="Grapple Hook").get_by_role(
        "link", name="Grapple Hook").click()
    assert page.url.endswith(f"/store/{product}")
    main = page.get_by_role("main")
    assert page.get_by_role("heading", level=1).inner_text() == "Grapple Hook"
    text = main.inner_text()
    assert "250 credits" in text and "by Dora Designs" in text
    # The seller's text is paragraphs of text, never markup.
    about = [p.inner_text() for p in main.locator("p.description").all()]
    assert about == ["Hooks onto any part.", "<script>alert(1)</script> stays text."]
    assert main.locator("script").count() == 0
    versions = main.get_by_role("list").filter(has_text="1.0").inner_text()
    assert versions.index("1.1") < versions.index("1.0") and "live" in versions
    assert main.get_by_role("link", name="Buy it in the studio's hub place").get_attribute(
        "href") == "https://www.roblox.com/games/4455667788"
    assert main.get_by_role("link", name="Buy its game pass").get_attribute(
        "href") == "https://www.roblox.com/game-pass/99887766"
    page.screenshot(path=str(screenshots / "store-product.png"), full_page=True)
    # A signed-in person tries it, once: the trial is in their library and the page knows.
    sign_in(page, world.ben)
    page.goto(f"/store/{product}")
    page.get_by_role("button", name="Try it free for 7 days").click()
    assert page.get_by_role("status").inner_text().startswith(
        "Trial started: the product is in your library until ")
    assert "Grapple Hook" in page.get_by_role("main").inner_text()
    page.goto(f"/store/{product}")
    assert page.get_by_role("button", name="Try it free for 7 days").count() == 0
    assert "You hold this product" in page.get_by_role("main").inner_text()
    page.get_by_role("button", name="Sign out").click()
    # A product that is not listed has no page, as one that does not exist.
    sign_in(page, world.dora)
    draft = create_product(page, world, "Hidden Hook", "Not listed")
    page.get_by_role("button", name="Sign out").click()
    assert page.goto(f"/store/{draft}").status == 404
    assert page.goto("/store/prd_missing").status == 404


def test_a_leaked_copy_is_traced_to_its_buyer_in_the_dashboard(
        site: Server, world: World, page: Any, tmp_path: Path) -> None:
    sign_in(page, world.dora)
    product = create_product(page, world, "Plasma Rifle", "Leaks happen")
    page.get_by_label("Protection rules (JSON)").fill(
        '{"rules": [{"paths": ["*"], "preset": "light"}]}')
    page.get_by_role("button", name="Save settings").click()
    model = tmp_path / "rifle.rbxm"
    model.write_bytes(RobloxModelCodec().write(product_model()))
    page.get_by_label("Version label").fill("1.0")
    page.get_by_label("Model file (.rbxm or .rbxmx)").set_input_files(str(model))
    page.get_by_role("button", name="Upload draft").click()
    page.get_by_role("button", name="Publish 1.0").click()
    for user in ("ben", world.nora.account.platform_id):
        page.get_by_label("Username or platform user id").fill(user)
        page.get_by_role("button", name="Grant license").click()
    # Ben's own copy leaks.
    copy = core(site.database_url, lambda d: UseCases.of(d).people.download(
        world.ben.account, DownloadCopy(product)))
    leaked = tmp_path / "Plasma Rifle (free).rbxm"
    leaked.write_bytes(copy.data)
    page.get_by_label("Leaked model file or script").set_input_files(str(leaked))
    page.get_by_role("button", name="Trace").click()
    result = page.get_by_role("status").inner_text()
    assert f"user {world.ben.account.platform_id}" in result
    assert "Plasma Rifle (free).rbxm" in page.get_by_role("heading", level=1).inner_text()
    assert license_key(site, product, world.ben.account.platform_id) not in page.content()


def test_a_collaborator_with_manage_licenses_only_cannot_change_products(
        site: Server, world: World, page: Any) -> None:
    sign_in(page, world.dora)
    product = create_product(page, world, "Hammer", "Heavy")
    page.get_by_role("button", name="Sign out").click()

    sign_in(page, world.lena)
    page.goto(f"/dashboard/{world.studio.id}/products/{product}")
    assert page.get_by_role("button", name="Save details").is_disabled()
    assert page.get_by_role("button", name="Save settings").is_disabled()
    page.goto(f"/dashboard/{world.studio.id}")
    assert page.get_by_text("New product").count() == 0
    # A hand-made post, with a valid form token, is refused by the permission check.
    page.goto(f"/dashboard/{world.studio.id}/products/{product}")
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    refused = page.request.post(f"/dashboard/{world.studio.id}/products/{product}", form={
        "csrf": token, "title": "Stolen", "tagline": "", "description": "",
        "price_credit": "0"})
    assert refused.status == 403
    assert "manage products permission" in refused.text()
    page.reload()
    assert page.get_by_role("heading", level=1).inner_text() == "Hammer"
    # What the permission allows works.
    page.get_by_label("Username or platform user id").fill("ben")
    page.get_by_role("button", name="Grant license").click()
    assert page.get_by_role("status").inner_text() == "License for ben granted."


def test_a_person_outside_the_studio_gets_404_on_all_of_its_pages(
        site: Server, world: World, page: Any) -> None:
    sign_in(page, world.dora)
    product = create_product(page, world, "Lamp", "Bright")
    page.get_by_role("button", name="Sign out").click()

    sign_in(page, world.nora)
    assert "You are not in any studio" in page.goto("/dashboard").text()
    base = f"/dashboard/{world.studio.id}"
    for path in (base, f"{base}/products/{product}"):
        answer = page.goto(path)
        assert answer.status == 404, path
        assert page.get_by_role("heading", level=1).inner_text() == "Not found"
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    for path, form in ((f"{base}/products/{product}/licenses", {"action": "grant",
                                                                "user": "nora"}),
                       (f"{base}/blacklist", {"platform_id": "1"}),
                       (f"{base}/products", {"title": "Mine now"})):
        answer = page.request.post(path, form={"csrf": token, **form})
        assert answer.status == 404, path


UNLABELLED = """() => [...document.querySelectorAll(
    'input:not([type=hidden]), textarea, select, button')]
  .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
               && !(e.tagName === 'BUTTON' && e.textContent.trim()))
  .map(e => e.outerHTML)"""


def test_every_page_has_landmarks_one_heading_labelled_fields_and_fits_a_phone(
        site: Server, world: World, page: Any) -> None:
    page.set_viewport_size({"width": 360, "height": 740})
    page.goto("/signin")
    pages = ["/", "/store", "/signin"]
    sign_in(page, world.dora)
    product = create_product(page, world, "Compass", "Points north")
    pages += ["/device", "/dashboard", f"/dashboard/{world.studio.id}",
              f"/dashboard/{world.studio.id}/products/{product}", "/library", "/apps"]
    for path in pages:
        assert page.goto(path).status == 200, path
        assert page.locator("meta[name=viewport]").get_attribute("content") == (
            "width=device-width, initial-scale=1"), path
        assert page.locator("html").get_attribute("lang") == "en"
        assert page.get_by_role("main").count() == 1, path
        assert page.get_by_role("banner").count() == 1, path
        assert page.get_by_role("navigation", name="Main").count() == 1, path
        assert page.get_by_role("heading", level=1).count() == 1, path
        assert page.evaluate(UNLABELLED) == [], path
        # Nothing makes the page wider than the phone (wide tables scroll or stack).
        assert page.evaluate("document.documentElement.scrollWidth") <= 360, path
