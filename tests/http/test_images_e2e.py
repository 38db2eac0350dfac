"""Product images over real HTTP against a real `licore serve`, on SQLite and PostgreSQL:
upload through the Partner API, the file served at its digest's address with caching
headers and a 304 for a copy the client holds, order, delete; bad files refused in the
specification's error shape with nothing stored."""

from __future__ import annotations

import hashlib
import io

import attrs
import httpx
import pytest
from PIL import Image

from licore.images import MAX_IMAGE_BYTES
from tests.http.e2e import People, auth, obtain_key, setup_people
from tests.http.test_runtime_e2e import ALL, v1
from tests.support.dbdump import tables_and_rows
from tests.support.server import Server


@attrs.frozen
class Shop:
    key: str
    product: str


def picture(kind: str, color: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, kind)
    return out.getvalue()


def add(server: Server, key: str, product: str, data: bytes, kind: str = "image/png",
        **params: str) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/products/images", headers={**auth(key),
                                                                  "Content-Type": kind},
                      params={"product_id": product, **params}, content=data)


@pytest.fixture(scope="module")
def people(server: Server) -> People:
    return setup_people(server.database_url, "7")


@pytest.fixture(scope="module")
def shop(server: Server, people: People) -> Shop:
    key = obtain_key(server, people, ALL, people.owner_id, people.studio_id)
    product = v1(server, "POST", "/products", key,
                 json={"title": "Hover Board", "discoverable": True}).json()["id"]
    v1(server, "POST", "/products", key, json={"id": product, "discoverable": True})
    return Shop(key, product)


def test_an_uploaded_image_is_served_for_good_at_its_digests_address(
        server: Server, shop: Shop) -> None:
    r = add(server, shop.key, shop.product, picture("PNG", (10, 200, 30)), alt="The board")
    assert r.status_code == 200, r.text
    image = r.json()["image"]
    assert (image["content_type"], image["width"], image["height"], image["alt"],
            image["position"]) == ("image/png", 64, 48, "The board", 0)
    assert image["path"] == f"/store/images/{image['sha256']}.png"

    served = httpx.get(server.url + image["path"])
    assert served.status_code == 200
    assert served.headers["content-type"] == "image/png"
    assert served.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert served.headers["etag"] == f'"{image["sha256"]}"'
    assert served.headers["x-content-type-options"] == "nosniff"
    assert hashlib.sha256(served.content).hexdigest() == image["sha256"]
    assert Image.open(io.BytesIO(served.content)).size == (64, 48)

    again = httpx.get(server.url + image["path"],
                      headers={"If-None-Match": f'W/"other", "{image["sha256"]}"'})
    assert (again.status_code, again.content) == (304, b"")
    assert again.headers["etag"] == served.headers["etag"]
    assert httpx.get(server.url + image["path"],
                     headers={"If-None-Match": '"other"'}).status_code == 200
    assert httpx.get(f"{server.url}/store/images/{image['sha256']}.jpg").status_code == 404
    assert httpx.get(f"{server.url}/store/images/{'0' * 64}.png").status_code == 404

    # The store's card and the product's page show it, with its alt text.
    card = f'src="/store/images/{image["sha256"]}.png" alt="The board"'
    assert card in httpx.get(f"{server.url}/store").text
    assert card in httpx.get(f"{server.url}/store/{shop.product}").text


def test_images_are_listed_ordered_and_deleted(server: Server, shop: Shop) -> None:
    made = [add(server, shop.key, shop.product, picture("JPEG", (n * 60, 0, 0)),
                "image/jpeg").json()["image"]
            for n in (1, 2)]
    listed = v1(server, "GET", "/products/images", shop.key,
                params={"product_id": shop.product}).json()
    ids = [i["id"] for i in listed["images"]]
    assert ids[-2:] == [m["id"] for m in made]
    assert made[0]["path"].endswith(".jpg") and made[0]["alt"] == ""
    order = [ids[-1], *ids[:-1]]
    r = v1(server, "POST", "/products/images/order", shop.key,
           json={"product_id": shop.product, "image_ids": order})
    assert [i["id"] for i in r.json()["images"]] == order
    assert [i["position"] for i in r.json()["images"]] == list(range(len(order)))
    bad = httpx.post(f"{server.url}/v1/products/images/order", headers=auth(shop.key),
                     json={"product_id": shop.product, "image_ids": order[:1]})
    assert (bad.status_code, bad.json()["error"]) == (400, "invalid_request")

    gone = made[1]
    v1(server, "DELETE", "/products/images", shop.key,
       params={"product_id": shop.product, "id": gone["id"]})
    assert httpx.get(server.url + gone["path"]).status_code == 404
    again = httpx.delete(f"{server.url}/v1/products/images", headers=auth(shop.key),
                         params={"product_id": shop.product, "id": gone["id"]})
    assert (again.status_code, again.json()["error"]) == (404, "not_found")
    left = v1(server, "GET", "/products/images", shop.key,
              params={"product_id": shop.product}).json()["images"]
    assert [i["id"] for i in left] == [i for i in order if i != gone["id"]]
    assert [i["position"] for i in left] == list(range(len(left)))


