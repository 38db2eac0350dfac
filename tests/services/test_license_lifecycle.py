"""The license lifecycle use cases (docs/licenses.md) with the fake clock, on every store:
expiry as the runtime sees it, the expiry sweep told exactly once, transfer, re-key, trials,
tiers sealed by /unlock, and the place policy."""

from __future__ import annotations

import asyncio
import contextlib
import json

import attrs
import pytest

from adapters_storage import open_storage
from licore import commands as c
from licore import license_commands as lc
from licore.actors import ActingPerson, ActingStudio
from licore.errors import AlreadyOwned, InvalidRequest, NotFound
from licore.events import MessageKind
from licore.licenses import LicenseEvent, LicenseState, PlacePolicy, Source
from licore.model import License, Product, Tier, UnlockData
from licore.runtime import UNRECOGNISED_PLACE
from licore.sealing import open_sealed
from licore.services.deps import Deps
from licore.services.license_lifecycle import DAY, LicenseLifecycle
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps

BUYER, OTHER = "5005", "6006"
NONCE = "n" * 16


@attrs.frozen
class Shop:
    deps: Deps
    clock: FakeClock
    uc: UseCases
    life: LicenseLifecycle
    studio: ActingStudio
    product: Product

    def key(self, license: License) -> str:
        assert license.key_ciphertext is not None
        return self.deps.vault.decrypt(license.key_ciphertext, license.id)

    async def check(self, license: License, user: str = BUYER, game: str | None = None) -> bool:
        return await self.uc.runtime.check(c.Check(
            c.NumberOrText(user), self.product.id, self.key(license),
            c.NumberOrText(game) if game else None), "127.0.0.1")

    async def told(self) -> list[str]:
        log = await self.uc.webhooks.deliveries(self.studio, MessageKind.WEBHOOK,
                                                c.ListDeliveries())
        return [m.topic for m in reversed(log.items)]

    async def stored(self, user: str) -> License | None:
        async with self.deps.storage.unit_of_work() as uow:
            return await uow.licenses.for_user(self.product.id, user)


async def _shop(storage: Storage, clock: FakeClock | None = None) -> Shop:
    clock = clock or FakeClock()
    deps = make_deps(storage, clock)
    uc = UseCases.of(deps)
    await uc.operator.add_account("owner", "1001", None)
    studio_record = await uc.operator.add_studio("Studio", "owner")
    studio = ActingStudio(studio_record.id)
    product = await uc.products.create(studio, c.CreateProduct("Kit"))
    await uc.webhooks.add(studio, c.AddWebhook("https://example.com/h", (
        "license.granted", "license.transferred", "license.expired", "license.expiring",
        "license.renewed", "license.rekeyed", "license.tier_changed", "alert.raised")))
    life = LicenseLifecycle.of(storage, clock, deps.random, deps.vault)
    await life.set_policy(studio, lc.SetLicensePolicy(product.id, reminder_days=3))
    return Shop(deps, clock, uc, life, studio, product)


def _target(shop: Shop, user: str = BUYER) -> c.LicenseTarget:
    return c.LicenseTarget(shop.product.id, user)


async def test_an_expired_license_fails_check_and_unlock_until_renewed(storage: Storage) -> None:
    shop = await _shop(storage)
    granted = await shop.life.grant(shop.studio, lc.GrantLicense(
        _target(shop), lc.Terms(duration_days=1)))
    assert granted.expires_at == shop.clock.t + DAY
    assert await shop.check(granted)
    shop.clock.advance(DAY)
    assert not await shop.check(granted)
    unlock = c.Unlock(c.NumberOrText(BUYER), shop.product.id, shop.key(granted), NONCE)
    assert await shop.uc.runtime.unlock(unlock, "127.0.0.1") is None
    stored = await shop.stored(BUYER)
    assert stored is not None and stored.state is LicenseState.ACTIVE  # expired, not revoked
    renewed = await shop.life.renew(shop.studio, lc.RenewLicense(
        _target(shop), lc.Terms(duration_days=2)))
    assert renewed.expires_at == shop.clock.t + 2 * DAY  # from now, not from the old end
    assert await shop.check(granted)  # same key: renewing is not re-keying


