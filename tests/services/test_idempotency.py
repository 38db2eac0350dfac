"""The idempotency mechanism (`licore.services.idempotency`) around a real use case, on every
storage: a keyed grant runs once and is replayed after; another request with the key is
refused; a refusal is not kept; the answer and the grant commit together or not at all;
concurrent calls with one key run once; keys are their owner's and expire after a day."""

from __future__ import annotations

import asyncio
import json

import pytest

from licore import commands as c
from licore import license_commands as lc
from licore.actors import ActingStudio
from licore.errors import AlreadyOwned, IdempotencyKeyReused
from licore.licenses import LicenseEvent, Source
from licore.model import KeptAnswer, License, Product
from licore.services.idempotency import KEEP_FOR, Outcome
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps


async def _setup(storage: Storage) -> tuple[UseCases, FakeClock, ActingStudio, Product]:
    clock = FakeClock()
    uc = UseCases.of(make_deps(storage, clock))
    await uc.operator.add_account("owner", "1001", None)
    studio = ActingStudio((await uc.operator.add_studio("Studio", "owner")).id)
    return uc, clock, studio, await uc.products.create(studio, c.CreateProduct("Kit"))


def _answer(license: License) -> KeptAnswer:
    return KeptAnswer(200, "application/json",
                      json.dumps({"id": license.id, "source": license.source.value,
                                  "purchase_id": license.purchase_id}).encode())


def _grant(uc: UseCases, studio: ActingStudio, product: Product, user: str = "42",
           key: str = "receipt-1", fingerprint: str = "f1",
           owner: str | None = None, purchase: str = "receipt-1") -> asyncio.Future[Outcome]:
    command = lc.GrantLicense(c.LicenseTarget(product.id, user),
                              source=Source.DEVELOPER_PRODUCT, purchase_id=purchase)
    return asyncio.ensure_future(uc.partner.once.run(
        owner or f"studio:{studio.studio_id}", key, fingerprint,
        lambda: uc.lifecycle.grant(studio, command), _answer))


async def _licenses(uc: UseCases, studio: ActingStudio, product: Product) -> list[License]:
    return list((await uc.licensing.list(studio, c.ListLicenses(product.id))).items)


async def test_a_keyed_grant_runs_once_and_is_replayed_after(storage: Storage) -> None:
    uc, _, studio, product = await _setup(storage)
    first = await _grant(uc, studio, product)
    again = await _grant(uc, studio, product)
    assert (first.replayed, again.replayed) == (False, True)
    assert again.answer == first.answer
    [license] = await _licenses(uc, studio, product)
    assert json.loads(first.answer.body)["id"] == license.id
    assert (license.source, license.purchase_id) == (Source.DEVELOPER_PRODUCT, "receipt-1")


async def test_the_key_with_another_request_is_refused_and_changes_nothing(
        storage: Storage) -> None:
    uc, _, studio, product = await _setup(storage)
    await _grant(uc, studio, product)
    with pytest.raises(IdempotencyKeyReused) as refused:
        await _grant(uc, studio, product, user="43", fingerprint="f2")
    assert refused.value.status == 422
    assert [lic.platform_id for lic in await _licenses(uc, studio, product)] == ["42"]


async def test_a_refusal_is_not_kept_so_a_retry_runs_again(storage: Storage) -> None:
    uc, _, studio, product = await _setup(storage)
    await uc.lifecycle.change(studio, c.ChangeLicense(c.LicenseTarget(product.id, "42"),
                                                      LicenseEvent.GRANT))
    with pytest.raises(AlreadyOwned):
        await _grant(uc, studio, product)
    await uc.lifecycle.change(studio, c.ChangeLicense(c.LicenseTarget(product.id, "42"),
                                                      LicenseEvent.REVOKE))
    granted = await _grant(uc, studio, product)  # the same key: it runs, and grants now
    assert not granted.replayed
    [license] = await _licenses(uc, studio, product)
    assert license.purchase_id == "receipt-1"


async def test_the_grant_and_its_kept_answer_commit_together_or_not_at_all(
        storage: Storage) -> None:
    """A failure after the grant's changes and before the answer is kept (here: while the
    answer is made) rolls the grant back too: no license is left without its answer."""
    uc, _, studio, product = await _setup(storage)

    def broken(license: License) -> KeptAnswer:
        raise RuntimeError("the process died here")

    command = lc.GrantLicense(c.LicenseTarget(product.id, "42"))
    with pytest.raises(RuntimeError):
        await uc.partner.once.run(f"studio:{studio.studio_id}", "k", "f1",
                                  lambda: uc.lifecycle.grant(studio, command), broken)
    assert await _licenses(uc, studio, product) == []
    assert not (await _grant(uc, studio, product, key="k")).replayed  # the key is free


async def test_concurrent_calls_with_one_key_run_once_and_answer_alike(
        storage: Storage) -> None:
    uc, _, studio, product = await _setup(storage)
    outcomes = await asyncio.gather(*(_grant(uc, studio, product) for _ in range(20)))
    assert len({o.answer for o in outcomes}) == 1
    assert sorted(o.replayed for o in outcomes) == [False] + [True] * 19
    assert len(await _licenses(uc, studio, product)) == 1


async def test_keys_are_their_owners_and_expire_after_a_day(storage: Storage) -> None:
    uc, clock, studio, product = await _setup(storage)
    await _grant(uc, studio, product, user="42")
    # Another owner's key of the same name is another key.
    other = await _grant(uc, studio, product, user="43", owner="studio:stu_other",
                         purchase="receipt-43")
    assert not other.replayed
    clock.advance(KEEP_FOR - 1)
    assert (await _grant(uc, studio, product, user="42")).replayed
    clock.advance(1)
    assert await uc.housekeeping.sweep() >= 2
    with pytest.raises(AlreadyOwned):  # the key is forgotten: the grant runs again
        await _grant(uc, studio, product, user="42")
