"""The outbox's workers (docs/events.md): claim the messages that may go now under a lease
(`licore.lanes`: one per lane, in order, a studio's share bounded, breakers obeyed), send
each one, and store what came of it with its lane's breaker. At-least-once: a worker that
dies mid-send leaves its lease to run out, and another worker sends the message again with
the same id.

A failed send never touches the change it tells about: that committed long before."""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

import attrs

from licore.events import (
    Delivered,
    FanOut,
    Message,
    MessageState,
    RoleChange,
    Schedule,
    WebhookBody,
    WebhookEndpoint,
    settle,
)
from licore.lanes import Breaker, BreakerEvent, outcome
from licore.lanes import after as lanes_after
from licore.licenses import in_force
from licore.ports import ChatService, Clock, KeyVault, Randomness, WebhookSender
from licore.services.announce import Announcer
from licore.storage_ports import Storage


class _LeaseLost(Exception):
    """Another worker took the message meanwhile: roll this page back."""


DISABLE_AFTER = 5 * 86400  # an endpoint failing this long is disabled, with a notice
NOT_LINKED = "the buyer has not linked a chat account"


@attrs.frozen
class Delivery:
    storage: Storage
    clock: Clock
    random: Randomness
    vault: KeyVault
    chat: ChatService | None
    sender: WebhookSender | None
    announce: Announcer
    schedule: Schedule = attrs.field(factory=Schedule)

    def _fraction(self) -> float:
        return int.from_bytes(self.random.token_bytes(4), "big") / 2**32

    async def run_once(self, worker: str, limit: int = 20) -> int:
        """Claim one round and send it, one message after another; how many were claimed.
        For tests and embedders: the workers (`licore_cli.worker`) send concurrently."""
        batch = await self.claim(worker, limit)
        for message in batch:
            await self.deliver(message, worker)
        return len(batch)

    async def claim(self, worker: str, limit: int) -> Sequence[Message]:
        """Lease up to `limit` messages that may go now (`licore.lanes.plan`), and mark the
        lanes whose breaker's cool-down is over as half-open: their message is the probe."""
        now = self.clock.now()
        async with self.storage.unit_of_work() as uow:
            batch = await uow.outbox.claim(now, worker, now + self.schedule.lease, limit,
                                           self.schedule.studio_slots)
            if batch:
                lanes = [m.lane for m in batch]
                for lane, breaker in (await uow.outbox.breakers(lanes)).items():
                    cooled = lanes_after(breaker, BreakerEvent.COOLED, now,
                                         self.schedule.breaker)
                    if cooled != breaker:
                        await uow.outbox.save_breaker(lane, cooled)
        return batch

    async def backlog(self) -> int:
        async with self.storage.unit_of_work() as uow:
            return await uow.outbox.backlog(self.clock.now())

    async def deliver(self, message: Message, worker: str) -> None:
        """Send one claimed message and store what came of it, with its lane's breaker."""
        endpoint: WebhookEndpoint | None = None
        skipped = False
        match message.payload:
            case WebhookBody() as body:
                endpoint, result = await self._webhook(message, body)
            case RoleChange() as change:
                result = await self._chat(message, change)
                skipped = result.done and result.error == NOT_LINKED
            case FanOut() as fan:
                await self._fan_out(message, fan, worker)
                return
            case _:
                assert_never(message.payload)
        now = self.clock.now()
        settled = settle(message, result, now, self.schedule, self._fraction())
        if skipped:
            settled = attrs.evolve(settled, state=MessageState.SKIPPED)
        async with self.storage.unit_of_work() as uow:
            if not await uow.outbox.save(settled, worker):
                return  # the lease ran out and another worker has it: its outcome counts
            if not result.permanent:  # a removed or disabled endpoint says nothing of health
                policy = self.schedule.breaker
                breaker = (await uow.outbox.breakers([message.lane])).get(message.lane,
                                                                           Breaker())
                moved = lanes_after(breaker, outcome(breaker, result.done, policy), now,
                                    policy)
                if moved != breaker:
                    await uow.outbox.save_breaker(message.lane, moved)
            if endpoint is not None:
                health = _health(endpoint, result.done, now)
                if health != endpoint:
                    stored = await uow.hooks.endpoint(endpoint.id)
                    if stored is not None:
                        await uow.hooks.save_endpoint(attrs.evolve(
                            stored, failing_since=health.failing_since,
                            disabled_at=health.disabled_at,
                            disabled_reason=health.disabled_reason))

    async def _fan_out(self, message: Message, fan: FanOut, worker: str) -> None:
        """One page of holders, its messages, the next page's message and this one marked
        done, all in one transaction: a worker that dies mid-way leaves the page to be done
        again whole, and one that lost its lease writes nothing."""
        try:
            async with self.storage.unit_of_work() as uow:
                await self.announce.reach_holders(uow, message, fan)
                done = settle(message, Delivered(True), self.clock.now(), self.schedule, 0.0)
                if not await uow.outbox.save(done, worker):
                    raise _LeaseLost
        except _LeaseLost:
            pass

    async def _webhook(self, message: Message,
                       body: WebhookBody) -> tuple[WebhookEndpoint | None, Delivered]:
        async with self.storage.unit_of_work() as uow:
            endpoint = await uow.hooks.endpoint(message.target)
        if endpoint is None:
            return None, Delivered(False, error="the endpoint was removed", permanent=True)
        if endpoint.disabled_at is not None:
            return None, Delivered(False, error="the endpoint is disabled", permanent=True)
        if self.sender is None:
            return None, Delivered(False, error="this server sends no webhooks")
        now = self.clock.now()
        secrets = [self.vault.decrypt(endpoint.secret_ciphertext, endpoint.id)]
        if (endpoint.previous_ciphertext is not None and endpoint.previous_until is not None
                and endpoint.previous_until > now):
            secrets.append(self.vault.decrypt(endpoint.previous_ciphertext, endpoint.id))
        return endpoint, await self.sender.send(endpoint.url, message.id, now,
                                                body.text, secrets)

    async def _chat(self, message: Message, change: RoleChange) -> Delivered:
        """Give or take the role by how things stand now, whichever message this is: the
        holder keeps the role while the license is in force (active and not past its end)
        and the product still names it."""
        guild_id, role_id = change.guild_id, change.role_id
        async with self.storage.unit_of_work() as uow:
            license = await uow.licenses.by_id(message.subject)
            product = (await uow.products.by_id(license.product_id)
                       if license is not None else None)
            user = await uow.hooks.chat_user(change.platform_id)
            named = license is not None and any(
                (r.guild_id, r.role_id) == (guild_id, role_id)
                for r in await uow.hooks.roles_of(license.product_id))
        if user is None:
            return Delivered(True, error=NOT_LINKED)
        if self.chat is None:
            return Delivered(False, error="no chat bot is configured on this server")
        present = named and license is not None and in_force(
            license, self.clock.now(), product.grace_days if product is not None else None)
        return await self.chat.set_role(guild_id, user, role_id, present)


def _health(endpoint: WebhookEndpoint, ok: bool, now: int) -> WebhookEndpoint:
    """An endpoint after one send: failures counted from the first of a run; one success
    ends the run; failing for `DISABLE_AFTER` disables it."""
    if ok:
        return attrs.evolve(endpoint, failing_since=None)
    since = endpoint.failing_since if endpoint.failing_since is not None else now
    if now - since >= DISABLE_AFTER:
        return attrs.evolve(endpoint, failing_since=since, disabled_at=now,
                            disabled_reason="every delivery failed for 5 days")
    return attrs.evolve(endpoint, failing_since=since)
