"""Sessions and forms of the web pages over plain HTTP (no browser needed): the cookie's
flags, form tokens, the failed sign-in limit, sign-out, and the approval page's guards."""

from __future__ import annotations

import re
from http.cookies import SimpleCookie
from pathlib import Path

import attrs
import httpx
import pytest

from adapters_http.web.session import MAX_AGE
from adapters_storage import open_storage
from licore.model import Client, Studio
from licore.services.deps import Settings
from licore.services.signin import FAILURE_WINDOW, FAILURES_PER_NAME_AND_SOURCE, PACE_WINDOW
from licore.services.wiring import UseCases
from licore_cli.compose import app_of
from tests.browser.site import (
    Person,
    PollingApp,
    add_client,
    add_person,
    add_studio,
    start_flow,
)
from tests.support.fakes import FakeClock, make_deps
from tests.support.server import Server


@attrs.frozen
class World:
    sam: Person
    tess: Person
    studio: Studio
    app: Client


@pytest.fixture(scope="module")
def world(site: Server) -> World:
    sam = add_person(site, "sam", "8001")
    tess = add_person(site, "tess", "8002")
    studio = add_studio(site, "Sam Studio", sam)
    return World(sam, tess, studio, add_client(site, "Tool", "library:read"))


def form_token(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page has no form token"
    return found.group(1)


def cookie_attributes(response: httpx.Response) -> dict[str, str]:
    header = response.headers["set-cookie"]
    cookie = SimpleCookie()
    cookie.load(header)
    morsel = cookie["licore_session"]
    flags = {k.lower() for k in re.split(r";\s*", header)[1:]}
    return {"httponly": str("httponly" in flags), "secure": str("secure" in flags),
            "samesite": morsel["samesite"], "path": morsel["path"]}


def signed_in(site: Server, who: Person) -> httpx.Client:
    client = httpx.Client(base_url=site.url)
    token = form_token(client.get("/signin").text)
    r = client.post("/signin", data={"csrf": token, "username": who.name,
                                     "password": who.password})
    assert (r.status_code, r.headers["location"]) == (303, "/"), r.text
    return client


def test_the_session_cookie_is_httponly_and_samesite_lax_and_not_secure_over_http(
        site: Server) -> None:
    r = httpx.get(f"{site.url}/signin")
    assert cookie_attributes(r) == {"httponly": "True", "secure": "False", "samesite": "lax",
                                    "path": "/"}


async def test_the_session_cookie_is_secure_when_the_public_url_is_https(
        tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:///{tmp_path / 'licore.db'}")
    await storage.migrate()
    deps = make_deps(storage, settings=Settings(public_url="https://licore.example"))
    app = app_of(deps)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="https://licore.example") as client:
            r = await client.get("/signin")
    finally:
        await storage.close()
    assert cookie_attributes(r) == {"httponly": "True", "secure": "True", "samesite": "lax",
                                    "path": "/"}


async def test_a_session_ends_twelve_hours_after_sign_in(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:///{tmp_path / 'licore.db'}")
    await storage.migrate()
    clock = FakeClock()
    deps = make_deps(storage, clock)
    await UseCases.of(deps).operator.add_account("ivy", "9100", "ivy's password")
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app_of(deps)),
                                     base_url="http://test") as client:
            token = form_token((await client.get("/signin")).text)
            signed = await client.post("/signin", data={
                "csrf": token, "username": "ivy", "password": "ivy's password"})
            assert signed.status_code == 303
            clock.advance(MAX_AGE)
            assert (await client.get("/library")).status_code == 200
            clock.advance(1)
            later = await client.get("/library")
    finally:
        await storage.close()
    assert (later.status_code, later.headers["location"]) == (303, "/signin?next=%2Flibrary")


