"""Product images and the library's versions in Chromium against a real server: a seller
adds, orders and removes images on the dashboard (a multipart form with its token); the
store's card and the product's page show them; a buyer's library lists every version they
may download, and an older one downloads as their own copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from PIL import Image

from adapters_formats.codec import RobloxModelCodec
from licore.commands import DownloadCopy
from licore.model import Studio
from licore.scopes import Permission
from licore.services.wiring import UseCases
from tests.browser.site import Person, add_collaborator, add_person, add_studio, id_in, sign_in
from tests.http.e2e import core, whose_copy
from tests.support.models import product_model
from tests.support.server import Server

pytestmark = pytest.mark.browser


@attrs.frozen
class World:
    iris: Person  # owns Iris Works
    max: Person  # a buyer
    lou: Person  # collaborator with manage_licenses only
    studio: Studio


@pytest.fixture(scope="module")
def world(site: Server) -> World:
    iris = add_person(site, "iris", "8101")
    buyer = add_person(site, "max", "8102")
    lou = add_person(site, "lou", "8103")
    studio = add_studio(site, "Iris Works", iris)
    add_collaborator(site, studio, lou, Permission.MANAGE_LICENSES)
    return World(iris, buyer, lou, studio)


def picture(path: Path, kind: str, color: tuple[int, int, int],
            size: tuple[int, int] = (800, 600)) -> Path:
    image = Image.new("RGB", size, color)
    for x in range(0, size[0], 40):  # stripes, so the screenshots show a picture
        for y in range(size[1]):
            image.putpixel((x, y), (255, 255, 255))
    image.save(path, kind)
    return path


def natural_width(image: Any) -> int:
    """The width the browser decoded: 0 when the image did not load."""
    width: int = image.evaluate("img => img.decode().then(() => img.naturalWidth, () => 0)")
    return width


def new_listed_product(page: Any, world: World, title: str) -> str:
    page.goto(f"/dashboard/{world.studio.id}")
    page.get_by_text("New product").click()
    page.get_by_label("Title").fill(title)
    page.get_by_label("Tagline").fill("Glides over water")
    page.get_by_role("button", name="Create draft").click()
    page.get_by_label("Listed in the store").check()
    page.get_by_role("button", name="Save details").click()
    return id_in(page.url, "prd")


def test_a_seller_adds_orders_and_removes_images_and_the_store_shows_them(
        site: Server, world: World, page: Any, tmp_path: Path, screenshots: Path) -> None:
    sign_in(page, world.iris)
    product = new_listed_product(page, world, "Hover Board")
    images = page.locator("#images")
    for name, kind, color, alt in (("deck.png", "PNG", (20, 110, 200), "The deck from above"),
                                   ("side.jpg", "JPEG", (200, 80, 20), "")):
        page.get_by_label("Image (PNG or JPEG, up to 2 MiB)").set_input_files(
            str(picture(tmp_path / name, kind, color)))
        page.get_by_label("Alt text", exact=True).fill(alt)
        page.get_by_role("button", name="Add image").click()
        assert page.get_by_role("status").inner_text() == "Image added."
    shown = images.get_by_role("img")
    assert [shown.nth(i).get_attribute("alt") for i in range(2)] == [
        "The deck from above", "Hover Board"]  # no alt text given: the title
    assert all(natural_width(shown.nth(i)) > 0 for i in range(2))
    images.screenshot(path=str(screenshots / "dashboard-images.png"))

    # A file that is not an image is refused with the reason, and nothing is added.
    fake = tmp_path / "notes.png"
    fake.write_bytes(b"<html><script>alert(1)</script></html>")
    page.get_by_label("Image (PNG or JPEG, up to 2 MiB)").set_input_files(str(fake))
    with page.expect_response(lambda r: r.request.method == "POST") as refused:
        page.get_by_role("button", name="Add image").click()
    assert refused.value.status == 400
    assert "not a PNG or JPEG image" in page.get_by_role("alert").inner_text()
    page.goto(f"/dashboard/{world.studio.id}/products/{product}")
    assert images.get_by_role("img").count() == 2

    page.get_by_role("button", name="Move image 2 earlier").click()
    assert [shown.nth(i).get_attribute("alt") for i in range(2)] == [
        "Hover Board", "The deck from above"]
    # The alt text is changed in place (the image keeps its place and file).
    assert page.get_by_label("Alt text of image 1", exact=True).input_value() == ""
    page.get_by_label("Alt text of image 1", exact=True).fill("The board from the side, in orange")
    page.get_by_role("button", name="Save the alt text of image 1").click()
    assert page.get_by_role("status").inner_text() == "Alt text saved."
    assert [shown.nth(i).get_attribute("alt") for i in range(2)] == [
        "The board from the side, in orange", "The deck from above"]
    page.get_by_label("Image (PNG or JPEG, up to 2 MiB)").set_input_files(
        str(picture(tmp_path / "third.png", "PNG", (30, 160, 60))))
    page.get_by_role("button", name="Add image").click()
    page.get_by_role("button", name="Remove image 3").click()
    assert page.get_by_role("status").inner_text() == "Image removed."
    assert images.get_by_role("img").count() == 2
    page.get_by_role("button", name="Sign out").click()

    # A collaborator without manage products sees the images and cannot change them, even
    # with a form of this site and their own token.
    sign_in(page, world.lou)
    page.goto(f"/dashboard/{world.studio.id}/products/{product}")
    assert images.get_by_role("img").count() == 2
    assert images.get_by_role("button").count() == 0
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    refused = page.request.post(
        f"/dashboard/{world.studio.id}/products/{product}/images",
        multipart={"csrf": token, "alt": "", "file": {
            "name": "x.png", "mimeType": "image/png",
            "buffer": (tmp_path / "third.png").read_bytes()}})
    assert refused.status == 403 and "manage products permission" in refused.text()
    page.get_by_role("button", name="Sign out").click()

    page.goto("/store")
    cover = page.get_by_role("article", name="Hover Board").get_by_role("img")
    assert cover.get_attribute("alt") == "The board from the side, in orange"
    assert natural_width(cover) > 0
    page.screenshot(path=str(screenshots / "store-images.png"), full_page=True)
    page.get_by_role("link", name="Hover Board").click()
    gallery = page.get_by_role("list", name="Pictures of Hover Board").get_by_role("img")
    assert [gallery.nth(i).get_attribute("alt") for i in range(2)] == [
        "The board from the side, in orange", "The deck from above"]
    assert all(natural_width(gallery.nth(i)) > 0 for i in range(2))
    page.screenshot(path=str(screenshots / "store-product-images.png"), full_page=True)


def test_the_library_lists_every_version_and_downloads_an_older_one(
        site: Server, world: World, page: Any, tmp_path: Path, screenshots: Path) -> None:
    sign_in(page, world.iris)
    product = new_listed_product(page, world, "Jet Ski")
    page.get_by_label("Username or platform user id").fill("max")
    page.get_by_role("button", name="Grant license").click()
    model = tmp_path / "ski.rbxm"
    model.write_bytes(RobloxModelCodec().write(product_model()))
    for label in ("1.0", "1.1", "2.0"):
        page.get_by_label("Version label").fill(label)
        page.get_by_label("Model file (.rbxm or .rbxmx)").set_input_files(str(model))
        page.get_by_role("button", name="Upload draft").click()
        page.get_by_role("button", name=f"Publish {label}").click()
    page.get_by_label("Version label").fill("3.0-draft")
    page.get_by_label("Model file (.rbxm or .rbxmx)").set_input_files(str(model))
    page.get_by_role("button", name="Upload draft").click()  # never published: not offered
    page.get_by_role("button", name="Sign out").click()

    sign_in(page, world.max)
    page.goto("/library")
    rows = page.get_by_role("row").filter(has_text="Download Jet Ski")
    assert [r.get_by_role("link").inner_text() for r in rows.all()] == [
        "Download Jet Ski 2.0", "Download Jet Ski 1.1", "Download Jet Ski 1.0"]
    assert "live" in rows.nth(0).inner_text()
    assert all("live" not in rows.nth(i).inner_text() for i in (1, 2))
    assert "3.0-draft" not in page.get_by_role("main").inner_text()
    page.screenshot(path=str(screenshots / "library-versions.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: the table stacks
    assert page.get_by_role("link", name="Download Jet Ski 1.0").is_visible()
    page.screenshot(path=str(tmp_path / "library-phone.png"), full_page=True)
    page.set_viewport_size({"width": 1100, "height": 900})

    with page.expect_download() as caught:
        page.get_by_role("link", name="Download Jet Ski 1.0").click()
    copy = Path(caught.value.path()).read_bytes()
    assert caught.value.suggested_filename == "1.0.rbxm"
    RobloxModelCodec().read(copy)  # a model file Studio can open
    assert whose_copy(site, product, world.max.account.platform_id, copy)
    href = page.get_by_role("link", name="Download Jet Ski 1.0").get_attribute("href") or ""
    version_id = href.partition("?version_id=")[2]
    older = core(site.database_url, lambda d: UseCases.of(d).people.download(
        world.max.account, DownloadCopy(product, version_id)))
    assert (older.version, older.data) == ("1.0", copy)  # the same copy the API gives
    with page.expect_download() as live:
        page.get_by_role("link", name="Download Jet Ski 2.0").click()
    assert live.value.suggested_filename == "2.0.rbxm"
