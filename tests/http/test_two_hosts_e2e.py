"""docs/operators.md, "Production", step 6: two hosts, one PostgreSQL database, one set of
secrets. Two `licore serve` processes on two loopback addresses (127.0.0.1 and 127.0.0.2)
stand for the hosts: what one does, the other answers to (keys, licenses, the device flow,
a web session, a revocation)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator

import httpx
import pytest

from tests.http.e2e import (
    auth,
    decide,
    license_key,
    owner_key,
    poll,
    setup_people,
    start_flow,
)
from tests.http.test_builds_e2e import file_of, upload
from tests.http.test_runtime_e2e import ALL, v1
from tests.support.models import product_model
from tests.support.server import Server, running_server

pytestmark = pytest.mark.postgres

STUDIO = "products:write licenses:write licenses:read"


@pytest.fixture
def hosts(pg_schema_url: str) -> Iterator[tuple[Server, Server]]:
    shared = {"LICORE_SESSION_KEY": secrets.token_hex(32)}  # the same licore.env on both
    with running_server(pg_schema_url, host="127.0.0.1", **shared) as one, \
            running_server(pg_schema_url, host="127.0.0.2", **shared) as two:
        yield one, two


def test_a_license_granted_through_one_host_is_verified_through_the_other(
        hosts: tuple[Server, Server]) -> None:
    one, two = hosts
    assert one.url.startswith("http://127.0.0.1:") and two.url.startswith("http://127.0.0.2:")
    people = setup_people(one.database_url, "72")
    # the device flow started on one host, approved, and finished on the other
    flow = start_flow(one, people.client_id, STUDIO)
    decide(one.database_url, people.owner_id, flow["user_code"], True, people.studio_id)
    issued = poll(two, flow["device_code"])
    assert issued.status_code == 200, issued.text
    seller = auth(issued.json()["access_token"])

    product = httpx.post(f"{one.url}/v1/products", headers=seller, json={"title": "Twin"})
    assert product.status_code == 200, product.text
    product_id = product.json()["id"]
    granted = httpx.post(f"{one.url}/v1/licenses", headers=seller,
                         json={"product_id": product_id, "user": "272"})
    assert granted.status_code in (200, 201), granted.text
    key = license_key(one, product_id, "272")  # sealed under the shared key-encryption key

    def check(host: Server) -> bool:
        r = httpx.post(f"{host.url}/runtime/check",
                       json={"user_id": 272, "product_id": product_id, "key": key})
        assert r.status_code == 200, r.text
        answer: bool = r.json()["success"]
        return answer

    assert check(two) and check(one)
    revoked = httpx.delete(f"{two.url}/v1/licenses", headers=seller,
                           params={"product_id": product_id, "user": "272"})
    assert revoked.status_code == 200, revoked.text
    assert not check(one) and not check(two)


def test_a_web_session_made_on_one_host_is_good_on_the_other(
        hosts: tuple[Server, Server]) -> None:
    one, two = hosts
    setup_people(one.database_url, "73")
    with httpx.Client() as browser:
        form = browser.get(f"{one.url}/signin")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf is not None
        signed = browser.post(f"{one.url}/signin", data={
            "csrf": csrf[1], "username": "owner73", "password": "owner-password"})
        assert signed.status_code == 303, signed.text
        cookie = browser.cookies["licore_session"]
    # the same cookie, sent to the other host (a load balancer may pick either)
    elsewhere = httpx.get(f"{two.url}/dashboard", cookies={"licore_session": cookie})
    assert elsewhere.status_code == 200 and "Studio73" in elsewhere.text


def test_an_update_file_made_on_one_host_is_remade_byte_for_byte_by_the_other(
        hosts: tuple[Server, Server]) -> None:
    """docs/runtime.md, "Updates as files": each host keeps its own files; one that lacks a
    file remakes it from the database, the same bytes under the same name."""
    one, two = hosts
    people = setup_people(one.database_url, "74")
    key = owner_key(one, people, ALL)
    product = v1(one, "POST", "/products", key, json={"title": "Files"}).json()["id"]
    r = upload(one, key, product, "1.0.0", file_of(product_model(extra=10)))
    v1(one, "POST", "/packages/publish", key,
       json={"product_id": product, "version_id": r.json()["version"]["id"]})
    v1(one, "POST", "/licenses", key, json={"product_id": product, "user": "274"})
    answer = httpx.post(f"{one.url}/runtime/update", json={
        "user_id": "274", "product_id": product, "key": license_key(one, product, "274"),
        "nonce": secrets.token_hex(16), "delivery": "file", "compression": "zstd"}).json()
    url = answer["file"]["url"]
    made_here = httpx.get(one.url + url)
    assert made_here.status_code == 200
    name = url.rsplit("/", 1)[1]
    assert not (two.data_dir / "update-files" / name[:2] / name).exists()
    remade = httpx.get(two.url + url)
    assert remade.status_code == 200
    assert remade.content == made_here.content
    assert remade.headers["etag"] == made_here.headers["etag"]