def test_posts_without_a_valid_form_token_are_refused(site: Server, world: World) -> None:
    client = signed_in(site, world.sam)
    other = signed_in(site, world.sam)
    page = client.get(f"/dashboard/{world.studio.id}")
    good = form_token(page.text)
    create = f"/dashboard/{world.studio.id}/products"
    for sent in ({}, {"csrf": ""}, {"csrf": good[:-2] + "xx"}, {"csrf": form_token(
            other.get("/").text)}):
        r = client.post(create, data={**sent, "title": "Forged"})
        assert r.status_code == 403, sent
        assert "did not come from this site" in r.text
    # A token in the query string is not a form field either.
    assert client.post(f"{create}?csrf={good}", data={"title": "Forged"}).status_code == 403
    assert client.post("/signout", data={}).status_code == 403
    assert "Forged" not in client.get(f"/dashboard/{world.studio.id}").text
    made = client.post(create, data={"csrf": good, "title": "Real"})
    assert made.status_code == 303
    assert "Real" in client.get(f"/dashboard/{world.studio.id}").text
    # Signing in needs a token too (no signing someone in from another site).
    anonymous = httpx.Client(base_url=site.url)
    r = anonymous.post("/signin", data={"username": "sam", "password": world.sam.password})
    assert r.status_code == 403 and "licore_session" not in r.headers.get("set-cookie", "")


def test_failed_sign_ins_are_limited_per_username(site: Server, world: World) -> None:
    client = httpx.Client(base_url=site.url)
    token = form_token(client.get("/signin").text)

    def attempt(name: str, password: str) -> httpx.Response:
        return client.post("/signin", data={"csrf": token, "username": name,
                                            "password": password})

    site.next_window(FAILURE_WINDOW)  # five failures in one window, however slow
    unknown = attempt("nobody-here", "whatever")
    for failures in range(1, FAILURES_PER_NAME_AND_SOURCE + 1):
        wrong = attempt("tess", "not the password")
        assert wrong.status_code == 401
        # An unknown name and a wrong password read the same.
        assert "wrong username or password" in wrong.text and unknown.status_code == 401
        if failures < FAILURES_PER_NAME_AND_SOURCE:
            # A failure slows its source: right away, even the right password waits.
            paced = attempt("tess", world.tess.password)
            assert paced.status_code == 429
            assert re.search(r"try again in \d+ seconds", paced.text), paced.text
            site.next_window(PACE_WINDOW)
    locked = attempt("tess", world.tess.password)
    assert locked.status_code == 429 and int(locked.headers["retry-after"]) > 60
    assert re.search(r"too many failed sign-ins; try again in 1\d minutes", locked.text)
    # Another person signing in from the same address is not locked out.
    assert signed_in(site, world.sam).get("/dashboard").status_code == 200


def test_signing_out_ends_the_session_even_for_a_kept_cookie(
        site: Server, world: World) -> None:
    client = signed_in(site, world.sam)
    kept = client.cookies["licore_session"]
    assert client.get("/dashboard").status_code == 200
    token = form_token(client.get("/dashboard").text)
    assert client.post("/signout", data={"csrf": token}).status_code == 303
    assert client.get("/dashboard").status_code == 303
    replay = httpx.Client(base_url=site.url, cookies={"licore_session": kept})
    r = replay.get("/dashboard")
    assert (r.status_code, r.headers["location"]) == (303, "/signin?next=%2Fdashboard")


def test_sign_in_sends_people_back_only_to_this_site(site: Server, world: World) -> None:
    client = httpx.Client(base_url=site.url)
    for target, landing in (("//evil.example/x", "/"), ("https://evil.example", "/"),
                            ("/library", "/library")):
        token = form_token(client.get(f"/signin?next={target}").text)
        r = client.post("/signin", data={"csrf": token, "username": "sam",
                                         "password": world.sam.password, "next": target})
        assert r.headers["location"] == landing, target
        client.post("/signout", data={"csrf": form_token(client.get("/").text)})


def test_a_code_must_be_entered_before_it_can_be_decided(site: Server, world: World) -> None:
    flow = start_flow(site, world.app, "library:read")
    app = PollingApp(site, flow)
    try:
        client = signed_in(site, world.sam)
        token = form_token(client.get("/device").text)
        r = client.post("/device/decide", data={"csrf": token, "code": flow["user_code"],
                                                "decision": "approve"})
        assert r.status_code == 400 and "Enter the code your app shows first" in r.text
        assert app.still_pending()
    finally:
        app.stop()


def test_pages_forbid_framing_and_are_not_cached(site: Server, world: World) -> None:
    client = signed_in(site, world.sam)
    r = client.get("/device")
    assert r.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["cache-control"] == "no-store"
    assert httpx.get(f"{site.url}/v1/products").headers.get("x-frame-options") is None
