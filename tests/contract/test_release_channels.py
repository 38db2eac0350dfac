"""Release channels and withdrawn builds through the use cases, on every store (in memory,
SQLite, PostgreSQL): what is live, what the beta channel holds, what a runtime caller is
offered, what a buyer may list and download, and what the seller's webhooks are told."""

from __future__ import annotations

from collections.abc import AsyncIterator

import attrs
import pytest
import pytest_asyncio

from adapters_formats.codec import RobloxModelCodec
from licore import commands as c
from licore.actors import ActingPerson, ActingStudio
from licore.errors import InvalidRequest, NotFound
from licore.events import MessageKind, Topic
from licore.license_commands import TransferLicense
from licore.licenses import LicenseEvent
from licore.model import License, Product, Version
from licore.releases import Channel
from licore.services.deps import Deps
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, Receiver, make_deps
from tests.support.models import product_model
from tests.support.scenario import World, build_world

IP = "127.0.0.1"
NONCE = "n" * 16


@attrs.frozen
class Shop:
    deps: Deps
    uc: UseCases
    world: World
    product: Product
    versions: dict[str, Version]

    @property
    def studio(self) -> ActingStudio:
        return ActingStudio(self.world.studio.id)

    @property
    def buyer(self) -> ActingPerson:
        return ActingPerson(self.world.buyer.id)

    async def publish(self, label: str, channel: str = "stable") -> Product:
        done = await self.uc.packages.publish(self.studio, c.PublishVersion(
            self.product.id, self.versions[label].id, channel))
        return done.product

    async def withdraw(self, label: str) -> Product:
        done = await self.uc.packages.withdraw(self.studio, c.WithdrawVersion(
            self.product.id, self.versions[label].id))
        return done.product

    async def license(self, platform_id: str | None = None) -> License:
        async with self.deps.storage.unit_of_work() as uow:
            held = await uow.licenses.for_user(self.product.id,
                                               platform_id or self.world.buyer.platform_id)
        assert held is not None
        return held

    async def key(self) -> str:
        held = await self.license()
        assert held.key_ciphertext is not None
        return self.deps.vault.decrypt(held.key_ciphertext, held.id)

    async def latest(self, channel: str | None = None) -> str | None:
        """`latest` of /version (None: the call failed)."""
        got = await self.uc.runtime.version(c.AskVersion(
            c.NumberOrText(self.world.buyer.platform_id), self.product.id, await self.key(),
            channel=channel), IP)
        return None if got is None else got.latest

    async def updated(self, channel: str | None = None, n: int = 0) -> str | None:
        """`version` of /update (None: the call failed)."""
        got = await self.uc.runtime.update(c.Update(
            c.NumberOrText(self.world.buyer.platform_id), self.product.id, await self.key(),
            NONCE + str(n).rjust(4, "0"), channel=channel), IP)
        return None if got is None else got.version

    async def listed(self) -> list[tuple[str, str]]:
        found = await self.uc.library.versions(self.buyer,
                                               c.ListLibraryVersions(self.product.id))
        return [(v.label, v.channel.value) for v in found.page.items]

    async def told(self) -> list[str]:
        page = await self.uc.webhooks.deliveries(self.studio, MessageKind.WEBHOOK,
                                                 c.ListDeliveries())
        return [m.topic for m in reversed(page.items)]


@pytest_asyncio.fixture
async def shop(storage: Storage) -> AsyncIterator[Shop]:
    clock = FakeClock()
    deps = attrs.evolve(make_deps(storage, clock), webhooks=Receiver())
    uc = UseCases.of(deps)
    world = await build_world(deps)
    studio = ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Kit"))
    data = RobloxModelCodec().write(product_model())
    versions = {}
    for label in ("1.0", "2.0", "3.0-beta"):
        versions[label] = (await uc.packages.upload(studio, c.UploadVersion(
            product.id, label, data))).version
        clock.advance(1)
    await uc.lifecycle.change(studio, c.ChangeLicense(
        c.LicenseTarget(product.id, world.buyer.platform_id), LicenseEvent.GRANT))
    await uc.webhooks.add(studio, c.AddWebhook("https://example.com/h",
                                               tuple(t.value for t in Topic)))
    yield Shop(deps, uc, world, product, versions)


