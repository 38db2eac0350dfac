"""One owner of a license writes it once (issue 45, items 1 and 2), on every storage: each
grant shape (plain, with terms, a trial, a claim, a hub's receipt, a transfer) reaches the
storage as exactly one license write and tells the audit trail exactly one entry, of the
action docs/audit.md gives it. A grant with an end is no renewal; a receipt is no
`license.changed`; a transfer is `license.transferred`, not a revoke and a grant."""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

from licore import commands as c
from licore import events
from licore import license_commands as lc
from licore.actors import ActingPerson, ActingStudio
from licore.licenses import LicenseEvent, Source
from licore.ports import NoUser, Ownership, PlatformUser
from licore.services import audit_rules, audited
from licore.services.overlay import Overlay
from licore.services.wiring import UseCases
from licore.storage_ports import Storage, UnitOfWork
from tests.support.fakes import FakeClock, make_deps
from tests.support.scenario import World, build_world

AUDIT_DOC = Path(__file__).resolve().parents[2] / "docs" / "audit.md"
WRITES = ("add", "replace", "move")


class _CountedLicenses:
    """The storage's licenses, noting each write that went through."""

    def __init__(self, inner: Any, writes: list[str]) -> None:
        self._inner, self._writes = inner, writes

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name not in WRITES:
            return found

        async def write(*args: Any, **kwargs: Any) -> Any:
            done = await found(*args, **kwargs)
            if done:
                self._writes.append(name)
            return done

        return write


class _CountedWork:
    def __init__(self, inner: UnitOfWork, writes: list[str]) -> None:
        self._inner, self.licenses = inner, _CountedLicenses(inner.licenses, writes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@attrs.define
class Counting(Overlay):
    """The real storage, counting the license writes that reach it (under the audit
    trail's layer, so what is counted is what was stored)."""

    inner: Storage
    writes: list[str] = attrs.Factory(list)

    @asynccontextmanager
    async def unit_of_work(self) -> AsyncIterator[UnitOfWork]:
        async with self.inner.unit_of_work() as uow:
            yield _CountedWork(uow, self.writes)


@attrs.frozen
class OwnsEverything:
    async def owns_pass(self, platform_id: str, pass_id: str) -> Ownership:
        return Ownership.OWNED

    async def who(self, platform_id: str) -> PlatformUser | NoUser:
        return NoUser.UNKNOWN


@attrs.frozen
class Shop:
    uc: UseCases
    counting: Counting
    world: World
    studio: ActingStudio
    product_id: str

    async def told(self) -> list[str]:
        found = await self.uc.audit.list(self.studio, c.ListAudit(action="license"))
        return [e.action for e in found.items]


async def _shop(storage: Storage) -> Shop:
    counting = Counting(storage)
    deps = attrs.evolve(make_deps(counting, FakeClock()), platform=OwnsEverything())
    uc = UseCases.of(deps)
    world = await build_world(deps)
    studio = ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Kit", "", "", 0))
    await uc.packages.change_settings(studio, c.ChangeSettings(
        product.id, purchase_pass_id=c.NumberOrText("31337")))
    await uc.products.change(studio, c.ChangeProduct(product.id, discoverable=True))
    await uc.lifecycle.set_policy(studio, lc.SetLicensePolicy(
        product.id, trial_days=3, tiers=(lc.TierSpec("pro", c.JsonValue({"pro": 1})),)))
    return Shop(uc, counting, world, studio, product.id)


def _grant(shop: Shop, user: str, **shape: Any) -> Callable[[], Awaitable[object]]:
    command = lc.GrantLicense(c.LicenseTarget(shop.product_id, user), **shape)
    return lambda: shop.uc.lifecycle.grant(shop.studio, command)


SHAPES: dict[str, tuple[Callable[[Shop], Callable[[], Awaitable[object]]], str]] = {
    "plain": (lambda s: _grant(s, "7001"), "license.granted"),
    "with terms": (lambda s: _grant(s, "7001", terms=lc.Terms(duration_days=30),
                                    tier="pro"), "license.granted"),
    "a hub's receipt": (lambda s: _grant(s, "7001", source=Source.DEVELOPER_PRODUCT,
                                         purchase_id="receipt-1"), "license.granted"),
    "a subscription": (lambda s: _grant(s, "7001", source=Source.SUBSCRIPTION,
                                        terms=lc.Terms(expires_at=1_800_000_000 + 86400)),
                       "license.granted"),
    "a trial": (lambda s: lambda: s.uc.lifecycle.start_trial(
        s.studio, c.LicenseTarget(s.product_id, "7001")), "license.granted"),
    "a claim": (lambda s: lambda: s.uc.claims.claim(
        ActingPerson(s.world.buyer.id), c.ClaimPurchase(s.product_id)), "license.granted"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_each_grant_shape_is_one_write_and_one_entry(storage: Storage,
                                                           shape: str) -> None:
    shop = await _shop(storage)
    make, action = SHAPES[shape]
    shop.counting.writes.clear()
    await make(shop)()
    assert shop.counting.writes == ["add"]
    assert await shop.told() == [action]


async def test_a_re_grant_with_terms_is_one_write_and_one_grant(storage: Storage) -> None:
    shop = await _shop(storage)
    await _grant(shop, "7001")()
    await shop.uc.lifecycle.change(shop.studio, c.ChangeLicense(
        c.LicenseTarget(shop.product_id, "7001"), LicenseEvent.REVOKE))
    shop.counting.writes.clear()
    await _grant(shop, "7001", terms=lc.Terms(duration_days=7), tier="pro",
                 source=Source.DEVELOPER_PRODUCT, purchase_id="receipt-2")()
    assert shop.counting.writes == ["replace"]
    assert (await shop.told())[0] == "license.granted"  # newest first


async def test_a_transfer_is_one_write_and_one_transferred_entry(storage: Storage) -> None:
    shop = await _shop(storage)
    await _grant(shop, "7001", terms=lc.Terms(duration_days=30))()
    shop.counting.writes.clear()
    moved = await shop.uc.lifecycle.transfer(shop.studio, lc.TransferLicense(
        shop.product_id, "7001", "7002"))
    assert shop.counting.writes == ["move"]
    [entry, _] = (await shop.uc.audit.list(shop.studio, c.ListAudit(action="license"))).items
    assert (entry.action, entry.subject_id) == ("license.transferred", moved.old.id)
    told = {change.field: change.new for change in entry.changes}
    assert (told["transferred_to"], told["new_license_id"]) == ("7002", moved.new.id)


def test_every_action_the_trail_writes_is_in_the_audit_doc() -> None:
    """Every action named in the modules that write the trail, read from their source, is
    in docs/audit.md's table."""
    written: set[str] = set()
    for module in (audit_rules, audited):
        written |= set(re.findall(r'"((?:license|product|version|api_key|account|webhook|'
                                  r'delivery|collaborator|blacklist|studio)\.[a-z_]+)"',
                                  Path(inspect.getfile(module)).read_text()))
    assert "license.transferred" in written
    written |= {t.value for t in (events.Topic.LICENSE_GRANTED, events.Topic.LICENSE_REVOKED,
                                  events.Topic.LICENSE_PAUSED, events.Topic.LICENSE_RESUMED)}
    doc = AUDIT_DOC.read_text()
    assert sorted(a for a in written if f"`{a}`" not in doc) == []
