"""Writing outbox messages inside the caller's unit of work (docs/events.md), so a change
and the news of it commit or roll back together. Delivery is someone else's job
(`licore.services.delivery`); nothing here talks to the outside."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import attrs

from licore import usage
from licore.events import (
    ChatRole,
    FanOut,
    Message,
    MessageKind,
    MessageState,
    RoleChange,
    Topic,
    envelope,
)
from licore.model import Alert, License, Product, Version
from licore.ports import Clock
from licore.services.ids import Ids
from licore.storage_ports import UnitOfWork


def iso(at: int | None) -> str | None:
    return None if at is None else datetime.fromtimestamp(at, UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def license_data(lc: License) -> dict[str, Any]:
    return {"license_id": lc.id, "product_id": lc.product_id, "platform_id": lc.platform_id,
            "state": lc.state.value, "source": lc.source.value}


def product_data(p: Product, changed: Sequence[str]) -> dict[str, Any]:
    """`changed` names the fields the request set (settings such as unlock data are named,
    never sent: they are the seller's own and may be private)."""
    return {"product_id": p.id, "slug": p.slug, "title": p.title,
            "discoverable": p.discoverable, "licensing_enabled": p.licensing_enabled,
            "current_version": p.current_version, "changed": sorted(changed)}


def version_data(p: Product, v: Version) -> dict[str, Any]:
    return {"product_id": p.id, "version_id": v.id, "label": v.label, "format": v.format,
            "size_bytes": v.size_bytes, "sha256": v.sha256, "channel": v.channel.value}


def withdrawn_data(before: Product, after: Product, v: Version) -> dict[str, Any]:
    """A withdrawn version, whether it was live or the beta build, and what is now."""
    return {**version_data(after, v), "was_live": before.current_version_id == v.id,
            "was_beta": before.beta_version_id == v.id,
            "current_version": after.current_version, "beta_version": after.beta_version}


def alert_data(a: Alert) -> dict[str, Any]:
    return {"alert_id": a.id, "kind": a.kind, "product_id": a.product_id,
            "license_id": a.license_id, "platform_id": a.platform_id,
            "key_owner_platform_id": a.key_owner_platform_id, "game_id": a.game_id,
            "script_name": a.script_name, "first_seen_at": iso(a.first_seen_at)}


FAN_OUT_PAGE = 500  # holders one worker transaction reaches when a product's roles change
FAN_OUT_TOPIC = "chat_roles.reach_holders"


@attrs.frozen
class Announcer:
    clock: Clock
    ids: Ids

    async def event(self, uow: UnitOfWork, studio_id: str, topic: Topic,
                    data: dict[str, Any]) -> None:
        """One webhook message per enabled endpoint of the studio that wants `topic`; a
        license's grant, claim, expiry or revocation is counted for the usage series
        (docs/api.md, "Usage") in the same unit of work."""
        now = self.clock.now()
        happened = usage.license_event(topic.value, data)
        if happened is not None:
            await uow.records.usage.count(str(data["product_id"]), usage.hour_of(now), happened)
        messages = []
        for endpoint in await uow.hooks.endpoints_of(studio_id):
            if endpoint.disabled_at is not None or topic.value not in endpoint.topics:
                continue
            messages.append(Message(
                id=self.ids.new("msg"), kind=MessageKind.WEBHOOK, topic=topic.value,
                studio_id=studio_id, target=endpoint.id, subject="",
                payload=envelope(topic, now, data), state=MessageState.PENDING, attempts=0,
                next_attempt_at=now, created_at=now))
        await uow.outbox.add(messages)

    async def chat_roles(self, uow: UnitOfWork, studio_id: str, license: License,
                         present: bool, roles: Sequence[ChatRole] | None = None) -> None:
        """One message per role the product names (or per role of `roles`). The worker gives
        or takes the role by the license's state, and whether the product still names the
        role, when it sends; so messages that overtake each other (a grant retried after a
        later revoke) still end in the state things are in."""
        now = self.clock.now()
        if roles is None:
            roles = await uow.hooks.roles_of(license.product_id)
        messages = [Message(
            id=self.ids.new("msg"), kind=MessageKind.CHAT_ROLE,
            topic="chat_role.add" if present else "chat_role.remove", studio_id=studio_id,
            target=f"{role.guild_id}/{role.role_id}", subject=license.id,
            payload=RoleChange(role.guild_id, role.role_id, license.platform_id),
            state=MessageState.PENDING, attempts=0, next_attempt_at=now, created_at=now)
            for role in roles]
        await uow.outbox.add(messages)

    async def fan_out(self, uow: UnitOfWork, studio_id: str, product_id: str,
                      added: Sequence[ChatRole], dropped: Sequence[ChatRole],
                      after: str | None = None) -> None:
        """A product's roles changed: one message, written with the change, that the workers
        expand into hand-outs (`added`) and removals (`dropped`) for its holders after the
        license id `after`, a page per transaction (`reach_holders`)."""
        now = self.clock.now()
        await uow.outbox.add([Message(
            id=self.ids.new("msg"), kind=MessageKind.FAN_OUT, topic=FAN_OUT_TOPIC,
            studio_id=studio_id, target=product_id, subject="",
            payload=FanOut(tuple((r.guild_id, r.role_id) for r in added),
                           tuple((r.guild_id, r.role_id) for r in dropped), after),
            state=MessageState.PENDING, attempts=0, next_attempt_at=now, created_at=now)])

    async def reach_holders(self, uow: UnitOfWork, message: Message, body: FanOut) -> None:
        """One page of a fan-out message, in the caller's unit of work: the hand-outs and
        removals for up to `FAN_OUT_PAGE` active holders with a linked chat account, and,
        when there may be more, the message for the next page."""
        product_id = message.target
        added = [ChatRole(product_id, g, r) for g, r in body.add]
        dropped = [ChatRole(product_id, g, r) for g, r in body.remove]
        holders = await uow.hooks.linked_holders(product_id, body.after, FAN_OUT_PAGE)
        for holder in holders:
            if added:
                await self.chat_roles(uow, message.studio_id, holder, True, added)
            if dropped:
                await self.chat_roles(uow, message.studio_id, holder, False, dropped)
        if len(holders) == FAN_OUT_PAGE:
            await self.fan_out(uow, message.studio_id, product_id, added, dropped,
                               after=holders[-1].id)
