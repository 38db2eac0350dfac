"""Purchase passes and platform sign-in end to end: a real `licore serve` talking to a
stand-in of the platform (its inventory and users APIs and its OpenID provider), both on
loopback, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import attrs
import httpx
import pytest

from licore.model import Account
from licore.services.deps import Deps
from tests.http.e2e import People, auth, core, obtain_key, setup_people
from tests.http.test_openapi_e2e import check
from tests.support.platform_standin import (
    CLIENT_SECRET,
    Platform,
    running_platform,
    server_env,
)
from tests.support.server import Server, running_server

PASS = "987654321"
BUYER_SUB = "5550001"


@attrs.frozen
class Scene:
    server: Server
    platform: Platform
    people: People
    studio_key: str
    product_id: str


@pytest.fixture(scope="module")
def scene(module_database_url: str) -> Iterator[Scene]:
    with running_platform() as platform, \
            running_server(module_database_url, **server_env(platform)) as server:
        people = setup_people(module_database_url, "91")
        key = obtain_key(server, people,
                         "products:read products:write licenses:read licenses:write "
                         "packages:read packages:write", people.owner_id, people.studio_id)
        u = f"{server.url}/v1"
        pid = httpx.post(f"{u}/products", headers=auth(key), json={"title": "Pass Sword"}
                         ).json()["id"]
        r = httpx.post(f"{u}/products", headers=auth(key), json={"id": pid,
                                                                 "discoverable": True})
        assert r.status_code == 200, r.text
        # The pass id as a JSON number: the extension field takes both forms.
        r = httpx.post(f"{u}/packages/settings", headers=auth(key),
                       json={"product_id": pid, "purchase_pass_id": int(PASS)})
        assert r.status_code == 200 and r.json()["purchase_pass_id"] == PASS, r.text
        yield Scene(server, platform, people, key, pid)


def csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html
    return found.group(1)


@contextmanager
def platform_sign_in(scene: Scene, sub: str, name: str) -> Iterator[httpx.Client]:
    """A cookie-keeping client through the whole round trip: our sign-in page, the
    provider's authorize endpoint, our callback, then back where it started."""
    scene.platform.signed_in_as = sub
    scene.platform.users[sub] = name
    with httpx.Client(base_url=scene.server.url, follow_redirects=True) as browser:
        page = browser.get("/signin/platform", params={"next": "/library"})
        assert page.status_code == 200, page.text
        assert str(page.url).endswith("/library"), page.url
        yield browser


def account_of(scene: Scene, sub: str) -> Account | None:
    async def read(d: Deps) -> Account | None:
        async with d.storage.unit_of_work() as uow:
            return await uow.accounts.by_platform_id(sub)

    return core(scene.server.database_url, read)


def test_sign_in_makes_the_account_from_the_id_token(scene: Scene) -> None:
    with platform_sign_in(scene, BUYER_SUB, "pass_buyer") as browser:
        assert "pass_buyer" in browser.get("/").text
    account = account_of(scene, BUYER_SUB)
    assert account is not None and account.username == "pass_buyer"
    assert account.password_digest is None
    # Signing in again is the same account.
    with platform_sign_in(scene, BUYER_SUB, "pass_buyer"):
        pass
    again = account_of(scene, BUYER_SUB)
    assert again is not None and again.id == account.id
    # The sign-in page offers the platform.
    assert 'href="/signin/platform' in httpx.get(f"{scene.server.url}/signin").text


def test_a_taken_name_gets_the_platform_id_appended(scene: Scene) -> None:
    # "buyer91" is a local account already (setup_people).
    with platform_sign_in(scene, "5550002", "buyer91"):
        pass
    account = account_of(scene, "5550002")
    assert account is not None and account.username == "buyer91-5550002"


