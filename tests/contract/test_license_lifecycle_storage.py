"""The storage methods of the license lifecycle (docs/licenses.md), on every adapter: the
lifecycle fields, tiers, trials, places, held rows, the told marks of the expiry sweep, and
the runtime look-up carrying expiry, tier data and the place limit in force."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs

from adapters_storage import open_storage
from licore import commands as c
from licore.actors import ActingStudio
from licore.licenses import DAY, LicenseState, PlacePolicy, Source
from licore.model import License, Product, Tier, UnlockData
from licore.services.wiring import UseCases
from licore.storage_ports import Notice, Storage
from tests.support.fakes import make_deps


async def _product(storage: Storage) -> Product:
    deps = make_deps(storage)
    uc = UseCases.of(deps)
    await uc.operator.add_account("owner", "1001", None)
    studio = await uc.operator.add_studio("Studio", "owner")
    return await uc.products.create(ActingStudio(studio.id), c.CreateProduct("Kit"))


def _license(product: Product, platform_id: str, n: int, **terms: Any) -> License:
    return attrs.evolve(License(
        id=f"lic_{n:04d}", product_id=product.id, platform_id=platform_id,
        source=Source.GRANT, state=LicenseState.ACTIVE, verified_at=1, created_at=1,
        key_ciphertext=b"x", key_digest=f"digest-{n}", key_generation=1), **terms)


async def test_lifecycle_fields_of_licenses_and_products_are_kept(storage: Storage) -> None:
    product = await _product(storage)
    lc = _license(product, "5", 1, expires_at=500, tier="pro")
    async with storage.unit_of_work() as uow:
        assert await uow.licenses.add(lc)
        await uow.products.save(attrs.evolve(product, place_limit=7,
                                             place_policy=PlacePolicy.ENFORCE, trial_days=14,
                                             reminder_days=3))
    async with storage.unit_of_work() as uow:
        assert await uow.licenses.for_user(product.id, "5") == lc
        moved = attrs.evolve(lc, state=LicenseState.INACTIVE, transferred_to="6",
                             key_ciphertext=None, key_digest=None)
        assert await uow.licenses.replace(moved, expected=LicenseState.ACTIVE)
        assert await uow.licenses.hold(product.id, "5") == moved
        stored = await uow.products.by_id(product.id)
    assert stored is not None
    assert (stored.place_limit, stored.place_policy, stored.trial_days,
            stored.reminder_days) == (7, PlacePolicy.ENFORCE, 14, 3)


async def test_a_products_tiers_are_replaced_as_a_whole(storage: Storage) -> None:
    product = await _product(storage)
    async with storage.unit_of_work() as uow:
        await uow.products.set_tiers(product.id, [Tier(product.id, "pro", UnlockData('{"a":1}')),
                                                  Tier(product.id, "basic", UnlockData("2"))])
        assert [t.name for t in await uow.products.tiers(product.id)] == ["basic", "pro"]
        await uow.products.set_tiers(product.id, [Tier(product.id, "gold", UnlockData("null"))])
        gold = Tier(product.id, "gold", UnlockData("null"))
        assert await uow.products.tiers(product.id) == [gold]
        await uow.products.set_tiers(product.id, [])
        assert list(await uow.products.tiers(product.id)) == []


async def test_a_trial_is_taken_once_per_person_and_product(storage: Storage) -> None:
    product = await _product(storage)
    async with storage.unit_of_work() as uow:
        assert await uow.licenses.take_trial(product.id, "5", 10)
        assert not await uow.licenses.take_trial(product.id, "5", 11)
        assert await uow.licenses.take_trial(product.id, "6", 11)


async def test_places_are_listed_in_rank_order_and_reset(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await uow.records.runtime.record_place("lic_1", "g1", 10)
        await uow.records.runtime.record_place("lic_1", "g2", 20)
        await uow.records.runtime.record_place("lic_2", "g1", 30)
        places = await uow.records.runtime.places("lic_1")
        assert [(p.game_id, p.place_rank, p.first_seen_at) for p in places] == [
            ("g1", 1, 10), ("g2", 2, 20)]
        assert await uow.records.runtime.reset_places("lic_1") == 2
        assert list(await uow.records.runtime.places("lic_1")) == []
        assert await uow.records.runtime.record_place("lic_1", "g2", 40) == 1  # counts from 1 again
        assert len(await uow.records.runtime.places("lic_2")) == 1


async def test_due_notices_are_told_once_per_end_and_a_new_end_rearms(
        storage: Storage) -> None:
    product = await _product(storage)
    due = _license(product, "5", 1, expires_at=100)
    paused = _license(product, "6", 2, expires_at=90, state=LicenseState.PAUSED)
    async with storage.unit_of_work() as uow:
        for lc in (due, paused, _license(product, "7", 3, expires_at=300),
                   _license(product, "8", 4),  # never expires
                   _license(product, "9", 5, expires_at=50, state=LicenseState.INACTIVE,
                            key_digest=None, key_ciphertext=None)):
            assert await uow.licenses.add(lc)
    async with storage.unit_of_work() as uow:
        listed = await uow.licenses.due_notices(Notice.EXPIRED, 200, 10)
        assert [lc.id for lc in listed] == [paused.id, due.id]  # soonest first
        assert await uow.licenses.mark_told(due.id, Notice.EXPIRED, 100)
        assert not await uow.licenses.mark_told(due.id, Notice.EXPIRED, 100)
        assert not await uow.licenses.mark_told(paused.id, Notice.EXPIRED, 89)  # not its end
        # The reminder is a mark of its own, and past the end no reminder is due.
        assert list(await uow.licenses.due_notices(Notice.EXPIRING, 200, 10)) == []
        assert [lc.id for lc in await uow.licenses.due_notices(Notice.EXPIRED, 200, 1)] == [
            paused.id]
    async with storage.unit_of_work() as uow:
        assert [lc.id for lc in await uow.licenses.due_notices(Notice.EXPIRED, 200, 10)] == [
            paused.id]
        assert await uow.licenses.replace(attrs.evolve(due, expires_at=150),
                                          expected=LicenseState.ACTIVE)
        assert [lc.id for lc in await uow.licenses.due_notices(Notice.EXPIRED, 200, 10)] == [
            paused.id, due.id]
        assert await uow.licenses.mark_told(due.id, Notice.EXPIRED, 150)


async def test_reminders_are_due_within_the_products_window_and_rearm_with_a_new_end(
        storage: Storage) -> None:
    product = await _product(storage)
    now = 100 * DAY
    soon = _license(product, "5", 1, expires_at=now + 2 * DAY)
    paused = _license(product, "6", 2, expires_at=now + DAY, state=LicenseState.PAUSED)
    async with storage.unit_of_work() as uow:
        for lc in (soon, paused,
                   _license(product, "7", 3, expires_at=now + 4 * DAY),  # not yet
                   _license(product, "8", 4, expires_at=now),  # ended: told as expired
                   _license(product, "9", 5),  # never ends
                   _license(product, "10", 6, expires_at=now + DAY,
                            state=LicenseState.INACTIVE, key_digest=None,
                            key_ciphertext=None)):
            assert await uow.licenses.add(lc)

    async def due() -> list[str]:
        async with storage.unit_of_work() as uow:
            return [lc.id for lc in await uow.licenses.due_notices(Notice.EXPIRING, now, 10)]

    assert await due() == []  # the product sets no reminder
    async with storage.unit_of_work() as uow:
        await uow.products.save(attrs.evolve(product, reminder_days=3))
    assert await due() == [paused.id, soon.id]  # within 3 days of the end, soonest first
    async with storage.unit_of_work() as uow:
        assert await uow.licenses.mark_told(soon.id, Notice.EXPIRING, now + 2 * DAY)
        assert not await uow.licenses.mark_told(soon.id, Notice.EXPIRING, now + 2 * DAY)
        # The expiry is a mark of its own: telling the reminder does not tell the end.
        assert [lc.id for lc in await uow.licenses.due_notices(Notice.EXPIRED, now, 10)] == [
            "lic_0004"]
    assert await due() == [paused.id]
    async with storage.unit_of_work() as uow:  # a renewal moves the end: told again
        assert await uow.licenses.replace(attrs.evolve(soon, expires_at=now + 3 * DAY),
                                          expected=LicenseState.ACTIVE)
    assert await due() == [paused.id, soon.id]
    async with storage.unit_of_work() as uow:
        await uow.products.save(attrs.evolve(product, reminder_days=None))
    assert await due() == []


async def test_marking_told_is_exactly_once_across_processes(database_url: str) -> None:
    stores = [open_storage(database_url) for _ in range(4)]
    try:
        await stores[0].migrate()
        product = await _product(stores[0])
        async with stores[0].unit_of_work() as uow:
            assert await uow.licenses.add(_license(product, "5", 1, expires_at=100))

        async def mark(store: Storage) -> bool:
            async with store.unit_of_work() as uow:
                return await uow.licenses.mark_told("lic_0001", Notice.EXPIRED, 100)

        results = await asyncio.gather(*(mark(s) for s in stores for _ in range(5)))
        assert sorted(results) == [False] * 19 + [True]
    finally:
        for s in stores:
            await s.close()


async def test_the_runtime_look_up_carries_the_terms_the_tier_and_the_place_limit(
        storage: Storage) -> None:
    product = await _product(storage)
    async with storage.unit_of_work() as uow:
        await uow.products.set_tiers(product.id,
                                     [Tier(product.id, "pro", UnlockData('{"pro":true}'))])
        assert await uow.licenses.add(_license(product, "5", 1, expires_at=100, tier="pro"))
        assert await uow.licenses.add(_license(product, "6", 2))
    _, pro = await storage.runtime_read([], 0, "digest-1", "5", None)
    _, plain = await storage.runtime_read([], 0, "digest-2", "6", None)
    assert pro.license is not None and pro.license.expires_at == 100
    assert pro.tier_unlock_data == UnlockData('{"pro":true}') and plain.tier_unlock_data is None
    assert pro.place_limit == plain.place_limit == 3  # the studio's, by default
    async with storage.unit_of_work() as uow:
        await uow.products.save(attrs.evolve(product, place_limit=1,
                                             place_policy=PlacePolicy.ENFORCE))
    _, limited = await storage.runtime_read([], 0, "digest-1", "5", None)
    assert limited.place_limit == 1
    assert limited.product is not None
    assert limited.product.place_policy is PlacePolicy.ENFORCE


async def test_two_changes_of_one_held_product_both_stay(storage: Storage) -> None:
    """Publish, withdraw and the settings each read the product, change a field and save the
    whole row: the second of two at once must read what the first left (`Products.hold`),
    or its save puts back the field the first changed. The first here holds the row across
    a pause while the second starts."""
    product = await _product(storage)
    first_holds = asyncio.Event()

    async def first() -> None:
        async with storage.unit_of_work() as uow:
            held = await uow.products.hold(product.id)
            assert held is not None
            first_holds.set()
            await asyncio.sleep(0.3)
            await uow.products.save(attrs.evolve(held, placeholder="-- moved"))

    async def second() -> None:
        await first_holds.wait()
        async with storage.unit_of_work() as uow:
            held = await uow.products.hold(product.id)
            assert held is not None
            await uow.products.save(attrs.evolve(held, trial_days=9))

    await asyncio.gather(first(), second())
    async with storage.unit_of_work() as uow:
        stored = await uow.products.by_id(product.id)
    assert stored is not None
    assert (stored.placeholder, stored.trial_days) == ("-- moved", 9)
