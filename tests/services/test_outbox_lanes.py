"""Delivery by lanes (docs/events.md, "How delivery is scheduled"), through the use cases on
every storage: one endpoint's messages reach it in the order they were made, whatever fails
and is retried, never two at once; a failing endpoint's breaker opens, lets one probe through
after its cool-down, and closes on a success, while the other endpoints carry on."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters_storage import MemoryStorage
from licore import commands as c
from licore.actors import ActingStudio
from licore.events import Delivered, MessageKind, MessageState
from licore.lanes import Breaker, BreakerState
from licore.licenses import LicenseEvent
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps
from tests.support.scenario import build_world


@attrs.define
class Receivers:
    """Stands for the sellers' servers: each send's outcome drawn from `rng` (or `down` for
    a URL that always fails); records every attempt, and sends overlapping on one URL."""

    rng: random.Random
    fail_rate: float = 0.0
    down: set[str] = attrs.field(factory=set)
    attempts: dict[str, list[str]] = attrs.field(factory=dict)
    delivered: dict[str, list[str]] = attrs.field(factory=dict)
    in_flight: dict[str, int] = attrs.field(factory=dict)
    overlaps: int = 0

    async def send(self, url: str, message_id: str, timestamp: int, body: str,
                   secrets: Sequence[str]) -> Delivered:
        self.attempts.setdefault(url, []).append(message_id)
        self.in_flight[url] = self.in_flight.get(url, 0) + 1
        self.overlaps += self.in_flight[url] > 1
        await asyncio.sleep(0)  # let the other sends of the round run meanwhile
        self.in_flight[url] -= 1
        draw = self.rng.random()
        if url in self.down or draw < self.fail_rate:
            if draw < self.fail_rate / 4:
                return Delivered(False, status=429, retry_after=self.rng.choice([0.5, 30]))
            return Delivered(False, status=503)
        self.delivered.setdefault(url, []).append(message_id)
        return Delivered(True, status=204)

    async def refusal(self, url: str) -> str | None:
        return None


async def round_of(uc: UseCases, slots: int = 16) -> int:
    """What the workers do: two of them claim at once, then every claimed send runs at
    once."""
    batches = await asyncio.gather(uc.delivery.claim("w1", slots),
                                   uc.delivery.claim("w2", slots))
    sends = [uc.delivery.deliver(m, w) for w, batch in zip(("w1", "w2"), batches, strict=True)
             for m in batch]
    await asyncio.gather(*sends)
    return len(sends)


async def scenario(storage: Storage, seed: int, endpoints: int = 3, events: int = 8) -> None:
    rng = random.Random(seed)
    clock = FakeClock()
    receivers = Receivers(rng, fail_rate=rng.choice([0.2, 0.5, 0.8]))
    deps = attrs.evolve(make_deps(storage, clock), webhooks=receivers)
    world = await build_world(deps)
    uc = UseCases.of(deps)
    studio = ActingStudio(world.studio.id)
    urls = [f"https://example.com/h{n}" for n in range(endpoints)]
    for url in urls:
        await uc.webhooks.add(studio, c.AddWebhook(url, ("license.granted",)))
    product = await uc.products.create(studio, c.CreateProduct(title="Kit"))
    for n in range(events):  # events made while deliveries fail and are retried
        await uc.lifecycle.change(studio, c.ChangeLicense(
            c.LicenseTarget(product.id, str(7000 + n)), LicenseEvent.GRANT))
        if rng.random() < 0.5:
            await round_of(uc)
        clock.advance(rng.randint(0, 20))
    for _ in range(3000):
        if not await uc.delivery.backlog() and not await pending(uc, studio):
            break
        if not await round_of(uc):
            clock.advance(rng.randint(1, 300))
    else:
        raise AssertionError("the outbox never ran dry")

    log = (await uc.webhooks.deliveries(studio, MessageKind.WEBHOOK, c.ListDeliveries())).items
    endpoint_url = {e.id: e.url for e in await uc.webhooks.list(studio)}
    made = {url: sorted(m.id for m in log if endpoint_url[m.target] == url) for url in urls}
    ended = {m.id: m.state for m in log}
    assert receivers.overlaps == 0  # never two sends at once on one endpoint
    for url in urls:
        tried = receivers.attempts.get(url, [])
        # The model: a queue per endpoint, in the order the events were made; a message is
        # tried (again and again) only once every earlier one has ended.
        assert tried == sorted(tried), f"{url} was sent a later message before an earlier"
        assert receivers.delivered.get(url, []) == [
            i for i in made[url] if ended[i] is MessageState.DELIVERED]
        assert all(ended[i] is not MessageState.PENDING for i in made[url])


async def pending(uc: UseCases, studio: ActingStudio) -> bool:
    log = await uc.webhooks.deliveries(studio, MessageKind.WEBHOOK, c.ListDeliveries())
    return any(m.state is MessageState.PENDING for m in log.items)


@pytest.mark.parametrize("seed", [1, 2])
async def test_each_endpoint_gets_its_messages_in_order_under_retries(
        storage: Storage, seed: int) -> None:
    await scenario(storage, seed)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 4), st.integers(1, 10))
def test_order_holds_whatever_fails_when(seed: int, endpoints: int, events: int) -> None:
    async def run() -> None:
        storage = MemoryStorage()
        await storage.migrate()
        await scenario(storage, seed, endpoints, events)

    asyncio.run(run())


async def test_a_failing_endpoints_breaker_opens_probes_alone_and_closes_per_endpoint(
        storage: Storage) -> None:
    clock = FakeClock()
    receivers = Receivers(random.Random(0), down={"https://down.example.com/h"})
    deps = attrs.evolve(make_deps(storage, clock), webhooks=receivers)
    world = await build_world(deps)
    uc = UseCases.of(deps)
    studio = ActingStudio(world.studio.id)
    down = await uc.webhooks.add(studio, c.AddWebhook("https://down.example.com/h",
                                                      ("license.granted",)))
    await uc.webhooks.add(studio, c.AddWebhook("https://up.example.com/h",
                                               ("license.granted",)))
    product = await uc.products.create(studio, c.CreateProduct(title="Kit"))
    lane = f"hook:{down.endpoint.id}"

    async def breaker() -> Breaker:
        async with storage.unit_of_work() as uow:
            return (await uow.outbox.breakers([lane])).get(lane, Breaker())

    async def grant(n: int) -> None:
        await uc.lifecycle.change(studio, c.ChangeLicense(
            c.LicenseTarget(product.id, str(8000 + n)), LicenseEvent.GRANT))

    policy = deps.settings.outbox.breaker
    for n in range(3):
        await grant(n)
    while True:  # each retry as it comes due
        failed_at = clock.now()
        await round_of(uc)
        if (await breaker()).state is BreakerState.OPEN:
            break
        clock.advance(policy.cool_down)
    opened = await breaker()
    assert len(receivers.attempts["https://down.example.com/h"]) == policy.trip_after
    assert opened == Breaker(BreakerState.OPEN, policy.trip_after, 1,
                             failed_at + policy.cool_down)
    assert len(receivers.delivered["https://up.example.com/h"]) == 3  # the other carried on

    # Open: nothing goes to it, not even its first message sent again by hand, while a new
    # event for the other endpoint goes at once.
    log = await uc.webhooks.deliveries(studio, MessageKind.WEBHOOK, c.ListDeliveries())
    head = min(m.id for m in log.items if m.target == down.endpoint.id)
    await grant(3)
    clock.advance(opened.open_until - clock.now() - 1)
    await uc.webhooks.resend(studio, c.WebhookTarget(head))
    await round_of(uc)
    assert len(receivers.attempts["https://down.example.com/h"]) == policy.trip_after
    assert len(receivers.delivered["https://up.example.com/h"]) == 4

    # Cool-down over: one probe, alone (the breaker half-open while it is out).
    clock.advance(1)
    (probe,) = await uc.delivery.claim("w1", 16)
    assert probe.id == head and (await breaker()).state is BreakerState.HALF_OPEN
    assert list(await uc.delivery.claim("w2", 16)) == []
    await uc.delivery.deliver(probe, "w1")
    again = await breaker()
    assert (again.state, again.opened) == (BreakerState.OPEN, 2)
    assert again.open_until == clock.now() + 2 * policy.cool_down  # twice as long

    # It answers again: the next probe closes the breaker and the lane drains in order.
    receivers.down.clear()
    clock.advance(again.open_until - clock.now())
    await uc.webhooks.resend(studio, c.WebhookTarget(head))  # its own retry may be later
    while await round_of(uc):
        pass
    assert await breaker() == Breaker()
    came = receivers.delivered["https://down.example.com/h"]
    assert came == sorted(came) and len(came) == 4 and came[0] == head