async def test_beta_is_offered_only_to_a_caller_asking_for_it_for_an_opted_in_owner(
        shop: Shop) -> None:
    await shop.publish("1.0")
    product = await shop.publish("3.0-beta", "beta")
    assert (product.current_version, product.beta_version) == ("1.0", "3.0-beta")
    # Not opted in: a caller asking for beta is answered from stable.
    assert await shop.latest() == await shop.latest("beta") == "1.0"
    assert await shop.listed() == [("1.0", "stable")]
    held = await shop.uc.library.follow(shop.buyer, c.FollowChannel(shop.product.id, "beta"))
    assert held.channel is Channel.BETA
    assert await shop.latest("beta") == "3.0-beta"
    assert await shop.updated("beta") == "3.0-beta"
    # The specification's caller, which names no channel, sees exactly what it saw.
    assert await shop.latest() == await shop.latest("stable") == "1.0"
    assert await shop.updated(n=1) == "1.0"
    assert await shop.listed() == [("1.0", "stable"), ("3.0-beta", "beta")]
    # A stable release is newer than the beta before it: beta callers get it too.
    product = await shop.publish("2.0")
    assert (product.current_version, product.beta_version) == ("2.0", None)
    assert await shop.latest("beta") == "2.0"
    assert await shop.told() == ["version.published"] * 3


async def test_withdrawing_the_live_build_puts_the_newest_stable_one_left_live(
        shop: Shop) -> None:
    await shop.publish("1.0")
    await shop.publish("2.0")
    await shop.publish("3.0-beta", "beta")
    await shop.uc.library.follow(shop.buyer, c.FollowChannel(shop.product.id, "beta"))
    product = await shop.withdraw("2.0")
    assert (product.current_version, product.beta_version) == ("1.0", "3.0-beta")
    assert await shop.latest() == "1.0"
    assert await shop.latest("beta") == "3.0-beta"
    with pytest.raises(NotFound, match="withdrawn"):
        await shop.uc.library.download(shop.buyer, c.DownloadCopy(
            shop.product.id, shop.versions["2.0"].id))
    product = await shop.withdraw("3.0-beta")
    assert product.beta_version is None
    assert await shop.latest("beta") == "1.0"
    assert await shop.listed() == [("1.0", "stable")]
    # The last stable build goes: no live version, as for a product never published.
    product = await shop.withdraw("1.0")
    assert (product.current_version_id, product.current_version) == (None, None)
    assert await shop.latest() == ""
    assert await shop.updated() is None
    with pytest.raises(NotFound, match="no live build"):
        await shop.uc.library.download(shop.buyer, c.DownloadCopy(shop.product.id))
    assert await shop.told() == ["version.published"] * 3 + ["version.withdrawn"] * 3


async def test_the_newest_stable_build_left_is_the_last_uploaded_not_the_last_live(
        shop: Shop) -> None:
    await shop.publish("2.0")
    await shop.publish("1.0")  # a roll-back: 1.0 live, 2.0 published before
    await shop.publish("3.0-beta")  # straight to stable
    product = await shop.withdraw("3.0-beta")
    assert product.current_version == "2.0"


