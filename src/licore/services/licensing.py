"""Licenses and alerts of a studio's products (spec 4.3 and 3, contract 3)."""

from __future__ import annotations

from typing import assert_never

import attrs

from licore import licenses as lic
from licore import tokens
from licore.actors import ActingStudio
from licore.commands import ChangeLicense, ListAlerts, ListLicenses
from licore.errors import AlreadyOwned, NotFound
from licore.events import license_topic
from licore.licenses import LicenseEffect, LicenseEvent, LicenseState, Source
from licore.model import Alert, License, Page
from licore.ports import Clock, KeyVault, Randomness
from licore.services.announce import Announcer, license_data
from licore.services.ids import Ids
from licore.services.products import own_product
from licore.storage_ports import Storage, UnitOfWork


async def resolve_user(uow: UnitOfWork, user: str) -> str:
    """All digits is a platform id; anything else a username from the user directory."""
    if user.isdigit():
        return user
    account = await uow.accounts.by_username(user)
    if account is None:
        raise NotFound("no user with that name")
    return account.platform_id


@attrs.frozen
class Licensing:
    storage: Storage
    clock: Clock
    ids: Ids
    random: Randomness
    vault: KeyVault
    announce: Announcer

    async def list(self, studio: ActingStudio, command: ListLicenses) -> Page[License]:
        """The product's licenses a page at a time, or with `user` that user's alone (a page
        of one or none; an unknown username is `not_found`, as wherever `user` is named)."""
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, command.product_id)
            if command.user is not None:
                found = await uow.licenses.for_user(command.product_id,
                                                    await resolve_user(uow, command.user))
                return Page(() if found is None else (found,), None)
            return await uow.licenses.of_product(command.product_id, command.page.limit,
                                                 command.page.cursor)

    async def alerts(self, studio: ActingStudio, command: ListAlerts) -> Page[Alert]:
        async with self.storage.unit_of_work() as uow:
            if command.product_id is not None:
                await own_product(uow, studio, command.product_id)
            return await uow.alerts.of_studio(studio.studio_id, command.product_id,
                                              command.page.limit, command.page.cursor)

    def mint(self, license: License) -> License:
        """The license with a new key (its digest for look-ups, its text sealed by the vault)
        and the next key generation: grants, re-keys, transfers and trials all mint here."""
        key = tokens.make_license_key(self.random.token_bytes(48))
        return attrs.evolve(
            license, key_ciphertext=self.vault.encrypt(key, license.id),
            key_digest=self.vault.lookup_digest(key), key_generation=license.key_generation + 1)

    async def change(self, studio: ActingStudio, command: ChangeLicense) -> License:
        """One license transition as one unit of work, by the table in `licore.licenses`."""
        target = command.target
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, target.product_id)
            platform_id = await resolve_user(uow, target.user)
            _, license = await self.apply(uow, studio.studio_id, target.product_id,
                                          platform_id, command.event, command.source)
            return license

    async def apply(self, uow: UnitOfWork, studio_id: str, product_id: str, platform_id: str,
                    event: LicenseEvent, source: Source) -> tuple[LicenseState, License]:
        """`event` on the user's license of the product, in the caller's unit of work: the
        seller's grant and a buyer's purchase-pass claim both come through here, so both
        mint a key and queue the same effects. The state it was in, and the license now."""
        now = self.clock.now()
        current = await uow.licenses.for_user(product_id, platform_id)
        state = current.state if current else LicenseState.NONE
        outcome = lic.transition(state, event)
        if current is None:
            fresh = await self._apply(uow, License(
                id=self.ids.new("lic"), product_id=product_id,
                platform_id=platform_id, source=source, state=outcome.next,
                verified_at=now, created_at=now), outcome.effects, source, now,
                prepared=False)
            # The (product, user) uniqueness of the table is what makes two racing grants
            # or claims give one license.
            if not await uow.licenses.add(fresh):
                raise AlreadyOwned("the user already holds a license for this product")
            await self._tell(uow, studio_id, state, fresh, outcome.effects)
            return state, fresh
        moved = attrs.evolve(current, state=outcome.next)
        if state is LicenseState.INACTIVE and outcome.next is LicenseState.ACTIVE:
            # A re-grant starts afresh: no end, tier or destination left from the old terms
            # (docs/licenses.md).
            moved = attrs.evolve(moved, expires_at=None, tier=None, transferred_to=None)
        updated = await self._apply(uow, moved, outcome.effects, source, now, prepared=True)
        if updated != current and not await uow.licenses.replace(updated, expected=state):
            if event is LicenseEvent.GRANT:
                raise AlreadyOwned("the user already holds a license for this product")
            raise NotFound("the license changed while this request ran; try again")
        await self._tell(uow, studio_id, state, updated, outcome.effects)
        return state, updated

    async def _tell(self, uow: UnitOfWork, studio_id: str, before: LicenseState,
                    license: License, effects: tuple[LicenseEffect, ...]) -> None:
        """The change's outbox messages, in its unit of work (docs/events.md)."""
        topic = license_topic(before, license.state)
        if topic is not None:
            await self.announce.event(uow, studio_id, topic, license_data(license))
        for effect in effects:
            match effect:
                case LicenseEffect.QUEUE_CHAT_ROLE_HAND_OUT:
                    await self.announce.chat_roles(uow, studio_id, license, True)
                case LicenseEffect.QUEUE_CHAT_ROLE_REMOVAL:
                    await self.announce.chat_roles(uow, studio_id, license, False)
                case (LicenseEffect.MINT_KEY | LicenseEffect.CLEAR_KEY
                      | LicenseEffect.REVERIFY):
                    pass  # changes to the record itself, made by `_apply`
                case _:
                    assert_never(effect)

    async def _apply(self, uow: UnitOfWork, license: License,
                     effects: tuple[LicenseEffect, ...], source: Source, now: int, *,
                     prepared: bool) -> License:
        """A row's effects on the record; `prepared` when copies may exist for its old key
        (a new key or none makes them void)."""
        for effect in effects:
            match effect:
                case LicenseEffect.MINT_KEY:
                    if prepared:
                        await uow.copies.drop(license_id=license.id)
                    license = self.mint(attrs.evolve(license, source=source, verified_at=now))
                case LicenseEffect.CLEAR_KEY:
                    if prepared:
                        await uow.copies.drop(license_id=license.id)
                    license = attrs.evolve(license, key_ciphertext=None, key_digest=None)
                case LicenseEffect.REVERIFY:
                    license = attrs.evolve(license, verified_at=now)
                case LicenseEffect.QUEUE_CHAT_ROLE_HAND_OUT | LicenseEffect.QUEUE_CHAT_ROLE_REMOVAL:
                    pass  # messages, written by `_tell` once the record is stored
                case _:
                    assert_never(effect)
        return license