async def test_the_expiry_sweep_tells_once_and_a_renewal_rearms_it(storage: Storage) -> None:
    shop = await _shop(storage)
    await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop), lc.Terms(
        duration_days=5)))
    assert await shop.life.sweep_expiries() == 0
    shop.clock.advance(2 * DAY + 1)  # within the 3-day reminder
    assert await shop.life.sweep_expiries() == 1
    assert await shop.life.sweep_expiries() == 0
    shop.clock.advance(3 * DAY)
    assert await shop.life.sweep_expiries() == 1
    assert await shop.life.sweep_expiries() == 0
    assert (await shop.told())[-2:] == ["license.expiring", "license.expired"]
    await shop.life.renew(shop.studio, lc.RenewLicense(_target(shop), lc.Terms(
        duration_days=1)))
    shop.clock.advance(DAY)
    assert await shop.life.sweep_expiries() == 1  # the new end is told in its turn
    assert (await shop.told()).count("license.expired") == 2


async def test_concurrent_sweeps_in_many_processes_write_the_expiry_once(
        database_url: str) -> None:
    clock = FakeClock()
    stores = [open_storage(database_url) for _ in range(4)]
    try:
        await stores[0].migrate()
        shop = await _shop(stores[0], clock)
        for user in ("7001", "7002", "7003"):
            await shop.life.grant(shop.studio, lc.GrantLicense(
                _target(shop, user), lc.Terms(duration_days=1)))
        clock.advance(DAY)
        sweepers = [LicenseLifecycle.of(s, clock, shop.deps.random, shop.deps.vault)
                    for s in stores]
        counts = await asyncio.gather(*(s.sweep_expiries() for s in sweepers for _ in range(3)))
        assert sum(counts) == 3
        assert (await shop.told()).count("license.expired") == 3
    finally:
        for s in stores:
            await s.close()


async def test_transfer_moves_the_license_and_the_old_key_dies(storage: Storage) -> None:
    shop = await _shop(storage)
    async with storage.unit_of_work() as uow:
        await uow.products.set_tiers(shop.product.id,
                                     [Tier(shop.product.id, "pro", UnlockData("1"))])
    old = await shop.life.grant(shop.studio, lc.GrantLicense(
        _target(shop), lc.Terms(duration_days=9), tier="pro"))
    moved = await shop.life.transfer(shop.studio, lc.TransferLicense(
        shop.product.id, BUYER, OTHER))
    assert moved.old.state is LicenseState.INACTIVE and moved.old.transferred_to == OTHER
    assert moved.old.key_digest is None
    assert (moved.new.platform_id, moved.new.state) == (OTHER, LicenseState.ACTIVE)
    assert (moved.new.source, moved.new.tier, moved.new.expires_at) == (
        old.source, "pro", old.expires_at)
    assert moved.new.key_digest != old.key_digest
    assert not await shop.check(old)
    assert await shop.check(moved.new, OTHER)
    assert "license.transferred" in await shop.told()
    with pytest.raises(InvalidRequest):  # nothing left to transfer
        await shop.life.transfer(shop.studio, lc.TransferLicense(shop.product.id, BUYER,
                                                                 "8008"))
    await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop, "8008")))
    with pytest.raises(AlreadyOwned):
        await shop.life.transfer(shop.studio, lc.TransferLicense(shop.product.id, OTHER,
                                                                 "8008"))


async def test_paused_or_expired_licenses_are_not_transferred(storage: Storage) -> None:
    shop = await _shop(storage)
    await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop), lc.Terms(
        duration_days=1)))
    shop.clock.advance(DAY)
    with pytest.raises(InvalidRequest, match="expired"):
        await shop.life.transfer(shop.studio, lc.TransferLicense(shop.product.id, BUYER,
                                                                 OTHER))
    await shop.life.renew(shop.studio, lc.RenewLicense(_target(shop), lc.Terms(
        duration_days=1)))
    await shop.uc.lifecycle.change(shop.studio, c.ChangeLicense(_target(shop),
                                                                LicenseEvent.PAUSE))
    with pytest.raises(InvalidRequest, match="paused"):
        await shop.life.transfer(shop.studio, lc.TransferLicense(shop.product.id, BUYER,
                                                                 OTHER))
    assert await shop.stored(OTHER) is None


async def test_concurrent_transfers_move_a_license_once(storage: Storage) -> None:
    shop = await _shop(storage)
    await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop)))
    results = await asyncio.gather(*(shop.life.transfer(shop.studio, lc.TransferLicense(
        shop.product.id, BUYER, str(9000 + i))) for i in range(8)), return_exceptions=True)
    done = [r for r in results if not isinstance(r, BaseException)]
    assert len(done) == 1, results
    assert all(isinstance(r, InvalidRequest | NotFound) for r in results if r not in done)


