"""The outbox from the use cases' side (docs/events.md): messages are written with the change
or not at all, the retry schedule spans days before giving up, an endpoint failing for five
days is disabled, and the webhook sender refuses private addresses unless allowed."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters_events import ChatClient, ChatConfig, SignedSender
from licore import commands as c
from licore.actors import ActingStudio
from licore.errors import AlreadyOwned, InvalidRequest
from licore.events import (
    Delivered,
    Message,
    MessageKind,
    MessageState,
    Schedule,
    Topic,
    WebhookBody,
    next_delay,
    settle,
)
from licore.licenses import LicenseEvent
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps
from tests.support.scenario import build_world


def pending(created_at: int = 0) -> Message:
    return Message("msg_1", MessageKind.WEBHOOK, "license.granted", "std_1", "whk_1", "",
                   WebhookBody("{}"), MessageState.PENDING, 0, created_at, created_at)


# The smallest draw (0.0) waits a second a try, so following it to the end would take
# ~260,000 settles; the property below covers every draw at every age instead.
@pytest.mark.parametrize("fraction", [0.5, 0.999])
def test_retries_span_at_least_a_day_whatever_the_jitter_draws(fraction: float) -> None:
    schedule = Schedule()
    message, now = pending(), 0
    while message.state is MessageState.PENDING:
        now = message.next_attempt_at
        message = settle(message, Delivered(False, status=500), now, schedule, fraction)
    assert message.state is MessageState.DEAD
    assert now >= max(86400, schedule.give_up_after)
    assert message.attempts > 10


@given(fraction=st.floats(min_value=0.0, max_value=0.999),
       attempts=st.integers(min_value=0, max_value=10_000),
       age=st.integers(min_value=0, max_value=10 * 86400))
def test_a_failed_message_dies_exactly_when_it_is_older_than_the_give_up_age(
        fraction: float, attempts: int, age: int) -> None:
    schedule = Schedule()
    message = attrs.evolve(pending(created_at=1000), attempts=attempts)
    after = settle(message, Delivered(False, status=500), 1000 + age, schedule, fraction)
    if age >= schedule.give_up_after:
        assert after.state is MessageState.DEAD
    else:
        assert after.state is MessageState.PENDING
        assert after.next_attempt_at > 1000 + age


def test_a_429s_retry_after_is_a_floor_and_the_ceiling_is_capped() -> None:
    schedule = Schedule(base=5, cap=3600)
    assert next_delay(schedule, 0, 0.0) == 1
    assert next_delay(schedule, 0, 0.0, retry_after=7.2) == 9  # rounded up, + a second
    assert next_delay(schedule, 40, 0.999) == 3596
    done = settle(pending(), Delivered(True, status=204), 5, schedule, 0.5)
    assert (done.state, done.delivered_at, done.attempts) == (MessageState.DELIVERED, 5, 1)
    gone = settle(pending(), Delivered(False, status=404, permanent=True), 5, schedule, 0.5)
    assert gone.state is MessageState.DEAD


class Receiver:
    """Stands for the sellers' servers: answers from a script, records what it was sent."""

    def __init__(self, answers: list[bool]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, str, tuple[str, ...]]] = []

    async def send(self, url: str, message_id: str, timestamp: int, body: str,
                   secrets: Sequence[str]) -> Delivered:
        self.sent.append((url, message_id, tuple(secrets)))
        ok = self.answers.pop(0) if self.answers else True
        return Delivered(ok, status=204 if ok else 503)

    async def refusal(self, url: str) -> str | None:
        return "private" if "10.0.0" in url else None


