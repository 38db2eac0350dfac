"""A sale the seller revoked never comes back (issue 45, item 3; docs/selling.md "Refunds"), on
every storage: licore remembers each purchase a grant was for as long as its license exists,
not for an idempotency window, so a receipt replayed a day later, a game pass found again on
a join, or a second purchase answered `already_owned` never re-activates a revoked license;
the seller's own grant, or a purchase never seen, does."""

from __future__ import annotations

import asyncio
import json

import pytest

from licore import commands as c
from licore import license_commands as lc
from licore.actors import ActingStudio
from licore.errors import AlreadyOwned, InvalidRequest, LicenseRevoked
from licore.licenses import LicenseEvent, LicenseState, Source
from licore.model import KeptAnswer, License, Product
from licore.services.idempotency import KEEP_FOR
from licore.services.license_lifecycle import Granted
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps


async def _setup(storage: Storage) -> tuple[UseCases, FakeClock, ActingStudio, Product]:
    clock = FakeClock()
    uc = UseCases.of(make_deps(storage, clock))
    await uc.operator.add_account("owner", "1001", None)
    studio = ActingStudio((await uc.operator.add_studio("Studio", "owner")).id)
    return uc, clock, studio, await uc.products.create(studio, c.CreateProduct("Kit"))


def _sale(product: Product, user: str = "42", purchase_id: str | None = "receipt-1",
          source: Source = Source.DEVELOPER_PRODUCT) -> lc.GrantLicense:
    return lc.GrantLicense(c.LicenseTarget(product.id, user), source=source,
                           purchase_id=purchase_id)


def _answer(done: object) -> KeptAnswer:
    assert isinstance(done, Granted)
    return KeptAnswer(409 if done.held else 200, "application/json",
                      json.dumps({"id": done.license.id}).encode())


async def _keyed(uc: UseCases, studio: ActingStudio, command: lc.GrantLicense,
                 key: str) -> KeptAnswer:
    """The grant as the hub sends it: with `Idempotency-Key: <PurchaseId>`."""
    done = await uc.partner.once.run(f"studio:{studio.studio_id}", key, key,
                                     lambda: uc.lifecycle.grant_recorded(studio, command),
                                     _answer)
    return done.answer


async def _revoke(uc: UseCases, studio: ActingStudio, product: Product,
                  user: str = "42") -> None:
    await uc.lifecycle.change(studio, c.ChangeLicense(c.LicenseTarget(product.id, user),
                                                      LicenseEvent.REVOKE))


async def _only(uc: UseCases, studio: ActingStudio, product: Product) -> License:
    [license] = (await uc.licensing.list(studio, c.ListLicenses(product.id))).items
    return license


async def test_a_receipt_replayed_after_the_key_expired_leaves_the_revoke_alone(
        storage: Storage) -> None:
    uc, clock, studio, product = await _setup(storage)
    assert (await _keyed(uc, studio, _sale(product), "receipt-1")).status == 200
    await _revoke(uc, studio, product)
    clock.advance(KEEP_FOR + 3600)  # the platform redelivers an open receipt for days
    with pytest.raises(LicenseRevoked):
        await _keyed(uc, studio, _sale(product), "receipt-1")
    with pytest.raises(LicenseRevoked):  # and without any key, as an API user might send it
        await uc.lifecycle.grant(studio, _sale(product))
    revoked = await _only(uc, studio, product)
    assert (revoked.state, revoked.key_digest) == (LicenseState.INACTIVE, None)


async def test_a_second_purchase_answered_already_owned_is_remembered_in_a_keyed_call(
        storage: Storage) -> None:
    uc, clock, studio, product = await _setup(storage)
    await _keyed(uc, studio, _sale(product), "receipt-1")
    second = await _keyed(uc, studio, _sale(product, purchase_id="receipt-2"), "receipt-2")
    assert second.status == 409  # the buyer bought it twice: told, and the purchase kept
    await _revoke(uc, studio, product)
    clock.advance(KEEP_FOR + 1)
    with pytest.raises(LicenseRevoked):
        await _keyed(uc, studio, _sale(product, purchase_id="receipt-2"), "receipt-2")
    assert (await _only(uc, studio, product)).state is LicenseState.INACTIVE