async def test_concurrent_renewals_each_add_their_term(storage: Storage) -> None:
    shop = await _shop(storage)
    granted = await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop), lc.Terms(
        duration_days=1)))
    assert granted.expires_at is not None
    await asyncio.gather(*(shop.life.renew(shop.studio, lc.RenewLicense(
        _target(shop), lc.Terms(duration_days=1))) for _ in range(10)))
    stored = await shop.stored(BUYER)
    assert stored is not None and stored.expires_at == granted.expires_at + 10 * DAY


async def test_rekey_kills_the_old_key(storage: Storage) -> None:
    shop = await _shop(storage)
    old = await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop)))
    new = await shop.life.rekey(shop.studio, _target(shop))
    assert new.key_generation == old.key_generation + 1
    assert not await shop.check(old)
    assert await shop.check(new)
    assert "license.rekeyed" in await shop.told()


async def test_a_trial_is_given_once_per_person_and_product(storage: Storage) -> None:
    shop = await _shop(storage)
    with pytest.raises(InvalidRequest, match="no trial"):
        await shop.life.start_trial(shop.studio, _target(shop))
    await shop.life.set_policy(shop.studio, lc.SetLicensePolicy(shop.product.id,
                                                                trial_days=7))
    trial = await shop.life.start_trial(shop.studio, _target(shop))
    assert trial.expires_at == shop.clock.t + 7 * DAY and await shop.check(trial)
    with pytest.raises(AlreadyOwned):
        await shop.life.start_trial(shop.studio, _target(shop))
    shop.clock.advance(7 * DAY)
    assert not await shop.check(trial)
    with pytest.raises(AlreadyOwned):  # lapsed: still no second trial
        await shop.life.start_trial(shop.studio, _target(shop))
    assert trial.source is Source.TRIAL
    assert "license.granted" in await shop.told()


async def test_no_second_trial_after_a_transfer_or_a_revoke(storage: Storage) -> None:
    shop = await _shop(storage)
    await shop.life.set_policy(shop.studio, lc.SetLicensePolicy(shop.product.id,
                                                                trial_days=7))
    await shop.life.start_trial(shop.studio, _target(shop))
    moved = await shop.life.transfer(shop.studio, lc.TransferLicense(
        shop.product.id, BUYER, OTHER))
    assert moved.new.source is Source.TRIAL  # a transfer keeps the source
    for user in (BUYER, OTHER):  # the giver held one; the taker holds one
        with pytest.raises(AlreadyOwned):
            await shop.life.start_trial(shop.studio, _target(shop, user))
    await shop.uc.lifecycle.change(shop.studio, c.ChangeLicense(
        _target(shop, OTHER), LicenseEvent.REVOKE))
    with pytest.raises(AlreadyOwned):
        await shop.life.start_trial(shop.studio, _target(shop, OTHER))
    stored = await shop.stored(OTHER)
    assert stored is not None and stored.state is LicenseState.INACTIVE


async def test_a_person_takes_the_trial_of_a_listed_product_once(storage: Storage) -> None:
    shop = await _shop(storage)
    await shop.uc.operator.add_account("buyer", BUYER, None)
    async with shop.deps.storage.unit_of_work() as uow:
        account = await uow.accounts.by_platform_id(BUYER)
    assert account is not None
    person, take = ActingPerson(account.id), lc.TakeTrial(shop.product.id)
    await shop.life.set_policy(shop.studio, lc.SetLicensePolicy(shop.product.id,
                                                                trial_days=3))
    with pytest.raises(NotFound):  # a draft is not offered to anyone
        await shop.life.take_trial(person, take)
    await shop.uc.products.change(shop.studio, c.ChangeProduct(shop.product.id,
                                                               discoverable=True))
    trial = await shop.life.take_trial(person, take)
    assert (trial.platform_id, trial.source) == (BUYER, Source.TRIAL)
    assert trial.expires_at == shop.clock.t + 3 * DAY and await shop.check(trial)
    with pytest.raises(AlreadyOwned):
        await shop.life.take_trial(person, take)
    with pytest.raises(AlreadyOwned):  # the seller's door knows the same ledger
        await shop.life.start_trial(shop.studio, _target(shop))