async def test_messages_are_written_with_the_change_or_not_at_all(storage: Storage) -> None:
    clock = FakeClock()
    deps = attrs.evolve(make_deps(storage, clock), webhooks=Receiver([]))
    world = await build_world(deps)
    uc = UseCases.of(deps)
    studio = ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct(title="Kit"))
    shown = await uc.webhooks.add(studio, c.AddWebhook("https://example.com/h", TOPICS))
    await uc.webhooks.set_roles(studio, c.SetChatRoles(product.id, (c.RoleName("1", "2"),)))
    target = c.LicenseTarget(product.id, "5005")
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.GRANT))
    with pytest.raises(AlreadyOwned):  # refused: nothing is told
        await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.GRANT))
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.PAUSE))
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.PAUSE))  # no change
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.REVOKE))
    await uc.products.change(studio, c.ChangeProduct(id=product.id, title="Kit 2"))
    log = await uc.webhooks.deliveries(studio, MessageKind.WEBHOOK, c.ListDeliveries())
    assert [m.topic for m in reversed(log.items)] == [
        "license.granted", "license.paused", "license.revoked", "product.changed"]
    assert {m.target for m in log.items} == {shown.endpoint.id}
    roles = await uc.webhooks.deliveries(studio, MessageKind.CHAT_ROLE, c.ListDeliveries())
    assert [m.topic for m in reversed(roles.items)] == [
        "chat_role.add", "chat_role.remove", "chat_role.remove"]
    with pytest.raises(InvalidRequest):
        await uc.webhooks.add(studio, c.AddWebhook("https://10.0.0.1/h", TOPICS))


TOPICS = tuple(t.value for t in Topic)


async def test_an_endpoint_failing_for_five_days_is_disabled_and_rotation_signs_with_both(
        storage: Storage) -> None:
    clock = FakeClock()
    receiver = Receiver([False] * 1000)
    deps = attrs.evolve(make_deps(storage, clock), webhooks=receiver)
    world = await build_world(deps)
    uc = UseCases.of(deps)
    studio = ActingStudio(world.studio.id)
    shown = await uc.webhooks.add(studio, c.AddWebhook("https://example.com/h", TOPICS))
    rotated = await uc.webhooks.rotate(studio, c.WebhookTarget(shown.endpoint.id))
    product = await uc.products.create(studio, c.CreateProduct(title="Kit"))
    await uc.lifecycle.change(studio, c.ChangeLicense(c.LicenseTarget(product.id, "5005"),
                                                      LicenseEvent.GRANT))
    assert await uc.delivery.run_once("w") == 1
    assert receiver.sent[0][2] == (rotated.secret, shown.secret)  # both sign for a day
    for n in range(30):  # an event every 12 hours, every delivery failing
        clock.advance(12 * 3600)
        await uc.lifecycle.change(studio, c.ChangeLicense(
            c.LicenseTarget(product.id, str(6000 + n)), LicenseEvent.GRANT))
        await uc.delivery.run_once("w")
        (endpoint,) = await uc.webhooks.list(studio)
        if endpoint.disabled_at is not None:
            break
    assert endpoint.disabled_at is not None and endpoint.failing_since is not None
    assert endpoint.disabled_at - endpoint.failing_since >= 5 * 86400
    assert len(receiver.sent[-1][2]) == 1  # the old secret stopped signing after a day
    enabled = await uc.webhooks.enable(studio, c.WebhookTarget(endpoint.id))
    assert enabled.disabled_at is None


async def test_the_sender_refuses_private_addresses_unless_the_operator_allows_them() -> None:
    strict, lenient = SignedSender(), SignedSender(allow_private=True)
    for url in ("http://127.0.0.1:9/h", "http://localhost/h", "http://[::1]/h",
                "http://10.1.2.3/h", "http://192.168.0.1/h", "http://169.254.169.254/latest",
                "http://[::ffff:127.0.0.1]/h", "http://0.0.0.0/h"):
        assert await strict.refusal(url) is not None, url
        refused = await strict.send(url, "msg_1", 1_800_000_000, "{}", ["whsec_AAAA"])
        assert not refused.done and refused.status is None, url  # nothing was sent
        assert await lenient.refusal(url) is None, url
    assert await strict.refusal("ftp://example.com/h") is not None


def test_the_bot_token_and_client_secret_stay_out_of_reprs() -> None:
    config = ChatConfig(bot_token="bot-very-secret", client_secret="client-very-secret")
    shown = repr(config) + repr(ChatClient(config))
    assert "very-secret" not in shown