@pytest.mark.parametrize("source", [Source.GAME_PASS, Source.SUBSCRIPTION])
async def test_a_sale_without_a_purchase_id_is_the_buyers_one_sale_of_its_source(
        storage: Storage, source: Source) -> None:
    uc, _, studio, product = await _setup(storage)
    await uc.lifecycle.grant(studio, _sale(product, purchase_id=None, source=source))
    with pytest.raises(AlreadyOwned):  # the next join finds it held
        await uc.lifecycle.grant(studio, _sale(product, purchase_id=None, source=source))
    await _revoke(uc, studio, product)
    with pytest.raises(LicenseRevoked):  # a refunded pass still owned: the join after
        await uc.lifecycle.grant(studio, _sale(product, purchase_id=None, source=source))
    assert (await _only(uc, studio, product)).state is LicenseState.INACTIVE


async def test_a_sale_met_after_a_seller_grant_is_remembered_too(storage: Storage) -> None:
    uc, _, studio, product = await _setup(storage)
    await uc.lifecycle.grant(studio, lc.GrantLicense(c.LicenseTarget(product.id, "42")))
    with pytest.raises(AlreadyOwned):
        await uc.lifecycle.grant(studio, _sale(product, purchase_id=None,
                                               source=Source.GAME_PASS))
    await _revoke(uc, studio, product)
    with pytest.raises(LicenseRevoked):
        await uc.lifecycle.grant(studio, _sale(product, purchase_id=None,
                                               source=Source.GAME_PASS))


async def test_the_sellers_own_grant_or_a_new_purchase_re_activates(storage: Storage) -> None:
    uc, _, studio, product = await _setup(storage)
    first = await uc.lifecycle.grant(studio, _sale(product))
    await _revoke(uc, studio, product)
    on_purpose = await uc.lifecycle.grant(studio, lc.GrantLicense(
        c.LicenseTarget(product.id, "42")))
    assert on_purpose.state is LicenseState.ACTIVE
    assert on_purpose.key_digest not in (None, first.key_digest)
    await _revoke(uc, studio, product)
    with pytest.raises(LicenseRevoked):  # the re-grant did not unlock the old receipt
        await uc.lifecycle.grant(studio, _sale(product))
    bought_again = await uc.lifecycle.grant(studio, _sale(product, purchase_id="receipt-9"))
    assert (bought_again.state, bought_again.purchase_id) == (LicenseState.ACTIVE,
                                                              "receipt-9")


async def test_a_recorded_purchase_for_another_user_is_refused(storage: Storage) -> None:
    uc, _, studio, product = await _setup(storage)
    await uc.lifecycle.grant(studio, _sale(product))
    with pytest.raises(InvalidRequest) as refused:
        await uc.lifecycle.grant(studio, _sale(product, user="43"))
    assert refused.value.field == "purchase_id"
    assert [lic.platform_id for lic in (await uc.licensing.list(
        studio, c.ListLicenses(product.id))).items] == ["42"]


async def test_replays_of_one_revoked_receipt_at_once_all_stay_revoked(
        storage: Storage) -> None:
    uc, clock, studio, product = await _setup(storage)
    await uc.lifecycle.grant(studio, _sale(product))
    await _revoke(uc, studio, product)
    clock.advance(KEEP_FOR + 1)
    tries = await asyncio.gather(*(_keyed(uc, studio, _sale(product), "receipt-1")
                                   for _ in range(5)), return_exceptions=True)
    assert all(isinstance(t, LicenseRevoked) for t in tries), tries
    assert (await _only(uc, studio, product)).state is LicenseState.INACTIVE
