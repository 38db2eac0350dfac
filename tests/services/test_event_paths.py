"""Every path that changes what the outside is told about writes its outbox messages in the
same unit of work (docs/events.md): licenses through the API's use case and the dashboard,
product details and settings through both, publishing through both, an alert raised at
runtime; a refused change tells nothing. And a product's chat roles changed later reach the
people who hold it already, page by page, on every storage."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import attrs
import pytest
import pytest_asyncio

from adapters_events import ChatClient, ChatConfig
from adapters_formats.codec import RobloxModelCodec
from licore import commands as c
from licore.actors import ActingStudio
from licore.errors import InvalidRequest
from licore.events import (
    Message,
    MessageKind,
    MessageState,
    Topic,
    WebhookBody,
)
from licore.licenses import LicenseEvent
from licore.model import Product
from licore.scopes import Permission
from licore.services import announce
from licore.services.dashboard import Seat
from licore.services.deps import Deps
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, Receiver, make_deps
from tests.support.models import product_model, script
from tests.support.scenario import World, build_world
from tests.support.standins import ChatStandIn, running

GUILD, ROLE, OTHER_ROLE = "700", "800", "801"
TOPICS = tuple(t.value for t in Topic)


@attrs.frozen
class Setup:
    deps: Deps
    uc: UseCases
    world: World
    product: Product
    clock: FakeClock

    @property
    def studio(self) -> ActingStudio:
        return ActingStudio(self.world.studio.id)

    async def seat(self) -> Seat:
        return await self.uc.dashboard.take_seat(self.world.owner.id, self.world.studio.id)

    async def told(self) -> list[str]:
        """The webhook events written so far, oldest first."""
        page = await self.uc.webhooks.deliveries(self.studio, MessageKind.WEBHOOK,
                                                 c.ListDeliveries())
        return [m.topic for m in reversed(page.items)]

    async def hand_outs(self) -> list[Message]:
        page = await self.uc.webhooks.deliveries(self.studio, MessageKind.CHAT_ROLE,
                                                 c.ListDeliveries())
        return list(reversed(page.items))

    async def link(self, platform_id: str, chat_user: str) -> None:
        async with self.deps.storage.unit_of_work() as uow:
            await uow.hooks.link_chat(platform_id, chat_user, self.clock.now())

    async def reach_holders(self) -> None:
        """Let the workers expand the role change, page by page. The hand-outs they queue
        fail here (no chat service is configured) and wait for a later retry."""
        for _ in range(100):
            if not await self.uc.delivery.run_once("w"):
                return
        raise AssertionError("the outbox never ran dry")

    async def grant(self, user: str, event: LicenseEvent = LicenseEvent.GRANT) -> None:
        await self.uc.lifecycle.change(self.studio, c.ChangeLicense(
            c.LicenseTarget(self.product.id, user), event))


@pytest_asyncio.fixture
async def setup(storage: Storage) -> AsyncIterator[Setup]:
    clock = FakeClock()
    deps = attrs.evolve(make_deps(storage, clock), webhooks=Receiver())
    uc = UseCases.of(deps)
    world = await build_world(deps)
    studio = ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct(title="Kit"))
    await uc.webhooks.add(studio, c.AddWebhook("https://example.com/h", TOPICS))
    yield Setup(deps, uc, world, product, clock)


async def test_license_changes_through_the_api_tell_each_event(setup: Setup) -> None:
    for event in (LicenseEvent.GRANT, LicenseEvent.PAUSE, LicenseEvent.RESUME,
                  LicenseEvent.REVOKE):
        await setup.grant("5005", event)
    assert await setup.told() == ["license.granted", "license.paused", "license.resumed",
                                  "license.revoked"]


async def test_license_changes_on_the_dashboard_tell_each_event_and_queue_roles(
        setup: Setup) -> None:
    await setup.uc.webhooks.set_roles(setup.studio, c.SetChatRoles(
        setup.product.id, (c.RoleName(GUILD, ROLE),)))
    seat = await setup.seat()
    target = c.LicenseTarget(setup.product.id, "5005")
    for event in (LicenseEvent.GRANT, LicenseEvent.PAUSE, LicenseEvent.RESUME,
                  LicenseEvent.REVOKE):
        await setup.uc.dashboard.change_license(seat, c.ChangeLicense(target, event))
    assert await setup.told() == ["license.granted", "license.paused", "license.resumed",
                                  "license.revoked"]
    assert [m.topic for m in await setup.hand_outs()] == [
        "chat_role.add", "chat_role.remove", "chat_role.add", "chat_role.remove"]


async def test_settings_tell_product_changed_through_the_api_and_the_dashboard(
        setup: Setup) -> None:
    await setup.uc.packages.change_settings(setup.studio, c.ChangeSettings(
        setup.product.id, unlock_data=c.JsonValue({"damage": 40})))
    await setup.uc.dashboard.change_settings(await setup.seat(), c.ChangeSettings(
        setup.product.id, placeholder="MY_LICENSE_KEY", verify_scripts=True))
    assert await setup.told() == ["product.changed", "product.changed"]
    page = await setup.uc.webhooks.deliveries(setup.studio, MessageKind.WEBHOOK,
                                              c.ListDeliveries())
    newest, oldest = page.items
    assert '"changed":["unlock_data"]' in body(oldest)
    assert '"changed":["placeholder","verify_scripts"]' in body(newest)
    assert "damage" not in body(oldest)  # the seller's unlock data is named, never sent


async def test_a_refused_settings_change_tells_nothing(setup: Setup) -> None:
    model = product_model()
    model.roots[0].children.append(script("Broken", "local x = 1\nlocal = = 2\n"))
    # A script that does not parse is published only as written, and leaving scripts
    # unprotected is the seller's explicit choice (rules {}); the default protects them.
    await setup.uc.packages.change_settings(setup.studio, c.ChangeSettings(
        setup.product.id, protection=c.JsonValue({})))
    version = (await setup.uc.packages.upload(setup.studio, c.UploadVersion(
        setup.product.id, "1", RobloxModelCodec().write(model)))).version
    await setup.uc.packages.publish(setup.studio, c.PublishVersion(setup.product.id,
                                                                   version.id))
    before = await setup.told()
    # Minifying a script that does not parse cannot apply to the live build: refused whole.
    with pytest.raises(InvalidRequest, match="Broken"):
        await setup.uc.packages.change_settings(setup.studio, c.ChangeSettings(
            setup.product.id, protection=c.JsonValue(
                {"rules": [{"paths": ["*"], "preset": "minify"}]})))
    assert await setup.told() == before == ["product.changed", "version.published"]


async def test_product_details_on_the_dashboard_tell_product_changed(setup: Setup) -> None:
    await setup.uc.dashboard.change_product(await setup.seat(), c.ChangeProduct(
        id=setup.product.id, title="Kit 2", discoverable=True))
    assert await setup.told() == ["product.changed"]


async def test_publishing_tells_version_published_through_the_api_and_the_dashboard(
        setup: Setup) -> None:
    data = RobloxModelCodec().write(product_model())
    first = (await setup.uc.packages.upload(setup.studio, c.UploadVersion(
        setup.product.id, "1", data))).version
    await setup.uc.packages.publish(setup.studio, c.PublishVersion(setup.product.id,
                                                                   first.id))
    seat = await setup.seat()
    second = (await setup.uc.dashboard.upload_version(seat, c.UploadVersion(
        setup.product.id, "2", data))).version
    await setup.uc.dashboard.publish(seat, c.PublishVersion(setup.product.id, second.id))
    assert await setup.told() == ["version.published", "version.published"]


async def test_a_leaked_key_tells_alert_raised_once(setup: Setup) -> None:
    await setup.grant("5005")
    async with setup.deps.storage.unit_of_work() as uow:
        license = await uow.licenses.for_user(setup.product.id, "5005")
    assert license is not None and license.key_ciphertext is not None
    key = setup.deps.vault.decrypt(license.key_ciphertext, license.id)
    leaked = c.Check(c.NumberOrText("6006"), setup.product.id, key)
    assert not await setup.uc.runtime.check(leaked, "203.0.113.9")
    assert not await setup.uc.runtime.check(leaked, "203.0.113.9")  # a repeat: counted only
    assert await setup.told() == ["license.granted", "alert.raised"]


# Role changes reach the people who hold the product already -------------------------------

async def test_adding_a_role_queues_it_for_each_active_linked_holder(setup: Setup) -> None:
    for user in ("5001", "5002", "5003"):
        await setup.grant(user)
    await setup.grant("5003", LicenseEvent.PAUSE)  # not active: earns nothing now
    await setup.link("5001", "91")
    await setup.link("5003", "93")  # "5002" linked no chat account: nobody to hand it to
    seat = await setup.seat()
    await setup.uc.dashboard.add_chat_role(seat, setup.product.id, c.RoleName(GUILD, ROLE))
    await setup.reach_holders()
    added = await setup.hand_outs()
    assert [(m.topic, m.target, m.subject) for m in added] == [
        ("chat_role.add", f"{GUILD}/{ROLE}", await license_id(setup, "5001"))]

    await setup.uc.dashboard.remove_chat_role(seat, setup.product.id, c.RoleName(GUILD, ROLE))
    await setup.reach_holders()
    removed = (await setup.hand_outs())[len(added):]
    assert [(m.topic, m.target, m.subject) for m in removed] == [
        ("chat_role.remove", f"{GUILD}/{ROLE}", await license_id(setup, "5001"))]
    assert (await setup.uc.dashboard.product_detail(seat, setup.product.id)).chat_roles == ()


async def test_a_role_change_reaches_every_holder_page_by_page(
        setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(announce, "FAN_OUT_PAGE", 2)  # five holders: three pages
    users = [str(6000 + n) for n in range(5)]
    for n, user in enumerate(users):
        await setup.grant(user)
        await setup.link(user, str(900 + n))
    await setup.reach_holders()  # the grants' webhooks are sent: the outbox is empty
    await setup.uc.webhooks.set_roles(setup.studio, c.SetChatRoles(
        setup.product.id, (c.RoleName(GUILD, ROLE), c.RoleName(GUILD, OTHER_ROLE))))
    # Written with the change: one message for the workers to expand, no hand-out yet.
    assert await setup.uc.delivery.backlog() == 1 and await setup.hand_outs() == []
    await setup.reach_holders()
    # Dropping one role and keeping the other queues only the dropped one's removals.
    await setup.uc.webhooks.set_roles(setup.studio, c.SetChatRoles(
        setup.product.id, (c.RoleName(GUILD, ROLE),)))
    await setup.reach_holders()
    messages = await setup.hand_outs()
    adds = {(m.target, m.subject) for m in messages if m.topic == "chat_role.add"}
    removes = {(m.target, m.subject) for m in messages if m.topic == "chat_role.remove"}
    ids = {await license_id(setup, u) for u in users}
    assert adds == {(f"{GUILD}/{r}", i) for r in (ROLE, OTHER_ROLE) for i in ids}
    assert removes == {(f"{GUILD}/{OTHER_ROLE}", i) for i in ids}
    assert len(messages) == len(adds) + len(removes)  # each once
    # The hand-outs wait (no chat service here), those behind each role's first in line.
    held = await setup.uc.delivery.backlog()
    await setup.uc.webhooks.set_roles(setup.studio, c.SetChatRoles(
        setup.product.id, (c.RoleName(GUILD, ROLE),)))  # sent again unchanged
    assert await setup.uc.delivery.backlog() == held  # queues nothing
    assert len(await setup.hand_outs()) == len(messages)


async def test_a_worker_dying_mid_page_leaves_the_page_to_another_whole(
        setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(announce, "FAN_OUT_PAGE", 2)
    users = [str(6100 + n) for n in range(3)]
    for n, user in enumerate(users):
        await setup.grant(user)
        await setup.link(user, str(910 + n))
    await setup.reach_holders()
    await setup.uc.webhooks.set_roles(setup.studio, c.SetChatRoles(
        setup.product.id, (c.RoleName(GUILD, ROLE),)))
    now = setup.clock.now()
    async with setup.deps.storage.unit_of_work() as uow:  # a worker claims it, then dies
        (taken,) = await uow.outbox.claim(now, "dead", now + 60, 20)
    assert taken.kind is MessageKind.FAN_OUT
    await setup.reach_holders()
    assert await setup.hand_outs() == []  # leased: nobody else touches it meanwhile
    setup.clock.advance(61)
    await setup.reach_holders()
    reached = [m.subject for m in await setup.hand_outs()]
    assert sorted(reached) == sorted([await license_id(setup, u) for u in users])  # each once


async def test_a_role_change_by_someone_without_the_permission_writes_nothing(
        setup: Setup) -> None:
    await setup.grant("5001")
    await setup.link("5001", "91")
    seat = attrs.evolve(await setup.seat(), permissions=frozenset({Permission.MANAGE_LICENSES}))
    with pytest.raises(Exception, match="manage products"):
        await setup.uc.dashboard.add_chat_role(seat, setup.product.id, c.RoleName(GUILD, ROLE))
    assert await setup.hand_outs() == []


async def license_id(setup: Setup, user: str) -> str:
    async with setup.deps.storage.unit_of_work() as uow:
        found = await uow.licenses.for_user(setup.product.id, user)
    assert found is not None
    return found.id


@pytest.fixture
def chat() -> Iterator[ChatStandIn]:
    stand_in = ChatStandIn()
    with running(stand_in):
        yield stand_in


async def test_a_removed_role_is_taken_from_a_holder_whose_license_stays_active(
        storage: Storage, chat: ChatStandIn) -> None:
    clock = FakeClock()
    client = ChatClient(ChatConfig(api_url=f"{chat.url}/api", bot_token=chat.bot_token))
    deps = attrs.evolve(make_deps(storage, clock), chat=client)
    uc = UseCases.of(deps)
    world = await build_world(deps)
    studio = ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct(title="Kit"))
    chat.members.add("91")
    async with storage.unit_of_work() as uow:
        await uow.hooks.link_chat("5001", "91", clock.now())
    await uc.lifecycle.change(studio, c.ChangeLicense(c.LicenseTarget(product.id, "5001"),
                                                      LicenseEvent.GRANT))
    await uc.webhooks.set_roles(studio, c.SetChatRoles(product.id, (c.RoleName(GUILD, ROLE),)))
    await drain(uc)
    assert chat.roles == {(GUILD, "91", ROLE)}
    await uc.webhooks.set_roles(studio, c.SetChatRoles(product.id, ()))
    await drain(uc)
    assert chat.roles == set()
    page = await uc.webhooks.deliveries(studio, MessageKind.CHAT_ROLE, c.ListDeliveries())
    assert {m.state for m in page.items} == {MessageState.DELIVERED}


async def drain(uc: UseCases) -> None:
    for _ in range(100):
        if not await uc.delivery.run_once("w"):
            return
    raise AssertionError("the outbox never ran dry")


def body(message: Message) -> str:
    """The webhook body a message carries, as it is sent."""
    assert isinstance(message.payload, WebhookBody)
    return message.payload.text
