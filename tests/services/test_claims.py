"""Purchase-pass claims through the real platform adapter, against a stand-in of the
platform on loopback, on every storage (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import attrs
import pytest
import pytest_asyncio

from adapters_platform import Retry, RobloxPlatform
from licore import commands as c
from licore.actors import ActingPerson, ActingStudio
from licore.errors import (
    AlreadyOwned,
    InvalidRequest,
    NotFound,
    PassNotOwned,
    PlatformUnavailable,
    RateLimited,
)
from licore.events import Message, MessageKind, WebhookBody
from licore.licenses import LicenseEvent, LicenseState, Source
from licore.model import Product
from licore.services.claims import ClaimResult
from licore.services.deps import Deps, Settings
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import make_deps
from tests.support.platform_standin import Platform, running_platform
from tests.support.scenario import World, build_world

PASS = "31337"


async def no_wait(seconds: float) -> None:
    """Retries happen; the waiting between them is skipped (nothing here times anything)."""


@pytest.fixture
def platform() -> Iterator[Platform]:
    with running_platform() as p:
        yield p


@attrs.frozen
class Setup:
    deps: Deps
    uc: UseCases
    world: World
    product: Product

    @property
    def buyer(self) -> ActingPerson:
        return ActingPerson(self.world.buyer.id)

    def claim(self) -> c.ClaimPurchase:
        return c.ClaimPurchase(self.product.id)

    async def seller(self, event: LicenseEvent) -> None:
        await self.uc.lifecycle.change(ActingStudio(self.world.studio.id), c.ChangeLicense(
            c.LicenseTarget(self.product.id, self.world.buyer.platform_id), event))

    async def state(self) -> LicenseState | None:
        async with self.deps.storage.unit_of_work() as uow:
            found = await uow.licenses.for_user(self.product.id, self.world.buyer.platform_id)
        return found.state if found else None


@pytest_asyncio.fixture
async def setup(storage: Storage, platform: Platform) -> AsyncIterator[Setup]:
    adapter = RobloxPlatform(inventory_url=platform.url, users_url=platform.url,
                             retry=Retry(attempts=3), sleep=no_wait)
    deps = attrs.evolve(make_deps(storage, settings=Settings(claim_rate_limit=50)),
                        platform=adapter)
    uc = UseCases.of(deps)
    world = await build_world(deps)
    studio = ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Sword"))
    await uc.products.change(studio, c.ChangeProduct(product.id, discoverable=True))
    product = (await uc.packages.change_settings(studio, c.ChangeSettings(
        product.id, purchase_pass_id=c.NumberOrText(PASS)))).product
    assert product.purchase_pass_id == PASS
    try:
        yield Setup(deps, uc, world, product)
    finally:
        await adapter.aclose()


async def test_owned_pass_grants_a_purchase_pass_license_with_a_key(
        setup: Setup, platform: Platform) -> None:
    platform.own(setup.world.buyer.platform_id, PASS)
    done = await setup.uc.claims.claim(setup.buyer, setup.claim())
    assert done.result is ClaimResult.GRANTED
    assert done.license.source is Source.PURCHASE_PASS
    assert done.license.state is LicenseState.ACTIVE
    assert done.license.key_ciphertext is not None and done.license.key_generation == 1
    # The seller sees it, with its source; the buyer's library lists it.
    page = await setup.uc.licensing.list(ActingStudio(setup.world.studio.id),
                                         c.ListLicenses(setup.product.id))
    assert [(lc.platform_id, lc.source) for lc in page.items] == [
        (setup.world.buyer.platform_id, Source.PURCHASE_PASS)]
    library = await setup.uc.library.list(setup.buyer, c.ListLibrary())
    assert [e.product.id for e in library.items] == [setup.product.id]
    # Claiming again changes nothing but the verification time; the key stays.
    again = await setup.uc.claims.claim(setup.buyer, setup.claim())
    assert again.result is ClaimResult.ALREADY_HELD
    assert again.license.key_digest == done.license.key_digest


async def test_not_owned_grants_nothing(setup: Setup) -> None:
    with pytest.raises(PassNotOwned):
        await setup.uc.claims.claim(setup.buyer, setup.claim())
    assert await setup.state() is None


async def test_platform_down_grants_nothing_and_says_so(setup: Setup,
                                                        platform: Platform) -> None:
    platform.own(setup.world.buyer.platform_id, PASS)
    platform.fail(503, -1)
    with pytest.raises(PlatformUnavailable):
        await setup.uc.claims.claim(setup.buyer, setup.claim())
    assert await setup.state() is None
    assert platform.inventory_calls() == 3


async def test_429_with_retry_after_is_retried_then_granted(setup: Setup,
                                                            platform: Platform) -> None:
    platform.own(setup.world.buyer.platform_id, PASS)
    platform.fail(429, 1, retry_after="1")
    done = await setup.uc.claims.claim(setup.buyer, setup.claim())
    assert done.result is ClaimResult.GRANTED
    assert platform.inventory_calls() == 2


async def test_a_revoked_license_is_never_restored_by_a_claim(setup: Setup,
                                                              platform: Platform) -> None:
    platform.own(setup.world.buyer.platform_id, PASS)
    first = await setup.uc.claims.claim(setup.buyer, setup.claim())
    await setup.seller(LicenseEvent.REVOKE)
    done = await setup.uc.claims.claim(setup.buyer, setup.claim())
    assert done.result is ClaimResult.REVOKED
    assert done.license.state is LicenseState.INACTIVE and done.license.key_digest is None
    assert await setup.state() is LicenseState.INACTIVE
    assert (await setup.uc.library.list(setup.buyer, c.ListLibrary())).items == ()
    # Only the seller's grant brings it back, with a new key.
    await setup.seller(LicenseEvent.GRANT)
    assert await setup.state() is LicenseState.ACTIVE
    async with setup.deps.storage.unit_of_work() as uow:
        back = await uow.licenses.by_id(first.license.id)
    assert back is not None and back.source is Source.GRANT
    assert back.key_digest != first.license.key_digest


async def test_a_revoked_grant_is_not_restored_either(setup: Setup, platform: Platform) -> None:
    await setup.seller(LicenseEvent.GRANT)
    await setup.seller(LicenseEvent.REVOKE)
    platform.own(setup.world.buyer.platform_id, PASS)
    assert (await setup.uc.claims.claim(setup.buyer, setup.claim())).result \
        is ClaimResult.REVOKED
    assert await setup.state() is LicenseState.INACTIVE


async def test_a_paused_license_stays_paused(setup: Setup, platform: Platform) -> None:
    platform.own(setup.world.buyer.platform_id, PASS)
    await setup.uc.claims.claim(setup.buyer, setup.claim())
    await setup.seller(LicenseEvent.PAUSE)
    done = await setup.uc.claims.claim(setup.buyer, setup.claim())
    assert done.result is ClaimResult.PAUSED
    assert await setup.state() is LicenseState.PAUSED


async def test_concurrent_claims_grant_once(setup: Setup, platform: Platform) -> None:
    platform.own(setup.world.buyer.platform_id, PASS)
    results = await asyncio.gather(*(setup.uc.claims.claim(setup.buyer, setup.claim())
                                     for _ in range(6)))
    granted = [r for r in results if r.result is ClaimResult.GRANTED]
    assert len(granted) == 1
    assert {r.license.id for r in results} == {granted[0].license.id}
    page = await setup.uc.licensing.list(ActingStudio(setup.world.studio.id),
                                         c.ListLicenses(setup.product.id))
    assert len(page.items) == 1
    # And a seller's grant racing nothing finds the claim's license there.
    with pytest.raises(AlreadyOwned):
        await setup.seller(LicenseEvent.GRANT)


async def test_claims_are_rate_limited_per_person(storage: Storage, platform: Platform) -> None:
    adapter = RobloxPlatform(inventory_url=platform.url, users_url=platform.url,
                             sleep=no_wait)
    deps = attrs.evolve(make_deps(storage, settings=Settings(claim_rate_limit=2)),
                        platform=adapter)
    uc = UseCases.of(deps)
    world = await build_world(deps)
    buyer = ActingPerson(world.buyer.id)
    for _ in range(2):
        with pytest.raises(NotFound):
            await uc.claims.claim(buyer, c.ClaimPurchase("prd_none"))
    with pytest.raises(RateLimited):
        await uc.claims.claim(buyer, c.ClaimPurchase("prd_none"))
    # Another person has a limit of their own.
    with pytest.raises(NotFound):
        await uc.claims.claim(ActingPerson(world.owner.id), c.ClaimPurchase("prd_none"))
    await adapter.aclose()
    assert platform.calls == []


async def test_drafts_and_products_without_a_pass_are_not_claimable(setup: Setup) -> None:
    studio = ActingStudio(setup.world.studio.id)
    await setup.uc.packages.change_settings(studio, c.ChangeSettings(
        setup.product.id, purchase_pass_id=c.NumberOrText("")))
    with pytest.raises(InvalidRequest):
        await setup.uc.claims.claim(setup.buyer, setup.claim())
    draft = await setup.uc.products.create(studio, c.CreateProduct("Draft"))
    await setup.uc.packages.change_settings(studio, c.ChangeSettings(
        draft.id, purchase_pass_id=c.NumberOrText(PASS)))
    with pytest.raises(NotFound):
        await setup.uc.claims.claim(setup.buyer, c.ClaimPurchase(draft.id))


def test_pass_ids_are_digits() -> None:
    with pytest.raises(InvalidRequest):
        c.ChangeSettings("prd_x", purchase_pass_id=c.NumberOrText("12a"))
    with pytest.raises(InvalidRequest):
        c.ChangeSettings("prd_x", purchase_pass_id=c.NumberOrText("1" * 21))


async def test_a_claim_tells_license_granted_and_queues_the_roles_with_it(
        setup: Setup, platform: Platform) -> None:
    studio = ActingStudio(setup.world.studio.id)
    await setup.uc.webhooks.set_roles(studio, c.SetChatRoles(
        setup.product.id, (c.RoleName("700", "800"),)))
    endpoint = await setup.uc.webhooks.add(studio, c.AddWebhook(
        "https://93.184.215.14/hook", ("license.granted",)))
    platform.own(setup.world.buyer.platform_id, PASS)
    done = await setup.uc.claims.claim(setup.buyer, setup.claim())
    await setup.uc.claims.claim(setup.buyer, setup.claim())  # already held: nothing new
    told = await setup.uc.webhooks.deliveries(studio, MessageKind.WEBHOOK, c.ListDeliveries())
    assert [(m.topic, m.target) for m in told.items] == [
        ("license.granted", endpoint.endpoint.id)]
    assert f'"source":"{Source.PURCHASE_PASS.value}"' in body(told.items[0])
    roles = await setup.uc.webhooks.deliveries(studio, MessageKind.CHAT_ROLE,
                                               c.ListDeliveries())
    assert [(m.topic, m.subject) for m in roles.items] == [("chat_role.add", done.license.id)]


def body(message: Message) -> str:
    """The webhook body a message carries, as it is sent."""
    assert isinstance(message.payload, WebhookBody)
    return message.payload.text