async def test_refused_moves_change_nothing_and_a_second_withdraw_tells_nothing(
        shop: Shop) -> None:
    await shop.publish("1.0")
    await shop.withdraw("1.0")
    await shop.withdraw("1.0")
    with pytest.raises(InvalidRequest, match="withdrawn"):
        await shop.publish("1.0")
    await shop.publish("2.0")
    with pytest.raises(InvalidRequest, match="released on stable"):
        await shop.publish("2.0", "beta")
    with pytest.raises(InvalidRequest, match="never published"):
        await shop.withdraw("3.0-beta")
    async with shop.deps.storage.unit_of_work() as uow:
        product = await uow.products.by_id(shop.product.id)
        draft = await uow.versions.by_id(shop.versions["3.0-beta"].id)
    assert product is not None and product.current_version == "2.0"
    assert draft is not None and not draft.published and draft.withdrawn_at is None
    assert await shop.told() == ["version.published", "version.withdrawn",
                                 "version.published"]


async def test_a_beta_build_is_downloadable_only_while_following_beta(shop: Shop) -> None:
    await shop.publish("1.0")
    await shop.publish("3.0-beta", "beta")
    beta = c.DownloadCopy(shop.product.id, shop.versions["3.0-beta"].id)
    with pytest.raises(NotFound, match="beta"):
        await shop.uc.library.download(shop.buyer, beta)
    await shop.uc.library.follow(shop.buyer, c.FollowChannel(shop.product.id, "beta"))
    assert (await shop.uc.library.download(shop.buyer, beta)).version == "3.0-beta"
    # Without a version the download is the live build, whatever the person follows.
    assert (await shop.uc.library.download(shop.buyer, c.DownloadCopy(
        shop.product.id))).version == "1.0"
    await shop.uc.library.follow(shop.buyer, c.FollowChannel(shop.product.id, "stable"))
    with pytest.raises(NotFound):
        await shop.uc.library.download(shop.buyer, beta)


async def test_the_opt_in_survives_a_rekey_and_stays_behind_on_a_transfer(shop: Shop) -> None:
    await shop.uc.library.follow(shop.buyer, c.FollowChannel(shop.product.id, "beta"))
    target = c.LicenseTarget(shop.product.id, shop.world.buyer.platform_id)
    before = await shop.license()
    await shop.uc.lifecycle.rekey(shop.studio, target)
    after = await shop.license()
    assert after.key_generation > before.key_generation and after.channel is Channel.BETA
    await shop.uc.lifecycle.transfer(shop.studio, TransferLicense(
        shop.product.id, shop.world.buyer.platform_id, shop.world.owner.platform_id))
    taken = await shop.license(shop.world.owner.platform_id)
    assert taken.channel is Channel.STABLE


async def test_withdrawing_drops_the_withdrawn_builds_prepared_copies(shop: Shop) -> None:
    await shop.publish("1.0")
    await shop.publish("2.0")
    await shop.uc.library.download(shop.buyer, c.DownloadCopy(shop.product.id))
    held = await shop.license()
    async with shop.deps.storage.unit_of_work() as uow:
        assert await uow.copies.get(shop.versions["2.0"].id, held.id,
                                    held.key_generation) is not None
    await shop.withdraw("2.0")
    async with shop.deps.storage.unit_of_work() as uow:
        assert await uow.copies.get(shop.versions["2.0"].id, held.id,
                                    held.key_generation) is None


async def test_the_store_page_shows_stable_releases_only(shop: Shop) -> None:
    await shop.uc.products.change(shop.studio, c.ChangeProduct(id=shop.product.id,
                                                               discoverable=True))
    for label, channel in (("1.0", "stable"), ("2.0", "stable"), ("3.0-beta", "beta")):
        await shop.publish(label, channel)
    await shop.withdraw("1.0")
    shown = await shop.uc.people.store_page(shop.product.id, None)
    assert [v.label for v in shown.versions] == ["2.0"]


async def test_only_a_person_holding_the_product_may_follow_its_beta(shop: Shop) -> None:
    owner = ActingPerson(shop.world.owner.id)
    with pytest.raises(NotFound):
        await shop.uc.library.follow(owner, c.FollowChannel(shop.product.id, "beta"))
    with pytest.raises(InvalidRequest):
        c.FollowChannel(shop.product.id, "nightly")
