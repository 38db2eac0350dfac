"""Managing events on the dashboard (docs/web.md, docs/events.md), against a real server on
each database, through its forms: webhook endpoints added (secret shown once), rotated (the
old secret still signing for the overlap), disabled ones enabled again, deleted; a product's
chat roles added and removed; errors and the server-side request forgery refusal shown on
the page; permissions and the form token checked; no secret in the server's log."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import attrs
import httpx
import pytest

from licore.model import Studio
from licore.scopes import Permission
from licore.services.deps import Deps
from tests.browser.site import Person, add_collaborator, add_person, add_studio
from tests.http.e2e import core
from tests.support.server import Server, running_server

TOKEN = re.compile(r'name="csrf" value="([^"]+)"')
SECRET = re.compile(r'id="secret" value="(whsec_[^"]+)"')


@attrs.frozen
class Site:
    server: Server
    owner: Person
    licenses_only: Person  # a collaborator with manage_licenses only
    products_only: Person  # a collaborator with manage_products only
    studio: Studio


@pytest.fixture(scope="module")
def site(module_database_url: str) -> Iterator[Site]:
    # No outbox loops: nothing here is meant to be sent anywhere.
    with running_server(module_database_url, LICORE_OUTBOX_WORKERS="0") as server:
        owner = add_person(server, "wendy", "9101")
        licenses_only = add_person(server, "lars", "9102")
        products_only = add_person(server, "pia", "9103")
        studio = add_studio(server, "Wendy Works", owner)
        add_collaborator(server, studio, licenses_only, Permission.MANAGE_LICENSES)
        add_collaborator(server, studio, products_only, Permission.MANAGE_PRODUCTS)
        yield Site(server, owner, licenses_only, products_only, studio)


class Browser:
    """A signed-in person posting the dashboard's forms with their form token."""

    def __init__(self, site: Site, who: Person) -> None:
        self.web = httpx.Client(base_url=site.server.url, follow_redirects=True, timeout=30)
        self.base = f"/dashboard/{site.studio.id}"
        r = self.web.post("/signin", data={"csrf": self.token("/signin"),
                                           "username": who.name, "password": who.password})
        assert r.status_code == 200, r.text

    def token(self, path: str) -> str:
        found = TOKEN.search(self.web.get(path).text)
        assert found is not None
        return found.group(1)

    def post(self, path: str, **fields: str) -> httpx.Response:
        return self.web.post(self.base + path, data={"csrf": self.token(self.base), **fields})

    def board(self) -> str:
        return self.web.get(self.base).text


@contextmanager
def signed_in(site: Site, who: Person) -> Iterator[Browser]:
    browser = Browser(site, who)
    try:
        yield browser
    finally:
        browser.web.close()


def endpoint_ids(site: Site) -> list[str]:
    async def read(d: Deps) -> list[str]:
        async with d.storage.unit_of_work() as uow:
            return [e.id for e in await uow.hooks.endpoints_of(site.studio.id)]
    return core(site.server.database_url, read)


def add(browser: Browser, url: str, *events: str) -> httpx.Response:
    return browser.post("/webhooks", url=url, **{f"event:{e}": "on" for e in events})


def test_private_addresses_and_bad_forms_are_refused_on_the_page(site: Site) -> None:
    with signed_in(site, site.owner) as me:
        r = add(me, "http://127.0.0.1:9/hook", "license.granted")
        assert r.status_code == 400
        assert ("resolves to 127.0.0.1, which is loopback (127.0.0.0/8); the operator has "
                "not allowed special-purpose addresses (LICORE_WEBHOOK_ALLOW_PRIVATE)"
                ) in r.text
        r = add(me, "http://169.254.169.254/latest", "license.granted")  # cloud metadata
        assert r.status_code == 400 and "link-local" in r.text
        r = add(me, "https://93.184.215.14/hook")  # no event ticked
        assert r.status_code == 400 and "events must name at least one event type" in r.text
        r = add(me, "ftp://93.184.215.14/hook", "license.granted")
        assert r.status_code == 400 and "url must be an http:// or https:// address" in r.text
        r = me.web.post(f"{me.base}/webhooks", data={"url": "https://93.184.215.14/hook",
                                                     "event:license.granted": "on"})
        assert r.status_code == 403  # no form token
        assert endpoint_ids(site) == []


