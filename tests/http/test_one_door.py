"""A Partner call reaches the core once, and changes state in one unit of work (issue 26).

The app is built over the real use cases, each wrapped so the test sees which ones the HTTP
adapter calls, and over a storage that counts the units of work it opens. The answers are
the real ones; only the counting is added."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, cast

import attrs
import httpx

from adapters_http.app import create_app
from adapters_storage import MemoryStorage
from licore.actors import ActingStudio
from licore.commands import CreateProduct
from licore.services.wiring import UseCases
from licore.storage_ports import Storage, UnitOfWork
from tests.support.fakes import make_deps
from tests.support.scenario import build_world


class CountingStorage:
    """The in-memory storage, counting the units of work opened."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.opened = 0

    def unit_of_work(self) -> AbstractAsyncContextManager[UnitOfWork]:
        self.opened += 1
        return self.inner.unit_of_work()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Seen:
    """One use-case family; every method call the adapter makes is written down."""

    def __init__(self, name: str, inner: object, calls: list[str]) -> None:
        self.name, self.inner, self.calls = name, inner, calls

    def __getattr__(self, attr: str) -> Any:
        found = getattr(self.inner, attr)
        if not callable(found):
            return found

        def called(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(f"{self.name}.{attr}")
            return found(*args, **kwargs)

        return called


def watched(uc: UseCases, calls: list[str]) -> UseCases:
    families = {f.name: Seen(f.name, getattr(uc, f.name), calls) for f in attrs.fields(UseCases)}
    return cast(UseCases, type("Watched", (), families)())


@asynccontextmanager
async def partner_app() -> AsyncIterator[tuple[httpx.AsyncClient, CountingStorage, list[str],
                                               Callable[[], Any]]]:
    storage = CountingStorage(MemoryStorage())
    deps = make_deps(cast(Storage, storage))
    world = await build_world(deps)
    uc = UseCases.of(deps)
    product = await uc.products.create(ActingStudio(world.studio.id), CreateProduct("Door"))
    calls: list[str] = []
    app = create_app(watched(uc, calls), deps.settings, only=("partner",))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test",
                                 headers={"Authorization": f"Bearer {world.studio_key}"}
                                 ) as client:
        yield client, storage, calls, lambda: product.id


async def test_a_grant_reaches_the_core_once_in_two_units_of_work() -> None:
    async with partner_app() as (client, storage, calls, product_id):
        before = storage.opened
        granted = await client.post("/v1/licenses", json={"product_id": product_id(),
                                                          "user": "4242"})
        assert granted.status_code == 200, granted.text
        assert granted.json()["license"]["platform_id"] == "4242"
        assert calls == ["partner.call"]
        # The key's (look-up and the per-key count; the key was used within the minute, so
        # no touch) and the grant's: one state change, one unit of work.
        assert storage.opened - before == 2
        again = await client.post("/v1/licenses", json={"product_id": product_id(),
                                                        "user": "4242"})
        assert again.json()["error"] == "already_owned"
        assert calls == ["partner.call"] * 2


async def test_every_partner_call_is_one_call_into_the_core() -> None:
    async with partner_app() as (client, _, calls, product_id):
        asked = [("GET", "/v1/products", {}), ("GET", "/v1/licenses",
                                                {"product_id": product_id()}),
                 ("GET", "/v1/alerts", {}), ("GET", "/v1/packages", {}),
                 ("GET", "/v1/webhooks", {}), ("GET", "/v1/library", {})]
        statuses = [(await client.request(method, path, params=params)).status_code
                    for method, path, params in asked]
        # /v1/library needs a library key: refused by the core's one decision, still one call.
        assert statuses == [200] * 5 + [403]
        assert calls == ["partner.call"] * len(asked)
