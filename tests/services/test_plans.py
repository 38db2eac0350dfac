"""A product's plans (issue 45, item 5; docs/licenses.md "Plans"), on every storage: the
seller lists them in the license policy; a grant names one for its term and tier; a sale of a
plan to a buyer who holds the product extends the license by the plan's term, once per
purchase; the store page shows them."""

from __future__ import annotations

import pytest

from licore import commands as c
from licore import license_commands as lc
from licore.actors import ActingStudio
from licore.commands import JsonValue
from licore.errors import AlreadyOwned, InvalidRequest
from licore.licenses import DAY, Source
from licore.model import Product
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps

MONTHLY = lc.PlanSpec("monthly", "30 days", 30)
FOREVER = lc.PlanSpec("forever", "Pro, for good", None, "pro")


async def _setup(storage: Storage) -> tuple[UseCases, FakeClock, ActingStudio, Product]:
    clock = FakeClock()
    uc = UseCases.of(make_deps(storage, clock))
    await uc.operator.add_account("owner", "1001", None)
    studio = ActingStudio((await uc.operator.add_studio("Studio", "owner")).id)
    product = await uc.products.create(studio, c.CreateProduct("Kit"))
    await uc.lifecycle.set_policy(studio, lc.SetLicensePolicy(
        product.id, tiers=(lc.TierSpec("pro", JsonValue({"pro": True})),),
        plans=(MONTHLY, FOREVER)))
    return uc, clock, studio, product


def _sale(product: Product, plan: str, purchase: str) -> lc.GrantLicense:
    return lc.GrantLicense(c.LicenseTarget(product.id, "42"), source=Source.DEVELOPER_PRODUCT,
                           purchase_id=purchase, plan=plan)


async def test_the_policy_lists_plans_in_the_sellers_order(storage: Storage) -> None:
    uc, _, studio, product = await _setup(storage)
    policy = await uc.lifecycle.policy(studio, product.id)
    assert [(p.id, p.name, p.duration_days, p.tier) for p in policy.plans] == [
        ("monthly", "30 days", 30, None), ("forever", "Pro, for good", None, "pro")]
    with pytest.raises(InvalidRequest) as refused:
        await uc.lifecycle.set_policy(studio, lc.SetLicensePolicy(
            product.id, plans=(lc.PlanSpec("gold", "Gold", 7, "gold"),)))
    assert refused.value.field == "plans"
    assert len((await uc.lifecycle.policy(studio, product.id)).plans) == 2  # unchanged
    entries = await uc.audit.list(studio, c.ListAudit(action="product.plans_changed"))
    assert len(entries.items) == 1


async def test_a_plan_sold_again_extends_once_per_purchase(storage: Storage) -> None:
    uc, clock, studio, product = await _setup(storage)
    first = await uc.lifecycle.grant(studio, _sale(product, "monthly", "p1"))
    assert (first.expires_at, first.tier) == (clock.t + 30 * DAY, None)
    again = await uc.lifecycle.grant_recorded(studio, _sale(product, "monthly", "p2"))
    assert not again.held and again.license.expires_at == clock.t + 60 * DAY
    with pytest.raises(AlreadyOwned):  # that purchase is spent: told, nothing added
        await uc.lifecycle.grant_recorded(studio, _sale(product, "monthly", "p2"))
    [held] = (await uc.licensing.list(studio, c.ListLicenses(product.id))).items
    assert held.expires_at == clock.t + 60 * DAY
    forever = await uc.lifecycle.grant(studio, _sale(product, "forever", "p3"))
    assert (forever.expires_at, forever.tier) == (None, "pro")
    with pytest.raises(AlreadyOwned):  # for good already: a month adds nothing
        await uc.lifecycle.grant(studio, _sale(product, "monthly", "p4"))
    renewals = await uc.audit.list(studio, c.ListAudit(action="license.renewed"))
    assert len(renewals.items) == 1  # p2's; p3 moved the tier first: tier_changed


async def test_a_plan_must_be_the_products_and_alone(storage: Storage) -> None:
    uc, _, studio, product = await _setup(storage)
    with pytest.raises(InvalidRequest) as unknown:
        await uc.lifecycle.grant(studio, _sale(product, "weekly", "p1"))
    assert unknown.value.field == "plan"
    with pytest.raises(InvalidRequest) as both:
        lc.GrantLicense(c.LicenseTarget(product.id, "42"), lc.Terms(duration_days=3),
                        plan="monthly")
    assert both.value.field == "plan"


async def test_the_store_page_shows_the_plans(storage: Storage) -> None:
    uc, _, studio, product = await _setup(storage)
    await uc.products.change(studio, c.ChangeProduct(product.id, discoverable=True))
    shown = await uc.people.store_page(product.id, None)
    assert [p.name for p in shown.plans] == ["30 days", "Pro, for good"]