def test_an_endpoint_is_added_rotated_enabled_and_deleted_on_the_dashboard(
        site: Site) -> None:
    with signed_in(site, site.licenses_only) as me:  # licenses:write is what it needs
        r = add(me, "https://93.184.215.14/hook", "license.granted", "license.revoked")
        assert r.status_code == 200, r.text
        found = SECRET.search(r.text)
        assert found is not None
        first = found.group(1)
        assert "shown only this once" in r.text
        (endpoint,) = endpoint_ids(site)
        board = me.board()
        assert "https://93.184.215.14/hook" in board and "license.granted, license.revoked" in board
        assert first not in board  # never shown again

        r = me.post(f"/webhooks/{endpoint}/rotate")
        assert r.status_code == 200
        found = SECRET.search(r.text)
        assert found is not None
        second = found.group(1)
        assert second != first and "keeps signing alongside it for 24 hours" in r.text
        assert "Old secret signs until" in me.board()
        assert signing_secrets(site, endpoint) == [second, first]  # both sign for the overlap

        disable(site, endpoint)
        board = me.board()
        assert "was disabled" in board and "every delivery failed for 5 days" in board
        r = me.post(f"/webhooks/{endpoint}/enable")
        assert r.status_code == 200 and "Webhook endpoint enabled again." in r.text
        assert "was disabled" not in r.text

        r = me.post(f"/webhooks/{endpoint}/delete")
        assert r.status_code == 200 and "Webhook endpoint deleted." in r.text
        assert endpoint_ids(site) == []
        assert me.post(f"/webhooks/{endpoint}/rotate").status_code == 404
    log = site.server.log()
    assert first not in log and second not in log


def test_managing_endpoints_needs_the_manage_licenses_permission(site: Site) -> None:
    with signed_in(site, site.products_only) as me:
        r = add(me, "https://93.184.215.14/hook", "license.granted")
        assert r.status_code == 403 and "manage licenses permission" in r.text
        assert 'id="events"' not in me.board()  # the section is not shown either
    assert endpoint_ids(site) == []


def test_a_products_chat_roles_are_added_and_removed_on_its_page(site: Site) -> None:
    with signed_in(site, site.owner) as me:
        r = me.post("/products", title="Rune Blade", price_credit="0")
        product = re.search(r"/products/(prd_[A-Za-z0-9]+)", str(r.url))
        assert product is not None
        path = f"/products/{product.group(1)}"
        r = me.post(f"{path}/chat-roles", guild_id="abc", role_id="2", action="add")
        assert r.status_code == 400 and "guild_id must be a chat id (digits)" in r.text
        r = me.post(f"{path}/chat-roles", guild_id="111", role_id="222", action="add")
        assert r.status_code == 200
        assert "Chat role 222 in server 111 added" in r.text
        assert 'aria-label="Remove role 222 in server 111"' in r.text
        with signed_in(site, site.licenses_only) as other:
            refused = other.post(f"{path}/chat-roles", guild_id="111", role_id="222",
                                 action="remove")
            assert refused.status_code == 403 and "manage products permission" in refused.text
        r = me.post(f"{path}/chat-roles", guild_id="111", role_id="222", action="remove")
        assert r.status_code == 200 and "This product earns no chat roles." in r.text


def signing_secrets(site: Site, endpoint_id: str) -> list[str]:
    """The secrets that sign now, newest first, decrypted as the worker does."""
    async def read(d: Deps) -> list[str]:
        async with d.storage.unit_of_work() as uow:
            found = await uow.hooks.endpoint(endpoint_id)
        assert found is not None and found.previous_ciphertext is not None
        return [d.vault.decrypt(found.secret_ciphertext, found.id),
                d.vault.decrypt(found.previous_ciphertext, found.id)]
    return core(site.server.database_url, read)


def disable(site: Site, endpoint_id: str) -> None:
    """As the worker does after five days of failures."""
    async def write(d: Deps) -> None:
        async with d.storage.unit_of_work() as uow:
            found = await uow.hooks.endpoint(endpoint_id)
            assert found is not None
            await uow.hooks.save_endpoint(attrs.evolve(
                found, failing_since=1, disabled_at=d.clock.now(),
                disabled_reason="every delivery failed for 5 days"))
    core(site.server.database_url, write)