def test_an_account_with_a_password_is_not_entered_through_the_platform(
        scene: Scene) -> None:
    """owner91 (platform id 191) has a password: the platform proves the same platform user,
    but does not stand in for the password (docs/web.md). helper91 (platform id 391) has
    none, and is signed in."""
    scene.platform.signed_in_as = "191"
    scene.platform.users["191"] = "owner91"
    with httpx.Client(base_url=scene.server.url, follow_redirects=True) as browser:
        page = browser.get("/signin/platform")
        assert page.status_code == 403, page.text
        assert "sign in with its username and password" in page.text
        assert browser.get("/library", follow_redirects=False).status_code == 303
        assert "owner91" not in browser.get("/").text
    owner = account_of(scene, "191")
    assert owner is not None and owner.id == scene.people.owner_id
    with platform_sign_in(scene, "391", "helper91") as browser:
        assert "helper91" in browser.get("/").text


@pytest.mark.parametrize("fault", ["tamper", "foreign_key", "wrong_aud", "wrong_iss",
                                   "expired", "wrong_nonce"])
def test_a_bad_id_token_signs_no_one_in(scene: Scene, fault: str) -> None:
    scene.platform.token_fault = fault
    scene.platform.signed_in_as = "5550099"
    try:
        with httpx.Client(base_url=scene.server.url, follow_redirects=True) as browser:
            page = browser.get("/signin/platform")
            assert page.status_code == 401, (fault, page.text)
            assert "You are not signed in" in page.text
            assert browser.get("/library", follow_redirects=False).status_code == 303
    finally:
        scene.platform.token_fault = None
    assert account_of(scene, "5550099") is None
    assert account_of(scene, "1") is None  # the tampered subject


def test_cancelled_and_forged_callbacks_show_a_clear_page(scene: Scene) -> None:
    scene.platform.deny = True
    try:
        with httpx.Client(base_url=scene.server.url, follow_redirects=True) as browser:
            page = browser.get("/signin/platform")
        assert page.status_code == 400
        assert "You cancelled signing in with Roblox" in page.text
    finally:
        scene.platform.deny = False
    # A callback whose state this browser never started (login CSRF) is refused.
    with httpx.Client(base_url=scene.server.url) as browser:
        page = browser.get("/signin/platform/callback", params={"code": "x", "state": "y"})
    assert page.status_code == 401
    assert "You are not signed in" in page.text


def claim_on_page(browser: httpx.Client, product_id: str) -> httpx.Response:
    store = browser.get("/store")
    assert f'action="/store/{product_id}/claim"' in store.text
    return browser.post(f"/store/{product_id}/claim", data={"csrf": csrf(store.text)})


def test_claim_on_the_store_then_download_with_a_library_key(scene: Scene) -> None:
    sub = "5550010"
    scene.platform.own(sub, PASS)
    with platform_sign_in(scene, sub, "claimer") as browser:
        page = claim_on_page(browser, scene.product_id)
        assert page.status_code == 200, page.text
        assert 'data-result="granted"' in page.text
        assert "Pass Sword" in browser.get("/library").text
    account = account_of(scene, sub)
    assert account is not None
    # An app acting for the person claims through the extension endpoint.
    lib = obtain_key(scene.server, scene.people, "library:read library:download",
                     account.id, None)
    r = httpx.post(f"{scene.server.url}/v1/library/claim", headers=auth(lib),
                   json={"product_id": scene.product_id})
    assert r.status_code == 200, r.text
    assert r.json()["result"] == "already_held"
    assert r.json()["license"]["source"] == "purchase_pass"
    listed = httpx.get(f"{scene.server.url}/v1/library", headers=auth(lib)).json()
    assert [p["id"] for p in listed["products"]] == [scene.product_id]
    # The seller sees where the license came from.
    licenses = httpx.get(f"{scene.server.url}/v1/licenses", headers=auth(scene.studio_key),
                         params={"product_id": scene.product_id}).json()["licenses"]
    assert {(lc["platform_id"], lc["source"]) for lc in licenses} >= {(sub, "purchase_pass")}


