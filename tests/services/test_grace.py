"""A product's grace (issue 45, item 5; docs/licenses.md "Grace"), on every storage: a license
past its end but within the grace still answers the runtime check, lets its holder download,
is listed `in_grace`, and is told as such (`license.expiring` with `in_grace: true` when the
grace starts, `license.expired` once it ends); without grace nothing changes."""

from __future__ import annotations

import json
from typing import Any

from licore import commands as c
from licore import license_commands as lc
from licore.events import MessageKind, WebhookBody
from licore.licenses import DAY
from licore.services.dashboard import shown_status
from licore.storage_ports import Storage
from tests.services.test_license_lifecycle import BUYER, Shop, _shop, _target


async def _told(shop: Shop) -> list[dict[str, Any]]:
    log = await shop.uc.webhooks.deliveries(shop.studio, MessageKind.WEBHOOK,
                                            c.ListDeliveries())
    out = []
    for m in reversed(log.items):
        assert isinstance(m.payload, WebhookBody)
        out.append(json.loads(m.payload.text))
    return out


async def _graced(storage: Storage, days: int) -> Shop:
    shop = await _shop(storage)
    policy = await shop.life.set_policy(shop.studio, lc.SetLicensePolicy(
        shop.product.id, grace_days=days))
    assert policy.product.grace_days == (days or None)
    return shop


async def test_a_license_in_grace_still_answers_and_is_told_so(storage: Storage) -> None:
    shop = await _graced(storage, 3)
    granted = await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop), lc.Terms(
        duration_days=1)))
    assert granted.expires_at is not None
    shop.clock.advance(DAY + 60)  # past the end, within the grace
    assert await shop.check(granted)
    product = await shop.uc.products.list(shop.studio, c.ListProducts())
    stored = await shop.stored(BUYER)
    assert stored is not None
    assert shown_status(stored, shop.clock.t, product.items[0]) == "in grace"
    assert await shop.life.sweep_expiries() == 1
    assert await shop.life.sweep_expiries() == 0  # once per end
    [*_, started] = await _told(shop)
    assert started["type"] == "license.expiring"
    assert started["data"]["in_grace"] is True
    assert started["data"]["status"] == "active"
    assert started["data"]["grace_ends_at"] is not None
    shop.clock.advance(3 * DAY)  # the grace is over
    assert not await shop.check(granted)
    assert await shop.life.sweep_expiries() == 1
    [*_, ended] = await _told(shop)
    assert (ended["type"], ended["data"]["in_grace"], ended["data"]["status"]) == (
        "license.expired", False, "expired")


async def test_without_grace_the_end_is_the_end(storage: Storage) -> None:
    shop = await _graced(storage, 0)
    granted = await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop), lc.Terms(
        duration_days=1)))
    shop.clock.advance(DAY + 60)
    assert not await shop.check(granted)
    assert await shop.life.sweep_expiries() == 1
    [*_, ended] = await _told(shop)
    assert (ended["type"], ended["data"]["in_grace"]) == ("license.expired", False)


async def test_the_library_keeps_a_license_in_grace(storage: Storage) -> None:
    shop = await _graced(storage, 2)
    await shop.uc.operator.add_account("buyer", BUYER, None)
    await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop), lc.Terms(
        duration_days=1)))
    async with shop.deps.storage.unit_of_work() as uow:
        listed = await uow.licenses.library_of(BUYER, None, None, shop.clock.t + DAY + 60)
        gone = await uow.licenses.library_of(BUYER, None, None, shop.clock.t + 3 * DAY + 1)
    assert [e.product.id for e in listed.items] == [shop.product.id]
    assert list(gone.items) == []
