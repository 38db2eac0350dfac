"""A holder re-keys their own license (issue 45, item 6; docs/licenses.md "Re-key"), on every
storage: a new key, the old one found no more and its copies gone, at most three a day for one
license, never for a revoked license or one the person does not hold."""

from __future__ import annotations

import pytest

from licore import commands as c
from licore import license_commands as lc
from licore.actors import ActingPerson, ActingStudio
from licore.errors import InvalidRequest, NotFound, RateLimited
from licore.licenses import DAY, LicenseEvent
from licore.services.license_lifecycle import OWN_REKEYS_A_DAY
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps
from tests.support.scenario import World, build_world


async def _setup(storage: Storage) -> tuple[UseCases, FakeClock, World, str]:
    clock = FakeClock()
    deps = make_deps(storage, clock)
    uc = UseCases.of(deps)
    world = await build_world(deps)
    product = await uc.products.create(ActingStudio(world.studio.id),
                                       c.CreateProduct("Kit", "", "", 0))
    return uc, clock, world, product.id


async def test_a_holder_gets_a_new_key_and_the_old_one_is_gone(storage: Storage) -> None:
    uc, _, world, product_id = await _setup(storage)
    studio, buyer = ActingStudio(world.studio.id), ActingPerson(world.buyer.id)
    held = await uc.lifecycle.grant(studio, lc.GrantLicense(
        c.LicenseTarget(product_id, world.buyer.platform_id)))
    done = await uc.lifecycle.rekey_own(buyer, lc.RekeyOwn(product_id))
    assert done.id == held.id and done.key_generation == held.key_generation + 1
    assert held.key_digest is not None and done.key_digest != held.key_digest
    async with storage.unit_of_work() as uow:
        assert await uow.licenses.by_key_digest(held.key_digest) is None
    [entry] = (await uc.audit.list(studio, c.ListAudit(action="license.rekeyed"))).items
    assert entry.subject_id == held.id


async def test_three_a_day_then_refused_until_the_next_day(storage: Storage) -> None:
    uc, clock, world, product_id = await _setup(storage)
    buyer = ActingPerson(world.buyer.id)
    await uc.lifecycle.grant(ActingStudio(world.studio.id), lc.GrantLicense(
        c.LicenseTarget(product_id, world.buyer.platform_id)))
    clock.t -= clock.t % DAY  # the start of a day
    for _ in range(OWN_REKEYS_A_DAY):
        await uc.lifecycle.rekey_own(buyer, lc.RekeyOwn(product_id))
    with pytest.raises(RateLimited) as limited:
        await uc.lifecycle.rekey_own(buyer, lc.RekeyOwn(product_id))
    assert limited.value.retry_after == DAY
    clock.advance(DAY)
    await uc.lifecycle.rekey_own(buyer, lc.RekeyOwn(product_id))


async def test_no_license_or_a_revoked_one_is_refused(storage: Storage) -> None:
    uc, _, world, product_id = await _setup(storage)
    buyer = ActingPerson(world.buyer.id)
    with pytest.raises(NotFound):
        await uc.lifecycle.rekey_own(buyer, lc.RekeyOwn(product_id))
    target = c.LicenseTarget(product_id, world.buyer.platform_id)
    await uc.lifecycle.grant(ActingStudio(world.studio.id), lc.GrantLicense(target))
    await uc.lifecycle.change(ActingStudio(world.studio.id),
                              c.ChangeLicense(target, LicenseEvent.REVOKE))
    with pytest.raises(InvalidRequest):
        await uc.lifecycle.rekey_own(buyer, lc.RekeyOwn(product_id))
