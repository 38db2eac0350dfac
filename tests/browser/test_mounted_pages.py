"""The pages served under a path (`LICORE_ROOT_PATH=/licensing`), in Chromium: sign in,
make a product, follow the dashboard's link to the protection guide, then walk every page
a link reaches. Every link, form, stylesheet and image stays under the prefix, every page
and asset loads, and the session cookie is the prefix's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urldefrag, urlsplit

import pytest

from tests.browser.site import add_person, add_studio, id_in, sign_in
from tests.support.server import Server, running_server

pytestmark = pytest.mark.browser

PREFIX = "/licensing"
# Pages a walk does not open: downloads (a file, not a page) and off-site sign-ins.
NOT_WALKED = ("/download", "/chat/", "/signin/platform")


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    url = f"sqlite:///{tmp_path_factory.mktemp('mounted') / 'licore.db'}"
    with running_server(url, LICORE_ROOT_PATH=PREFIX, LICORE_PUBLIC_URL="{url}") as server:
        yield server


def addresses(page: Any, selector: str = "a[href], link[href], img[src], form[action]",
              ) -> list[str]:
    """Every address the page's links, forms, stylesheets and images name, as resolved."""
    found: list[str] = page.eval_on_selector_all(
        selector,
        # attributes, not properties: a form's `action` property is its input named action
        "els => els.map(e => new URL(e.getAttribute('href') ?? e.getAttribute('src') ?? "
        "e.getAttribute('action'), document.baseURI).href)")
    return found


def test_a_seller_walks_the_pages_under_the_prefix(browser: Any, mounted: Server) -> None:
    seller = add_person(mounted, "mira", "9101")
    add_studio(mounted, "Mira Models", seller)
    origin = mounted.url
    context = browser.new_context(base_url=origin, viewport={"width": 1100, "height": 900})
    page = context.new_page()
    failed: list[str] = []
    outside: list[str] = []

    def answered(response: Any) -> None:
        if response.status >= 400:
            failed.append(f"{response.status} {response.url}")

    def asked(request: Any) -> None:
        path = urlsplit(request.url).path
        if request.url.startswith(origin) and not path.startswith(f"{PREFIX}/"):
            outside.append(request.url)

    page.on("response", answered)
    page.on("request", asked)
    try:
        sign_in(page, seller, at=f"{PREFIX}/dashboard")  # sent to sign in, then back
        assert urlsplit(page.url).path == f"{PREFIX}/dashboard"
        page.get_by_role("link", name="Mira Models").click()
        page.get_by_text("New product").click()
        page.get_by_label("Title").fill("Prefix Pike")
        page.get_by_label("Tagline").fill("Sharp under any path")
        page.get_by_label("Price (credits)").fill("10")
        page.get_by_role("button", name="Create draft").click()
        product_page = page.url
        assert urlsplit(product_page).path.startswith(f"{PREFIX}/dashboard/")
        assert id_in(product_page, "prd")
        # the dashboard's "see the protection guide" is a link that works
        page.get_by_role("link", name="protection guide").click()
        assert urlsplit(page.url).path == f"{PREFIX}/guides/protection"
        assert page.get_by_role("heading", level=1).inner_text() == "Protecting your scripts"

        cookies = context.cookies()
        assert [c["path"] for c in cookies if c["name"] == "licore_session"] == [PREFIX]

        walked: set[str] = set()
        saved: set[str] = set()
        queue = [f"{origin}{PREFIX}/", product_page, f"{origin}{PREFIX}/guides"]
        while queue and len(walked) < 60:
            target = urldefrag(queue.pop(0))[0]
            if target in walked:
                continue
            walked.add(target)
            answer = page.goto(target)
            assert answer is not None and answer.status == 200, target
            for address in addresses(page):
                split = urlsplit(address)
                if address.startswith(origin):
                    assert split.path.startswith(f"{PREFIX}/"), (target, address)
                else:  # elsewhere on the web (the specifications a guide cites)
                    assert split.scheme in ("http", "https") and split.netloc, (target, address)
            queue += [a for a in addresses(page, "a[href]:not([download])")
                      if a.startswith(origin)
                      and not any(skip in urlsplit(a).path for skip in NOT_WALKED)]
            # A link to a file to save (`download`): fetched, not opened as a page.
            for address in addresses(page, "a[download]"):
                if address not in saved:
                    saved.add(address)
                    got = page.request.get(address)
                    assert got.status == 200, (target, address, got.status)
        paths = {urlsplit(w).path for w in walked}
        assert any(urlsplit(s).path.endswith("/usage.csv") for s in saved), sorted(saved)
        for expected in ("/", "/dashboard", "/store", "/library", "/apps", "/device",
                         "/guides", "/guides/protection", "/guides/web", "/guides/api"):
            assert f"{PREFIX}{expected}" in paths, sorted(paths)
        # the screenshots in the web guide loaded (a 404 would be in `failed`)
        page.goto(f"{PREFIX}/guides/web")
        loaded = page.eval_on_selector_all(
            "article img", "els => els.map(e => e.complete && e.naturalWidth > 0)")
        assert loaded and all(loaded), loaded
    finally:
        context.close()
    assert failed == [], failed
    assert outside == [], outside
