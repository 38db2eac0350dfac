"""Served under a path: every address the service writes carries the prefix, whether the
prefix is the operator's `LICORE_ROOT_PATH` behind a proxy or an embedder's Starlette
`Mount("/licensing", app)`. Real server processes, real HTTP."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from licore.services.wiring import UseCases
from tests.http.e2e import core
from tests.support.fakes import TEST_KEK
from tests.support.server import LICORE, free_port, running_server

PREFIX = "/licensing"
PASSWORD = "correct horse battery"
ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r'(?:href|src|action)="([^"#][^"]*)"')


def addresses(html: str) -> list[str]:
    """Every link, asset and form address on a page, other than within-page anchors."""
    return [a.replace("&amp;", "&") for a in LINK.findall(html)]


def set_up(database_url: str) -> str:
    """An account with a password, and an app; the app's id."""
    async def make(d: object) -> str:
        uc = UseCases.of(d)  # type: ignore[arg-type]
        await uc.operator.add_account("mona", "8101", PASSWORD)
        await uc.operator.add_studio("Mona Makes", "mona")
        client = await uc.operator.add_client("Mount Tool", "Installs models", "library:read")
        return client.id

    return core(database_url, make)


def check_under_the_prefix(base: str, public: str, database_url: str) -> None:
    """`base`: where the server is reached; `public`: the public URL with the prefix."""
    site = f"{base}{PREFIX}"
    with httpx.Client() as http:
        # an empty install's home page says how to make the first account, linked in place
        home = http.get(f"{site}/")
        assert home.status_code == 200
        assert "licore account add NAME --platform-id YOUR_ROBLOX_USER_ID" in home.text
        assert all(a.startswith(f"{PREFIX}/") for a in addresses(home.text)), home.text
        assert http.get(f"{site}/assets/web.css").headers["content-type"].startswith("text/css")

        app_id = set_up(database_url)
        # a page that needs a session sends the visitor to sign in, under the prefix, with
        # `next` naming the page as the site's own links do
        away = http.get(f"{site}/dashboard")
        assert away.status_code == 303
        assert away.headers["location"] == f"{PREFIX}/signin?next=%2Fdashboard"

        form = http.get(f"{site}/signin?next=/dashboard")
        cookie = form.headers["set-cookie"]
        assert re.search(rf"(?i)\bpath={PREFIX}(;|$)", cookie), cookie
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf is not None
        signed = http.post(f"{site}/signin", data={
            "csrf": csrf[1], "username": "mona", "password": PASSWORD, "next": "/dashboard"})
        assert signed.status_code == 303, signed.text
        assert signed.headers["location"] == f"{PREFIX}/dashboard"
        assert re.search(rf"(?i)\bpath={PREFIX}(;|$)", signed.headers["set-cookie"])
        board = http.get(f"{site}/dashboard")
        assert board.status_code == 200 and "Mona Makes" in board.text
        links = addresses(board.text)
        assert links and all(a.startswith(f"{PREFIX}/") for a in links), links
        studio = next(a for a in links if re.fullmatch(rf"{PREFIX}/dashboard/\w+", a))
        studio_page = http.get(f"{base}{studio}")
        assert studio_page.status_code == 200
        assert all(a.startswith(f"{PREFIX}/") for a in addresses(studio_page.text))

        # the OAuth metadata (RFC 8414) and OpenAPI name the prefixed addresses, and they work
        meta = http.get(f"{site}/.well-known/oauth-authorization-server").json()
        assert meta["issuer"] == public
        assert meta["device_authorization_endpoint"] == f"{public}/auth/device/code"
        assert meta["token_endpoint"] == f"{public}/auth/device/token"
        assert meta["revocation_endpoint"] == f"{public}/auth/revoke"
        assert http.get(f"{site}/openapi.json").json()["servers"] == [{"url": public}]
        started = http.post(f"{site}/auth/device/code",
                            json={"client_id": app_id, "scope": "library:read"})
        assert started.status_code == 200, started.text
        flow = started.json()
        assert flow["verification_uri"] == f"{public}/device"
        assert flow["verification_uri_complete"] == f"{public}/device?code={flow['user_code']}"
        approval = http.get(f"{site}/device", params={"code": flow["user_code"]})
        assert approval.status_code == 200 and flow["user_code"] in approval.text
        # the Runtime API answers under the prefix as at the top
        checked = http.post(f"{site}/runtime/check", json={
            "user_id": 8101, "product_id": "prod_none", "key": "LK-none"})
        assert checked.status_code == 200 and checked.json() == {"success": False}
        # the guides, with their links between each other under the prefix
        guide = http.get(f"{site}/guides/web")
        assert guide.status_code == 200
        assert f'href="{PREFIX}/guides/protection"' in guide.text
        assert f'src="{PREFIX}/guides/screenshots/dashboard.png"' in guide.text

        signed_out = http.post(f"{site}/signout", data={"csrf": re.search(
            r'name="csrf" value="([^"]+)"', board.text)[1]})  # type: ignore[index]
        assert signed_out.headers["location"] == f"{PREFIX}/"


def test_served_under_licore_root_path(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'licore.db'}"
    with running_server(url, LICORE_ROOT_PATH=PREFIX, LICORE_PUBLIC_URL="{url}") as server:
        check_under_the_prefix(server.url, f"{server.url}{PREFIX}", url)
        # a proxy that strips the prefix before passing the request on is served the same
        away = httpx.get(f"{server.url}/dashboard")
        assert away.headers["location"] == f"{PREFIX}/signin?next=%2Fdashboard"
        log = server.log()
    assert f"then sign in at {server.url}{PREFIX}/signin" in log


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The embedder's application of tests/support/mounted.py under Hypercorn."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    url = f"sqlite:///{tmp_path / 'licore.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    env.update(LICORE_DATABASE_URL=url, LICORE_DATA_DIR=str(tmp_path / "data"),
               LICORE_KEK=TEST_KEK.hex(), LICORE_PUBLIC_URL=base,
               PYTHONPATH=str(ROOT))
    log = (tmp_path / "hypercorn.log").open("wb")
    server = subprocess.Popen([str(LICORE.parent / "hypercorn"), "tests.support.mounted:app",
                               "--bind", f"127.0.0.1:{port}"], cwd=ROOT, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp_path / "hypercorn.log").read_text()
            try:
                if httpx.get(f"{base}{PREFIX}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "hypercorn.log").read_text()
            time.sleep(0.1)
        yield base, url
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def test_mounted_in_an_embedders_starlette_app(embedded: tuple[str, str]) -> None:
    base, url = embedded
    check_under_the_prefix(base, f"{base}{PREFIX}", url)
    assert httpx.get(f"{base}/").text == "the shop's own page"  # the embedder's own route
