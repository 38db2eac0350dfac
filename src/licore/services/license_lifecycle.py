"""Licenses a seller can shape (docs/licenses.md): transfer, expiry, renewal, trials, tiers,
re-keying and places, by the lifecycle rows of `licore.licenses`. Each use case is one unit
of work: the change, its outbox messages and its effects commit together or not at all.

The license is read with `hold`, so concurrent changes of one license queue on it (on
PostgreSQL a row lock; SQLite and the memory store run one unit at a time) and each sees
what the one before it left: a thousand renewals add a thousand terms, a thousand transfers
move it once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never

import attrs

from licore import licenses as lic
from licore import tokens
from licore.actors import ActingPerson, ActingStudio
from licore.commands import ChangeLicense, LicenseTarget
from licore.errors import AlreadyOwned, InvalidRequest, NotFound, RateLimited
from licore.events import Topic, license_topic
from licore.license_commands import (
    GrantLicense,
    RekeyOwn,
    RenewLicense,
    SetLicensePolicy,
    SetTier,
    TakeTrial,
    Terms,
    TransferLicense,
)
from licore.licenses import (
    LicenseEffect,
    LicenseEvent,
    LicenseState,
    LifecycleEffect,
    LifecycleEvent,
    Source,
)
from licore.model import License, Place, Plan, Product, Tier, UnlockData
from licore.ports import Clock, KeyVault, Randomness
from licore.services.announce import Announcer, iso, license_data
from licore.services.ids import Ids
from licore.services.licensing import resolve_user
from licore.services.products import held_product, own_product
from licore.storage_ports import Notice, Storage, UnitOfWork

DAY = lic.DAY
# A holder's own re-keys of one license a day (UTC): enough for a leak found twice, and a
# bound on the copies a holder can make the service rebuild.
OWN_REKEYS_A_DAY = 3
Fx = LifecycleEffect


@attrs.frozen
class Transferred:
    old: License  # inactive, `transferred_to` the new holder
    new: License


@attrs.frozen
class Granted:
    license: License
    held: bool  # already held (active or paused): nothing changed but the purchase's record


@attrs.frozen
class Shape:
    """A grant's terms, set on the record before its one write (a grant is never seen in
    force without them, and never told as a renewal it was not)."""

    expires_at: int | None
    tier: str | None
    purchase_id: str | None

    def on(self, license: License) -> License:
        return attrs.evolve(license, expires_at=self.expires_at, tier=self.tier,
                            purchase_id=self.purchase_id)


@attrs.frozen
class LicensePolicy:
    product: Product
    place_limit: int  # the one in force: the product's, else the studio's
    tiers: tuple[Tier, ...]
    plans: tuple[Plan, ...] = ()


def lifecycle_data(license: License, now: int, grace_days: int | None = None,
                   ) -> dict[str, Any]:
    """The payload of the lifecycle events: `license_data` plus the terms."""
    return {**license_data(license), "status": lic.status(license, now, grace_days),
            "expires_at": iso(license.expires_at), "tier": license.tier}


@attrs.frozen
class LicenseLifecycle:
    """The one owner of license transitions: every change of a license, by either table
    of `licore.licenses`, is made here, in one unit of work that writes the record once
    (a transfer: the two records as one `move`), so the audit trail tells each change as
    one entry of its documented action. Adapters, claims and the hub kit's grants call it;
    a new way to change a license is a new use case here."""

    storage: Storage
    clock: Clock
    ids: Ids
    announce: Announcer
    random: Randomness
    vault: KeyVault

    @classmethod
    def of(cls, storage: Storage, clock: Clock, random: Randomness,
           vault: KeyVault) -> LicenseLifecycle:
        ids = Ids(clock, random)
        return cls(storage, clock, ids, Announcer(clock, ids), random, vault)

    def mint(self, license: License) -> License:
        """The license with a new key (its digest for look-ups, its text sealed by the vault)
        and the next key generation: grants, re-keys, transfers and trials all mint here."""
        key = tokens.make_license_key(self.random.token_bytes(48))
        return attrs.evolve(
            license, key_ciphertext=self.vault.encrypt(key, license.id),
            key_digest=self.vault.lookup_digest(key), key_generation=license.key_generation + 1)

    # --- helpers -------------------------------------------------------------------------

    async def _held(self, uow: UnitOfWork, studio: ActingStudio,
                    target: LicenseTarget) -> tuple[Product, str, License | None]:
        product = await own_product(uow, studio, target.product_id)
        platform_id = await resolve_user(uow, target.user, target.chat_user)
        return product, platform_id, await uow.licenses.hold(product.id, platform_id)

    async def _store(self, uow: UnitOfWork, before: License, after: License) -> None:
        # `hold` kept the row from changing, so the compare-and-set cannot lose; it stays
        # as the guard a store without row locks would need.
        if after != before and not await uow.licenses.replace(after, expected=before.state):
            raise NotFound("the license changed while this request ran; try again")

    async def _effects(self, uow: UnitOfWork, studio_id: str, license: License,
                       effects: tuple[LifecycleEffect, ...], topic_data: dict[str, Any],
                       ) -> None:
        """The row's messages, once the record is stored."""
        for effect in effects:
            match effect:
                case Fx.QUEUE_CHAT_ROLE_HAND_OUT:
                    await self.announce.chat_roles(uow, studio_id, license, True)
                case Fx.QUEUE_CHAT_ROLE_REMOVAL:
                    await self.announce.chat_roles(uow, studio_id, license, False)
                case Fx.ANNOUNCE_TRANSFERRED:
                    await self.announce.event(uow, studio_id, Topic.LICENSE_TRANSFERRED,
                                              topic_data)
                case Fx.ANNOUNCE_RENEWED:
                    await self.announce.event(uow, studio_id, Topic.LICENSE_RENEWED,
                                              topic_data)
                case Fx.ANNOUNCE_EXPIRED:
                    await self.announce.event(uow, studio_id, Topic.LICENSE_EXPIRED,
                                              topic_data)
                case Fx.ANNOUNCE_TRIAL:
                    await self.announce.event(uow, studio_id, Topic.LICENSE_GRANTED,
                                              {**topic_data, "trial": True})
                case Fx.ANNOUNCE_TIER:
                    await self.announce.event(uow, studio_id, Topic.LICENSE_TIER_CHANGED,
                                              topic_data)
                case Fx.ANNOUNCE_REKEYED:
                    await self.announce.event(uow, studio_id, Topic.LICENSE_REKEYED,
                                              topic_data)
                case (Fx.MINT_KEY | Fx.CLEAR_KEY | Fx.RECORD_DESTINATION | Fx.COPY_TERMS
                      | Fx.EXTEND | Fx.RECORD_TRIAL | Fx.STORE_TIER):
                    pass  # changes to the record, made before it was stored
                case _:
                    assert_never(effect)

    async def _new_key(self, uow: UnitOfWork, license: License, prepared: bool) -> License:
        if prepared:  # copies made for the old key carry it: they go with it
            await uow.copies.drop(license_id=license.id)
        return self.mint(license)

    async def _check_tier(self, uow: UnitOfWork, product: Product, tier: str | None) -> None:
        if tier is not None and tier not in {t.name for t in await uow.products.tiers(
                product.id)}:
            raise InvalidRequest("the product has no tier of that name", "tier")

    def _end(self, terms: Terms, current: int | None, now: int) -> int | None:
        """The new `expires_at` that `terms` ask for, from a license ending at `current`."""
        if terms.expires_at is not None:
            if terms.expires_at <= now or (current is not None
                                           and terms.expires_at <= current):
                raise InvalidRequest("expires_at must be later than now and than the "
                                     "license's current end", "expires_at")
            return terms.expires_at
        if terms.duration_days is not None:
            return max(now, current or now) + terms.duration_days * DAY
        return None

    # --- use cases -----------------------------------------------------------------------

    async def grant(self, studio: ActingStudio, command: GrantLicense) -> License:
        """The specification's grant (`POST /licenses`) with an end and a tier, as one unit:
        the license is never seen in force without its terms. A license already held is
        `409 already_owned` (the purchase, if any, recorded all the same)."""
        granted = await self.grant_recorded(studio, command)
        if granted.held:
            raise AlreadyOwned("the user already holds a license for this product")
        return granted.license

    async def grant_recorded(self, studio: ActingStudio, command: GrantLicense) -> Granted:
        """`grant`, answering a license already held instead of raising, so that the new
        purchase recorded against it commits even inside a keyed call (whose refusals roll
        back): a replay of it after a revoke is then a recorded sale, refused."""
        target = command.target
        async with self.storage.unit_of_work() as uow:
            product = await own_product(uow, studio, target.product_id)
            platform_id = await resolve_user(uow, target.user, target.chat_user)
            terms, tier, plan = await self._terms_of(uow, product, command)
            now = self.clock.now()
            end = self._end(terms, None, now)
            sale = lic.purchase_key(command.source, command.purchase_id, platform_id)
            if sale is not None:
                await self._unrecorded(uow, product.id, sale, platform_id)
                held = await uow.licenses.hold(product.id, platform_id)
                if held is not None and held.state is not LicenseState.INACTIVE:
                    more = await self._extended(uow, studio.studio_id, held, plan, now)
                    await uow.licenses.remember_purchase(product.id, sale, held.id, now)
                    return Granted(more or held, held=more is None)
            _, shaped = await self.apply(
                uow, studio.studio_id, product.id, platform_id, LicenseEvent.GRANT,
                command.source, Shape(end, tier, command.purchase_id))
            if sale is not None:
                await uow.licenses.remember_purchase(product.id, sale, shaped.id, now)
            return Granted(shaped, held=False)

    async def change(self, studio: ActingStudio, command: ChangeLicense) -> License:
        """One license transition as one unit of work, by the table in `licore.licenses`."""
        target = command.target
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, target.product_id)
            platform_id = await resolve_user(uow, target.user, target.chat_user)
            _, license = await self.apply(uow, studio.studio_id, target.product_id,
                                          platform_id, command.event, command.source)
            return license


    async def apply(self, uow: UnitOfWork, studio_id: str, product_id: str, platform_id: str,
                    event: LicenseEvent, source: Source,
                    shape: Shape | None = None) -> tuple[LicenseState, License]:
        """`event` of the specification's table on the user's license of the product, in
        the caller's unit of work: the seller's grant and a buyer's purchase-pass claim both
        come through here, so both mint a key and queue the same effects. A grant's terms
        (`shape`) are part of the one write. The state it was in, and the license now."""
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
            fresh = fresh if shape is None else shape.on(fresh)
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
        updated = updated if shape is None else shape.on(updated)
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

    async def _terms_of(self, uow: UnitOfWork, product: Product, command: GrantLicense,
                        ) -> tuple[Terms, str | None, Plan | None]:
        """A grant's end and tier: its own, or its plan's."""
        if command.plan is None:
            await self._check_tier(uow, product, command.tier)
            return command.terms, command.tier, None
        for plan in await uow.products.plans(product.id):
            if plan.id == command.plan:
                return Terms(duration_days=plan.duration_days), plan.tier, plan
        raise InvalidRequest("the product has no plan of that id", "plan")

    async def _extended(self, uow: UnitOfWork, studio_id: str, held: License,
                        plan: Plan | None, now: int) -> License | None:
        """A plan bought again by its holder: the license renewed by the plan's term (a plan
        for good makes it so), on the plan's tier if it names one. None: nothing to add
        (no plan, or a license for good bought again for a term)."""
        if plan is None:
            return None
        if plan.duration_days is None:
            end = None
        elif held.expires_at is None:
            return None
        else:
            end = max(now, held.expires_at) + plan.duration_days * DAY
        extended = attrs.evolve(held, expires_at=end, tier=plan.tier or held.tier)
        if extended == held:
            return None
        row = lic.lifecycle(lic.standing(held, now), LifecycleEvent.RENEW)
        await self._store(uow, held, extended)
        await self._effects(uow, studio_id, extended, row.effects,
                            lifecycle_data(extended, now))
        return extended

    async def _unrecorded(self, uow: UnitOfWork, product_id: str, sale: str,
                          platform_id: str) -> None:
        """Refuse a sale licore already recorded, by the state of the license it gave."""
        recorded = await uow.licenses.by_purchase(product_id, sale)
        if recorded is None:
            return
        if recorded.platform_id != platform_id:
            raise InvalidRequest("purchase_id names a sale already recorded for another "
                                 "user of this product", "purchase_id")
        lic.transition(recorded.state, LicenseEvent.RECORDED_SALE)  # every row refuses

    async def transfer(self, studio: ActingStudio, command: TransferLicense) -> Transferred:
        """Move a license: the old record stays, inactive, with where it went; the new
        holder gets an active license with a new key and the same source, tier and end."""
        async with self.storage.unit_of_work() as uow:
            product = await own_product(uow, studio, command.product_id)
            source_id = await resolve_user(uow, command.from_user)
            target_id = await resolve_user(uow, command.to_user)
            if source_id == target_id:
                raise InvalidRequest("from_user and to_user are the same person", "to_user")
            now = self.clock.now()
            # Both rows are held, in one order whatever the direction, so that transfers
            # A -> B and B -> A running at once queue instead of deadlocking.
            held = {p: await uow.licenses.hold(product.id, p)
                    for p in sorted((source_id, target_id))}
            old, existing = held[source_id], held[target_id]
            out = lic.lifecycle(lic.standing(old, now), LifecycleEvent.TRANSFER_OUT)
            assert old is not None  # the table refuses a transfer from no license
            into = lic.lifecycle(lic.standing(existing, now), LifecycleEvent.TRANSFER_IN)
            gone = old
            for effect in out.effects:
                if effect is Fx.CLEAR_KEY:
                    await uow.copies.drop(license_id=old.id)
                    gone = attrs.evolve(gone, key_ciphertext=None, key_digest=None)
                elif effect is Fx.RECORD_DESTINATION:
                    gone = attrs.evolve(gone, state=LicenseState.INACTIVE,
                                        transferred_to=target_id)
            new = License(id=self.ids.new("lic"), product_id=product.id,
                          platform_id=target_id, source=old.source, state=LicenseState.ACTIVE,
                          verified_at=now, created_at=now)
            for effect in into.effects:
                if effect is Fx.COPY_TERMS:
                    new = attrs.evolve(new, source=old.source, expires_at=old.expires_at,
                                       tier=old.tier, verified_at=old.verified_at,
                                       purchase_id=old.purchase_id)
                elif effect is Fx.MINT_KEY:
                    new = self.mint(new)
            # One change, told as one `license.transferred`. `hold` kept the old record
            # from changing, so only a record of the target made meanwhile can refuse it.
            if not await uow.licenses.move(gone, old.state, new):
                raise lic.refusal_of_lifecycle(lic.Standing.ACTIVE,
                                               LifecycleEvent.TRANSFER_IN)
            data = {**lifecycle_data(new, now), "from_license_id": old.id,
                    "from_platform_id": old.platform_id}
            await self._effects(uow, studio.studio_id, gone, out.effects, data)
            await self._effects(uow, studio.studio_id, new, into.effects, data)
            return Transferred(gone, new)

    async def renew(self, studio: ActingStudio, command: RenewLicense) -> License:
        """Extend a license's end (`duration_days` from the later of now and its end), or
        move it to `expires_at`; an expired license is back in force at once."""
        async with self.storage.unit_of_work() as uow:
            _, _, current = await self._held(uow, studio, command.target)
            now = self.clock.now()
            row = lic.lifecycle(lic.standing(current, now), LifecycleEvent.RENEW)
            assert current is not None
            if current.expires_at is None and command.terms.duration_days is not None:
                raise InvalidRequest("the license never expires; send expires_at to give it "
                                     "an end", "duration_days")
            renewed = attrs.evolve(current, expires_at=self._end(command.terms,
                                                                 current.expires_at, now))
            await self._store(uow, current, renewed)
            await self._effects(uow, studio.studio_id, renewed, row.effects,
                                lifecycle_data(renewed, now))
            return renewed

    async def start_trial(self, studio: ActingStudio, target: LicenseTarget) -> License:
        """The seller starts a person's trial of the product."""
        async with self.storage.unit_of_work() as uow:
            product = await own_product(uow, studio, target.product_id)
            platform_id = await resolve_user(uow, target.user, target.chat_user)
            return await self._trial(uow, product, platform_id)

    async def take_trial(self, person: ActingPerson, command: TakeTrial) -> License:
        """A person starts their own trial of a listed product."""
        async with self.storage.unit_of_work() as uow:
            product = await uow.products.by_id(command.product_id)
            account = await uow.accounts.by_id(person.account_id)
            if product is None or not product.discoverable or account is None:
                raise NotFound("no such product")
            return await self._trial(uow, product, account.platform_id)

    async def _trial(self, uow: UnitOfWork, product: Product, platform_id: str) -> License:
        if not product.trial_days or not product.licensing_enabled:
            raise InvalidRequest("the product offers no trial", "product_id")
        now = self.clock.now()
        current = await uow.licenses.hold(product.id, platform_id)
        row = lic.lifecycle(lic.standing(current, now), LifecycleEvent.START_TRIAL)
        trial = License(id=self.ids.new("lic"), product_id=product.id,
                        platform_id=platform_id, source=Source.TRIAL,
                        state=LicenseState.ACTIVE, verified_at=now, created_at=now,
                        expires_at=now + product.trial_days * DAY)
        for effect in row.effects:
            if effect is Fx.RECORD_TRIAL and not await uow.licenses.take_trial(
                    product.id, platform_id, now):
                # Once per person and product, ever: a holder who let a trial lapse and
                # whose record was since removed still gets no second one.
                raise lic.refusal_of_lifecycle(lic.Standing.ACTIVE,
                                               LifecycleEvent.START_TRIAL)
            if effect is Fx.MINT_KEY:
                trial = self.mint(trial)
        if not await uow.licenses.add(trial):
            raise lic.refusal_of_lifecycle(lic.Standing.ACTIVE, LifecycleEvent.START_TRIAL)
        await self._effects(uow, product.studio_id, trial, row.effects,
                            lifecycle_data(trial, now))
        return trial

    async def set_tier(self, studio: ActingStudio, command: SetTier) -> License:
        """Put a license on one of the product's tiers (None: the product's own data)."""
        async with self.storage.unit_of_work() as uow:
            product, _, current = await self._held(uow, studio, command.target)
            now = self.clock.now()
            row = lic.lifecycle(lic.standing(current, now), LifecycleEvent.SET_TIER)
            assert current is not None
            await self._check_tier(uow, product, command.tier)
            if current.tier == command.tier:
                return current  # nothing changed: nothing to tell
            changed = attrs.evolve(current, tier=command.tier)
            await self._store(uow, current, changed)
            await self._effects(uow, studio.studio_id, changed, row.effects,
                                lifecycle_data(changed, now))
            return changed

    async def rekey(self, studio: ActingStudio, target: LicenseTarget) -> License:
        """A new key for the license: the old one (and every copy made with it) stops
        working at once; new downloads carry the new key."""
        async with self.storage.unit_of_work() as uow:
            _, _, current = await self._held(uow, studio, target)
            return await self._rekey(uow, studio.studio_id, current)

    async def rekey_own(self, person: ActingPerson, command: RekeyOwn) -> License:
        """The holder's own re-key (a leaked key), as the seller's, a few times a day at
        most: each one voids the holder's copies, which are made again on download."""
        now = self.clock.now()
        async with self.storage.unit_of_work() as uow:
            (count,) = await uow.records.counters.hit(
                [f"own-rekey:{person.account_id}:{command.product_id}"], now - now % DAY)
        if count > OWN_REKEYS_A_DAY:
            raise RateLimited(retry_after=DAY - now % DAY, limit=OWN_REKEYS_A_DAY)
        async with self.storage.unit_of_work() as uow:
            account = await uow.accounts.by_id(person.account_id)
            product = await uow.products.by_id(command.product_id)
            if account is None or product is None:
                raise NotFound("no license of yours for that product")
            current = await uow.licenses.hold(product.id, account.platform_id)
            if current is None:
                raise NotFound("no license of yours for that product")
            return await self._rekey(uow, product.studio_id, current)

    async def _rekey(self, uow: UnitOfWork, studio_id: str, current: License | None) -> License:
        now = self.clock.now()
        row = lic.lifecycle(lic.standing(current, now), LifecycleEvent.REKEY)
        assert current is not None
        rekeyed = current
        for effect in row.effects:
            if effect is Fx.MINT_KEY:
                rekeyed = await self._new_key(uow, rekeyed, prepared=True)
        await self._store(uow, current, rekeyed)
        await self._effects(uow, studio_id, rekeyed, row.effects,
                            lifecycle_data(rekeyed, now))
        return rekeyed

    async def places(self, studio: ActingStudio, target: LicenseTarget) -> Sequence[Place]:
        async with self.storage.unit_of_work() as uow:
            return await uow.records.runtime.places(await self._license_id(uow, studio, target))

    async def reset_places(self, studio: ActingStudio, target: LicenseTarget) -> int:
        """Forget the license's places: the next places it is used from count from 1."""
        async with self.storage.unit_of_work() as uow:
            license_id = await self._license_id(uow, studio, target)
            return await uow.records.runtime.reset_places(license_id)

    async def _license_id(self, uow: UnitOfWork, studio: ActingStudio,
                          target: LicenseTarget) -> str:
        _, _, current = await self._held(uow, studio, target)
        if current is None:
            raise NotFound("no license for that user and product")
        return current.id

    async def policy(self, studio: ActingStudio, product_id: str) -> LicensePolicy:
        async with self.storage.unit_of_work() as uow:
            product = await own_product(uow, studio, product_id)
            return await self._policy(uow, product)

    async def _policy(self, uow: UnitOfWork, product: Product) -> LicensePolicy:
        limit = product.place_limit
        if limit is None:
            owner = await uow.studios.by_id(product.studio_id)
            limit = owner.place_limit if owner is not None else lic.DEFAULT_PLACE_LIMIT
        return LicensePolicy(product, limit, tuple(await uow.products.tiers(product.id)),
                             tuple(await uow.products.plans(product.id)))

    async def set_policy(self, studio: ActingStudio,
                         command: SetLicensePolicy) -> LicensePolicy:
        """A product's place limit and policy, trial length, reminder and tiers."""
        async with self.storage.unit_of_work() as uow:
            product = await held_product(uow, studio, command.product_id)
            changes = _policy_changes(command)
            if changes:
                product = attrs.evolve(product, updated_at=self.clock.now(), **changes)
                await uow.products.save(product)
            if command.tiers is not None:
                await uow.products.set_tiers(product.id, [
                    Tier(product.id, t.name, UnlockData.of(t.unlock_data.value))
                    for t in command.tiers])
            if command.plans is not None:
                await uow.products.set_plans(product.id, [
                    Plan(product.id, p.id, p.name, p.duration_days, p.tier, at)
                    for at, p in enumerate(command.plans)])
            policy = await self._policy(uow, product)
            _check_plans(policy)
            return policy

    # --- the scheduler's sweep -----------------------------------------------------------

    async def sweep_expiries(self, limit: int = 100) -> int:
        """Write `license.expired` (and remove chat roles) for licenses past their end and
        their product's grace, and `license.expiring` for those within their product's
        `reminder_days` of their end, and again (`in_grace: true`) for those past their end
        within the grace: each once per end, in the unit of work that marks it told, so that
        any number of processes sweeping at once write it exactly once. How many events
        were written."""
        now = self.clock.now()
        return (await self._sweep(Notice.EXPIRED, now, limit)
                + await self._sweep(Notice.GRACE, now, limit)
                + await self._sweep(Notice.EXPIRING, now, limit))

    async def _sweep(self, notice: Notice, now: int, limit: int) -> int:
        async with self.storage.unit_of_work() as uow:
            due = await uow.licenses.due_notices(notice, now, limit)
            written = 0
            for license in due:
                assert license.expires_at is not None
                if not await uow.licenses.mark_told(license.id, notice, license.expires_at):
                    continue  # another process told it first
                product = await uow.products.by_id(license.product_id)
                if product is None:
                    continue
                data = {**lifecycle_data(license, now, product.grace_days),
                        "in_grace": notice is Notice.GRACE,
                        "grace_ends_at": iso(lic.grace_end(license, product.grace_days))}
                if notice is not Notice.EXPIRED:
                    await self.announce.event(uow, product.studio_id, Topic.LICENSE_EXPIRING,
                                              data)
                else:
                    row = lic.lifecycle(lic.standing(license, now), LifecycleEvent.EXPIRE)
                    await self._effects(uow, product.studio_id, license, row.effects, data)
                written += 1
            return written


def _policy_changes(command: SetLicensePolicy) -> dict[str, Any]:
    """The product's fields a policy change sets: those sent (0 days: none)."""
    sent = {"place_limit": command.place_limit, "place_policy": command.place_policy}
    days = {"trial_days": command.trial_days, "reminder_days": command.reminder_days,
            "grace_days": command.grace_days}
    return ({k: v for k, v in sent.items() if v is not None}
            | {k: v or None for k, v in days.items() if v is not None})


def _check_plans(policy: LicensePolicy) -> None:
    tiers = {t.name for t in policy.tiers}
    if any(p.tier is not None and p.tier not in tiers for p in policy.plans):
        raise InvalidRequest("each plan's tier must be one of the product's tiers", "plans")
