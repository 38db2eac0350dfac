"""The outbox and its destinations in memory. The store's one lock already runs units of
work one after another, so claiming is `licore.lanes.plan` applied as written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from adapters_storage.memory.tables import Repository
from licore.events import ChatRole, Message, MessageKind, MessageState, WebhookEndpoint
from licore.lanes import STUDIO_SLOTS, Breaker, plan
from licore.licenses import LicenseState
from licore.model import License, Page


class MemoryOutbox(Repository):
    async def add(self, messages: Sequence[Message]) -> None:
        for message in messages:
            self.t.outbox[message.id] = message

    async def claim(self, now: int, worker: str, lease_until: int, limit: int,
                    per_studio: int = STUDIO_SLOTS) -> Sequence[Message]:
        chosen = plan(self.t.outbox.values(), self.t.breakers, now, limit, per_studio)
        taken = [attrs.evolve(m, claimed_by=worker, claimed_until=lease_until)
                 for m in chosen]
        for m in taken:
            self.t.outbox[m.id] = m
        return taken

    async def breakers(self, lanes: Sequence[str]) -> Mapping[str, Breaker]:
        return {lane: self.t.breakers[lane] for lane in lanes if lane in self.t.breakers}

    async def save_breaker(self, lane: str, breaker: Breaker) -> None:
        if breaker == Breaker():
            self.t.breakers.pop(lane, None)
        else:
            self.t.breakers[lane] = breaker

    async def save(self, message: Message, worker: str) -> bool:
        stored = self.t.outbox.get(message.id)
        if stored is None or stored.claimed_by != worker:
            return False
        self.t.outbox[message.id] = message
        return True

    async def by_id(self, message_id: str) -> Message | None:
        return self.t.outbox.get(message_id)

    async def of_studio(self, studio_id: str, kind: MessageKind, limit: int | None,
                        cursor: str | None) -> Page[Message]:
        mine = sorted((m for m in self.t.outbox.values()
                       if m.studio_id == studio_id and m.kind is kind
                       and (cursor is None or m.id < cursor)),
                      key=lambda m: m.id, reverse=True)
        if limit is not None and len(mine) > limit:
            return Page(tuple(mine[:limit]), mine[limit - 1].id)
        return Page(tuple(mine), None)

    async def requeue(self, message_id: str, now: int) -> bool:
        stored = self.t.outbox.get(message_id)
        if stored is None:
            return False
        self.t.outbox[message_id] = attrs.evolve(stored, state=MessageState.PENDING,
                                                 next_attempt_at=now, claimed_by=None,
                                                 claimed_until=None)
        return True

    async def backlog(self, now: int) -> int:
        return sum(1 for m in self.t.outbox.values()
                   if m.state is MessageState.PENDING and m.next_attempt_at <= now)


class MemoryHooks(Repository):
    async def add_endpoint(self, endpoint: WebhookEndpoint) -> None:
        self.t.endpoints[endpoint.id] = endpoint

    async def endpoint(self, endpoint_id: str) -> WebhookEndpoint | None:
        return self.t.endpoints.get(endpoint_id)

    async def endpoints_of(self, studio_id: str) -> Sequence[WebhookEndpoint]:
        return sorted((e for e in self.t.endpoints.values() if e.studio_id == studio_id),
                      key=lambda e: e.id)

    async def save_endpoint(self, endpoint: WebhookEndpoint) -> None:
        if endpoint.id in self.t.endpoints:
            self.t.endpoints[endpoint.id] = endpoint

    async def remove_endpoint(self, endpoint_id: str) -> bool:
        return self.t.endpoints.pop(endpoint_id, None) is not None

    async def set_roles(self, product_id: str, roles: Sequence[ChatRole]) -> None:
        self.t.chat_roles[product_id] = tuple(sorted(
            {ChatRole(product_id, r.guild_id, r.role_id) for r in roles},
            key=lambda r: (r.guild_id, r.role_id)))

    async def roles_of(self, product_id: str) -> Sequence[ChatRole]:
        return self.t.chat_roles.get(product_id, ())

    async def link_chat(self, platform_id: str, chat_user_id: str | None, now: int) -> None:
        if chat_user_id is None:
            self.t.chat_links.pop(platform_id, None)
        else:
            self.t.chat_links[platform_id] = chat_user_id

    async def linked_to(self, chat_user_id: str) -> Sequence[str]:
        return sorted(p for p, c in self.t.chat_links.items() if c == chat_user_id)[:2]

    async def chat_user(self, platform_id: str) -> str | None:
        return self.t.chat_links.get(platform_id)

    async def linked_holders(self, product_id: str, after: str | None,
                             limit: int) -> Sequence[License]:
        found = sorted((lc for lc in self.t.licenses.values()
                        if lc.product_id == product_id and lc.state is LicenseState.ACTIVE
                        and lc.platform_id in self.t.chat_links and lc.id > (after or "")),
                       key=lambda lc: lc.id)
        return found[:limit]