def test_revoked_is_not_restored_over_http(scene: Scene) -> None:
    sub = "5550020"
    scene.platform.own(sub, PASS)
    with platform_sign_in(scene, sub, "revokee") as browser:
        assert 'data-result="granted"' in claim_on_page(browser, scene.product_id).text
        r = httpx.delete(f"{scene.server.url}/v1/licenses", headers=auth(scene.studio_key),
                         params={"product_id": scene.product_id, "user": sub})
        assert r.status_code == 200, r.text
        page = claim_on_page(browser, scene.product_id)
        assert 'data-result="revoked"' in page.text
        assert "The seller revoked your license" in page.text
        assert "Pass Sword" not in browser.get("/library").text
    # An app claiming for the person is told no, in the documented error shape: an app
    # that reads only the status or `ok` must not say it worked (issue 27 item 6).
    account = account_of(scene, sub)
    assert account is not None
    lib = obtain_key(scene.server, scene.people, "library:read", account.id, None)
    refused = httpx.post(f"{scene.server.url}/v1/library/claim", headers=auth(lib),
                         json={"product_id": scene.product_id})
    assert (refused.status_code, refused.json()["error"]) == (409, "license_revoked")
    assert "ok" not in refused.json() and refused.json()["error_description"]
    check(httpx.get(f"{scene.server.url}/openapi.json").json(), "POST", "/v1/library/claim",
          refused)
    licenses = httpx.get(f"{scene.server.url}/v1/licenses", headers=auth(scene.studio_key),
                         params={"product_id": scene.product_id}).json()["licenses"]
    mine = [lc for lc in licenses if lc["platform_id"] == sub]
    assert [(lc["state"], lc["is_active"]) for lc in mine] == [("inactive", False)]


def test_not_owned_and_platform_down_over_the_api(scene: Scene) -> None:
    sub = "5550030"
    with platform_sign_in(scene, sub, "nonowner"):
        pass
    account = account_of(scene, sub)
    assert account is not None
    lib = obtain_key(scene.server, scene.people, "library:read", account.id, None)
    url = f"{scene.server.url}/v1/library/claim"
    doc = httpx.get(f"{scene.server.url}/openapi.json").json()

    def claim(body: dict[str, object]) -> httpx.Response:
        answer = httpx.post(url, headers=auth(lib), json=body)
        check(doc, "POST", "/v1/library/claim", answer)  # every answer as documented
        return answer

    r = claim({"product_id": scene.product_id})
    assert r.status_code == 409 and r.json()["error"] == "pass_not_owned", r.text
    scene.platform.own(sub, PASS)
    scene.platform.fail(503, -1)
    try:
        r = claim({"product_id": scene.product_id})
    finally:
        scene.platform.fail(503, 0)
    assert r.status_code == 503 and r.json()["error"] == "platform_unavailable", r.text
    assert int(r.headers["Retry-After"]) > 0
    r = claim({"product_id": scene.product_id, "extra": 1})
    assert r.status_code == 400, r.text
    r = claim({"product_id": scene.product_id})
    assert r.status_code == 200 and r.json()["result"] == "granted", r.text


def test_no_secret_of_a_sign_in_reaches_the_log(scene: Scene) -> None:
    """A sign-in of its own, so the log holds one whatever ran before: the provider's code,
    the PKCE verifier, the tokens and the client secret are each absent from it."""
    seen_before = len(scene.platform.secrets_seen)
    with platform_sign_in(scene, "5550040", "logwatcher") as browser:
        assert "logwatcher" in browser.get("/").text
    mine = scene.platform.secrets_seen[seen_before:]
    assert len(mine) == 5  # code; verifier, access, refresh and id tokens
    log = scene.server.log()
    assert "/signin/platform/callback" in log  # the sign-in is in the log, its secrets not
    assert [secret for secret in [CLIENT_SECRET, *mine] if secret in log] == []
    assert "id_token" not in log and "code_verifier" not in log
    for grant_code in re.findall(r"code=([A-Za-z0-9_-]{20,})", log):
        pytest.fail(f"an authorization code in the log: {grant_code[:4]}...")
