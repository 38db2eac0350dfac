"""Changes of one product made at once keep each other's fields (docs/api.md, "Changes at
once"): every use case that saves a product reads it held (`Products.hold`), so the second
of two reads what the first left. Each product read here is slowed after it returns, so
every change has read before any has saved: without the hold, the last save puts back the
fields the others changed (it did on PostgreSQL, where reads never wait)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from licore import commands as c
from licore import license_commands as lc
from licore.actors import ActingStudio
from licore.model import Product
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import make_deps

PAUSE = 0.2


class _SlowProducts:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def by_id(self, product_id: str) -> Product | None:
        found: Product | None = await self._inner.by_id(product_id)
        await asyncio.sleep(PAUSE)
        return found

    async def hold(self, product_id: str) -> Product | None:
        found: Product | None = await self._inner.hold(product_id)
        await asyncio.sleep(PAUSE)
        return found


class _SlowUnit:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.products = _SlowProducts(inner.products)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _SlowReads:
    """The storage under test, its product reads slowed (nothing else changed)."""

    def __init__(self, inner: Storage) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @asynccontextmanager
    async def unit_of_work(self) -> AsyncIterator[Any]:
        async with self._inner.unit_of_work() as uow:
            yield _SlowUnit(uow)


async def test_three_changes_of_one_product_at_once_all_stay(storage: Storage) -> None:
    uc = UseCases.of(make_deps(storage))
    await uc.operator.add_account("owner", "1001", None)
    studio = ActingStudio((await uc.operator.add_studio("Studio", "owner")).id)
    product = await uc.products.create(studio, c.CreateProduct("Kit"))
    slow = UseCases.of(make_deps(_SlowReads(storage)))

    await asyncio.gather(
        slow.products.change(studio, c.ChangeProduct(product.id, title="Kit Two")),
        slow.packages.change_settings(studio, c.ChangeSettings(product.id,
                                                               placeholder="MY_KEY")),
        slow.lifecycle.set_policy(studio, lc.SetLicensePolicy(product.id, trial_days=9)),
    )
    async with storage.unit_of_work() as uow:
        stored = await uow.products.by_id(product.id)
    assert stored is not None
    assert (stored.title, stored.placeholder, stored.trial_days) == ("Kit Two", "MY_KEY", 9)
