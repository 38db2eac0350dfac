"""Sellers' webhook endpoints, the chat roles their products earn, and the logs of both
(docs/events.md). Secrets are shown once, at creation and at rotation, and kept encrypted."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import attrs

from licore.actors import ActingStudio
from licore.commands import (
    AddWebhook,
    ListDeliveries,
    RoleName,
    SetChatRoles,
    WebhookTarget,
)
from licore.errors import InvalidRequest, NotFound
from licore.events import ChatRole, Message, MessageKind, WebhookEndpoint
from licore.model import Page
from licore.ports import Clock, KeyVault, Randomness, WebhookSender
from licore.services.announce import Announcer
from licore.services.ids import Ids
from licore.services.products import own_product
from licore.storage_ports import Storage, UnitOfWork

ROTATION_OVERLAP = 86400  # the old secret still signs for a day after a rotation
MAX_ENDPOINTS = 20  # a studio's endpoints; each event is one message per endpoint
MAX_ROLES = 25  # a product's chat roles (as `SetChatRoles` allows)


@attrs.frozen
class Shown:
    """An endpoint with its secret in plain text, answered once."""

    endpoint: WebhookEndpoint
    secret: str


@attrs.frozen
class Webhooks:
    storage: Storage
    clock: Clock
    ids: Ids
    random: Randomness
    vault: KeyVault
    sender: WebhookSender | None
    announce: Announcer

    def _secret(self) -> str:
        return "whsec_" + base64.b64encode(self.random.token_bytes(24)).decode()

    async def _own(self, uow: UnitOfWork, studio: ActingStudio,
                   endpoint_id: str) -> WebhookEndpoint:
        found = await uow.hooks.endpoint(endpoint_id)
        if found is None or found.studio_id != studio.studio_id:
            raise NotFound("no such webhook endpoint")
        return found

    async def add(self, studio: ActingStudio, command: AddWebhook) -> Shown:
        if self.sender is not None:
            refused = await self.sender.refusal(command.url)
            if refused is not None:
                raise InvalidRequest(refused, "url")
        secret = self._secret()
        now = self.clock.now()
        endpoint_id = self.ids.new("whk")
        endpoint = WebhookEndpoint(
            id=endpoint_id, studio_id=studio.studio_id, url=command.url,
            topics=command.events, secret_ciphertext=self.vault.encrypt(secret, endpoint_id),
            created_at=now)
        async with self.storage.unit_of_work() as uow:
            if len(await uow.hooks.endpoints_of(studio.studio_id)) >= MAX_ENDPOINTS:
                raise InvalidRequest(f"a studio has at most {MAX_ENDPOINTS} webhook "
                                     "endpoints", "url")
            await uow.hooks.add_endpoint(endpoint)
        return Shown(endpoint, secret)

    async def list(self, studio: ActingStudio) -> Sequence[WebhookEndpoint]:
        async with self.storage.unit_of_work() as uow:
            return await uow.hooks.endpoints_of(studio.studio_id)

    async def remove(self, studio: ActingStudio, target: WebhookTarget) -> None:
        async with self.storage.unit_of_work() as uow:
            await self._own(uow, studio, target.id)
            await uow.hooks.remove_endpoint(target.id)

    async def rotate(self, studio: ActingStudio, target: WebhookTarget) -> Shown:
        """A new secret; messages are signed with both for a day so receivers can switch."""
        secret = self._secret()
        now = self.clock.now()
        async with self.storage.unit_of_work() as uow:
            current = await self._own(uow, studio, target.id)
            rotated = attrs.evolve(
                current, secret_ciphertext=self.vault.encrypt(secret, current.id),
                previous_ciphertext=current.secret_ciphertext,
                previous_until=now + ROTATION_OVERLAP)
            await uow.hooks.save_endpoint(rotated)
        return Shown(rotated, secret)

    async def enable(self, studio: ActingStudio, target: WebhookTarget) -> WebhookEndpoint:
        """Turn an endpoint disabled for failing back on."""
        async with self.storage.unit_of_work() as uow:
            current = await self._own(uow, studio, target.id)
            enabled = attrs.evolve(current, disabled_at=None, disabled_reason="",
                                   failing_since=None)
            await uow.hooks.save_endpoint(enabled)
        return enabled

    async def deliveries(self, studio: ActingStudio, kind: MessageKind,
                         command: ListDeliveries) -> Page[Message]:
        """The delivery log (webhooks) or the hand-outs (chat roles), newest first."""
        async with self.storage.unit_of_work() as uow:
            return await uow.outbox.of_studio(studio.studio_id, kind, command.page.limit,
                                              command.page.cursor)

    async def resend(self, studio: ActingStudio, target: WebhookTarget) -> Message:
        """Send a message again now, with the same id (receivers deduplicate on it)."""
        async with self.storage.unit_of_work() as uow:
            found = await uow.outbox.by_id(target.id)
            if found is None or found.studio_id != studio.studio_id:
                raise NotFound("no such delivery")
            await uow.outbox.requeue(found.id, self.clock.now())
            again = await uow.outbox.by_id(found.id)
        assert again is not None
        return again

    async def set_roles(self, studio: ActingStudio, command: SetChatRoles) -> Sequence[ChatRole]:
        roles = [ChatRole(command.product_id, r.guild_id, r.role_id) for r in command.roles]
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, command.product_id)
            return await self._replace_roles(uow, studio, command.product_id, roles)

    async def add_role(self, studio: ActingStudio, product_id: str,
                       role: RoleName) -> Sequence[ChatRole]:
        """One more role the product earns; the others stay (the dashboard's form)."""
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, product_id)
            current = list(await uow.hooks.roles_of(product_id))
            added = ChatRole(product_id, role.guild_id, role.role_id)
            if added in current:
                return current
            if len(current) >= MAX_ROLES:
                raise InvalidRequest(f"a product earns at most {MAX_ROLES} chat roles",
                                     "role_id")
            return await self._replace_roles(uow, studio, product_id, [*current, added])

    async def remove_role(self, studio: ActingStudio, product_id: str,
                          role: RoleName) -> Sequence[ChatRole]:
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, product_id)
            current = await uow.hooks.roles_of(product_id)
            kept = [r for r in current
                    if (r.guild_id, r.role_id) != (role.guild_id, role.role_id)]
            return await self._replace_roles(uow, studio, product_id, kept)

    async def _replace_roles(self, uow: UnitOfWork, studio: ActingStudio, product_id: str,
                             roles: Sequence[ChatRole]) -> Sequence[ChatRole]:
        """Store the product's roles and, in the same unit of work, the message that takes
        each new role to, and each dropped one from, the people who hold the product now.
        The workers expand it a page of holders per transaction (`Announcer.reach_holders`),
        so a product held by many people never makes one long transaction here."""
        before = set(await uow.hooks.roles_of(product_id))
        await uow.hooks.set_roles(product_id, roles)
        after = await uow.hooks.roles_of(product_id)
        added = [r for r in after if r not in before]
        dropped = sorted(before - set(after), key=lambda r: (r.guild_id, r.role_id))
        if added or dropped:
            await self.announce.fan_out(uow, studio.studio_id, product_id, added, dropped)
        return after

    async def roles(self, studio: ActingStudio, product_id: str) -> Sequence[ChatRole]:
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, product_id)
            return await uow.hooks.roles_of(product_id)