async def test_a_reminder_comes_only_from_a_products_window(storage: Storage) -> None:
    shop = await _shop(storage)
    await shop.life.set_policy(shop.studio, lc.SetLicensePolicy(shop.product.id,
                                                                reminder_days=0))
    assert (await shop.life.policy(shop.studio, shop.product.id)).product.reminder_days is None
    await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop), lc.Terms(
        duration_days=2)))
    assert await shop.life.sweep_expiries() == 0  # no window: no reminder
    await shop.life.set_policy(shop.studio, lc.SetLicensePolicy(shop.product.id,
                                                                reminder_days=5))
    assert await shop.life.sweep_expiries() == 1  # now within 5 days of the end
    assert await shop.life.sweep_expiries() == 0
    assert (await shop.told()).count("license.expiring") == 1


async def test_unlock_seals_the_tier_data_of_the_license(storage: Storage) -> None:
    shop = await _shop(storage)
    await shop.uc.packages.change_settings(shop.studio, c.ChangeSettings(
        shop.product.id, unlock_data=c.JsonValue({"edition": "standard"})))
    await shop.life.set_policy(shop.studio, lc.SetLicensePolicy(shop.product.id, tiers=(
        lc.TierSpec("pro", c.JsonValue({"edition": "pro"})),)))
    granted = await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop)))

    with pytest.raises(InvalidRequest, match="no tier"):
        await shop.life.set_tier(shop.studio, lc.SetTier(_target(shop), "gold"))
    assert (await shop.life.set_tier(shop.studio, lc.SetTier(_target(shop), "pro"))).tier == (
        "pro")
    assert "license.tier_changed" in await shop.told()
    nonce = "m" * 16
    unlocked = await shop.uc.runtime.unlock(c.Unlock(
        c.NumberOrText(BUYER), shop.product.id, shop.key(granted), nonce), "127.0.0.1")
    assert unlocked is not None
    opened = json.loads(open_sealed(shop.key(granted), nonce, unlocked.sealed.cipher,
                                    unlocked.sealed.tag))
    assert opened["data"] == {"edition": "pro"}
    await shop.life.set_tier(shop.studio, lc.SetTier(_target(shop), None))
    nonce = "k" * 16
    unlocked = await shop.uc.runtime.unlock(c.Unlock(
        c.NumberOrText(BUYER), shop.product.id, shop.key(granted), nonce), "127.0.0.1")
    assert unlocked is not None
    opened = json.loads(open_sealed(shop.key(granted), nonce, unlocked.sealed.cipher,
                                    unlocked.sealed.tag))
    assert opened["data"] == {"edition": "standard"}


@pytest.mark.parametrize("policy", [PlacePolicy.ALERT, PlacePolicy.ENFORCE])
async def test_a_fourth_place_passes_or_fails_by_the_policy_and_alerts_either_way(
        storage: Storage, policy: PlacePolicy) -> None:
    shop = await _shop(storage)
    await shop.life.set_policy(shop.studio, lc.SetLicensePolicy(shop.product.id,
                                                                place_policy=policy))
    granted = await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop)))
    for game in ("1", "2", "3"):
        assert await shop.check(granted, game=game)
    assert await shop.check(granted, game="4") is (policy is PlacePolicy.ALERT)
    alerts = await shop.uc.licensing.alerts(shop.studio, c.ListAlerts())
    assert [a.kind for a in alerts.items] == [UNRECOGNISED_PLACE]
    places = await shop.life.places(shop.studio, _target(shop))
    assert [p.game_id for p in places] == (
        ["1", "2", "3", "4"] if policy is PlacePolicy.ALERT else ["1", "2", "3"])
    assert await shop.check(granted, game="1")  # a known place still passes
    await shop.life.reset_places(shop.studio, _target(shop))
    assert await shop.check(granted, game="4")  # counted from 1 again
    policy_now = await shop.life.set_policy(shop.studio, lc.SetLicensePolicy(
        shop.product.id, place_limit=5))
    assert policy_now.place_limit == 5 and policy_now.product.place_policy is policy


async def test_the_outbox_worker_loop_runs_the_expiry_sweep() -> None:
    from adapters_storage import MemoryStorage
    from licore_cli.worker import work_forever

    shop = await _shop(MemoryStorage())
    await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop), lc.Terms(
        duration_days=1)))
    shop.clock.advance(DAY)
    worker = asyncio.create_task(work_forever(shop.uc.delivery, 0.01,
                                              scheduled=shop.life.sweep_expiries))
    try:
        deadline = asyncio.get_running_loop().time() + 10
        while "license.expired" not in await shop.told():
            assert asyncio.get_running_loop().time() < deadline, "the sweep never ran"
            await asyncio.sleep(0.01)
    finally:
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker
    assert (await shop.told()).count("license.expired") == 1