def test_an_images_text_is_changed_in_place(server: Server, shop: Shop) -> None:
    made = add(server, shop.key, shop.product, picture("PNG", (9, 90, 200))).json()["image"]
    r = v1(server, "POST", "/products/images/alt", shop.key,
           json={"product_id": shop.product, "id": made["id"], "alt": "A blue shield"})
    assert r.json() == {"ok": True, "image": {**made, "alt": "A blue shield"}}
    listed = v1(server, "GET", "/products/images", shop.key,
                params={"product_id": shop.product}).json()["images"]
    assert {i["id"]: i["alt"] for i in listed}[made["id"]] == "A blue shield"
    assert httpx.get(server.url + made["path"]).status_code == 200  # the file is the same
    for body, status, error in (
            ({"product_id": shop.product, "id": made["id"], "alt": "x" * 201}, 400,
             "invalid_request"),
            ({"product_id": shop.product, "id": made["id"]}, 400, "invalid_request"),
            ({"product_id": shop.product, "id": made["id"], "alt": 5}, 400,
             "invalid_request"),
            ({"product_id": shop.product, "id": "img_nope", "alt": "x"}, 404, "not_found")):
        bad = httpx.post(f"{server.url}/v1/products/images/alt", headers=auth(shop.key),
                         json=body)
        assert (bad.status_code, bad.json()["error"]) == (status, error), bad.text
    kept = v1(server, "GET", "/products/images", shop.key,
              params={"product_id": shop.product}).json()["images"]
    assert {i["id"]: i["alt"] for i in kept}[made["id"]] == "A blue shield"


def test_bad_files_are_refused_and_nothing_is_stored(server: Server, shop: Shop) -> None:
    before = tables_and_rows(server.database_url)["product_images"]
    png = picture("PNG", (1, 2, 3))
    for data, kind, status, words in (
            (b"<html><script>alert(1)</script></html>", "image/png", 400, "not a PNG or JPEG"),
            (png + b"PK\x03\x04 a zip after the image", "image/png", 400, "after its end"),
            (png, "image/jpeg", 400, "sent as image/jpeg but is image/png"),
            (picture("GIF", (1, 2, 3)), "image/png", 400, "not a PNG or JPEG"),
            (png, "text/html", 400, "image/png or image/jpeg"),
            (png[:40], "image/png", 400, "damaged"),
            (picture("PNG", (1, 2, 3), (5000, 3)), "image/png", 400, "at most 4096 x 4096"),
            (b"\x89PNG\r\n\x1a\n" + bytes(MAX_IMAGE_BYTES), "image/png", 413,
             f"larger than {MAX_IMAGE_BYTES} bytes")):
        r = add(server, shop.key, shop.product, data, kind)
        assert r.status_code == status, (words, r.text)
        body = r.json()
        assert set(body) == {"error", "error_description"}
        assert body["error"] == ("payload_too_large" if status == 413 else "invalid_request")
        assert words in body["error_description"]
    long_alt = add(server, shop.key, shop.product, png, alt="x" * 201)
    assert long_alt.status_code == 400 and "alt" in long_alt.json()["error_description"]
    assert tables_and_rows(server.database_url)["product_images"] == before


def test_images_need_the_product_scopes(server: Server, people: People, shop: Shop) -> None:
    reader = obtain_key(server, people, "products:read", people.owner_id, people.studio_id)
    r = add(server, reader, shop.product, picture("PNG", (7, 7, 7)))
    assert (r.status_code, r.json()["error"]) == (403, "insufficient_scope")
    listed = httpx.get(f"{server.url}/v1/products/images", headers=auth(reader),
                       params={"product_id": shop.product})
    assert listed.status_code == 200
    unknown = add(server, shop.key, "prd_nope", picture("PNG", (7, 7, 7)))
    assert (unknown.status_code, unknown.json()["error"]) == (404, "not_found")