async def test_an_expired_license_leaves_the_library_until_renewed(storage: Storage) -> None:
    shop = await _shop(storage)
    buyer = await shop.uc.operator.add_account("buyer", BUYER, None)
    person = ActingPerson(buyer.id)
    await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop), lc.Terms(
        duration_days=1)))
    listed = await shop.uc.library.list(person, c.ListLibrary())
    assert [e.product.id for e in listed.items] == [shop.product.id]
    await shop.uc.library.versions(person, c.ListLibraryVersions(shop.product.id))
    shop.clock.advance(DAY)
    assert (await shop.uc.library.list(person, c.ListLibrary())).items == ()
    with pytest.raises(NotFound):
        await shop.uc.library.versions(person, c.ListLibraryVersions(shop.product.id))
    await shop.life.renew(shop.studio, lc.RenewLicense(_target(shop), lc.Terms(
        duration_days=1)))
    assert len((await shop.uc.library.list(person, c.ListLibrary())).items) == 1


async def test_chat_roles_leave_at_expiry_and_move_with_a_transfer(storage: Storage) -> None:
    from adapters_events import ChatClient, ChatConfig
    from tests.support.standins import ChatStandIn, running

    guild, role = "700", "800"
    chat = ChatStandIn()
    with running(chat):
        clock = FakeClock()
        shop = await _shop(storage, clock)
        client = ChatClient(ChatConfig(api_url=f"{chat.url}/api", bot_token=chat.bot_token))
        uc = UseCases.of(attrs.evolve(shop.deps, chat=client))
        await uc.webhooks.set_roles(shop.studio, c.SetChatRoles(shop.product.id, (
            c.RoleName(guild, role),)))
        chat.members.update({"91", "92"})
        async with storage.unit_of_work() as uow:
            await uow.hooks.link_chat(BUYER, "91", clock.now())
            await uow.hooks.link_chat(OTHER, "92", clock.now())

        async def drain() -> None:
            for _ in range(100):
                if not await uc.delivery.run_once("w"):
                    return
            raise AssertionError("the outbox never ran dry")

        await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop), lc.Terms(
            duration_days=1)))
        await drain()
        assert chat.roles == {(guild, "91", role)}
        clock.advance(DAY)
        await shop.life.sweep_expiries()
        await drain()
        assert chat.roles == set()
        await shop.life.renew(shop.studio, lc.RenewLicense(_target(shop), lc.Terms(
            duration_days=1)))
        await drain()
        assert chat.roles == {(guild, "91", role)}
        await shop.life.transfer(shop.studio, lc.TransferLicense(shop.product.id, BUYER,
                                                                 OTHER))
        await drain()
        assert chat.roles == {(guild, "92", role)}


async def test_renewals_and_transfers_racing_from_four_processes_give_one_outcome(
        database_url: str) -> None:
    clock = FakeClock()
    stores = [open_storage(database_url) for _ in range(4)]
    try:
        await stores[0].migrate()
        shop = await _shop(stores[0], clock)
        granted = await shop.life.grant(shop.studio, lc.GrantLicense(_target(shop), lc.Terms(
            duration_days=1)))
        assert granted.expires_at is not None
        lives = [LicenseLifecycle.of(s, clock, shop.deps.random, shop.deps.vault)
                 for s in stores]
        await asyncio.gather(*(life.renew(shop.studio, lc.RenewLicense(
            _target(shop), lc.Terms(duration_days=1))) for life in lives for _ in range(25)))
        stored = await shop.stored(BUYER)
        assert stored is not None and stored.expires_at == granted.expires_at + 100 * DAY
        results = await asyncio.gather(*(life.transfer(shop.studio, lc.TransferLicense(
            shop.product.id, BUYER, str(9000 + i))) for i, life in enumerate(lives * 10)),
            return_exceptions=True)
        moved = [r for r in results if not isinstance(r, BaseException)]
        assert len(moved) == 1, results
        assert all(isinstance(r, InvalidRequest) for r in results if r not in moved), results
    finally:
        for s in stores:
            await s.close()
