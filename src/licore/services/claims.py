"""Purchase-pass claims (extension, docs/platform.md): a person who bought a product's game
pass on the platform presses "I bought this", the platform is asked, and the license comes
through the very transition a seller's grant uses (`LicenseLifecycle.apply`, event
`PURCHASE_PASS`), so the key is minted and the same effects are queued."""

from __future__ import annotations

import enum
from typing import assert_never

import attrs

from licore.actors import ActingPerson
from licore.audit import Actor, ActorKind, acting
from licore.commands import ClaimPurchase
from licore.errors import AlreadyOwned, InvalidRequest, NotFound, PassNotOwned, PlatformUnavailable
from licore.licenses import LicenseEvent, LicenseState, Source
from licore.model import License, Product
from licore.ports import Clock, Ownership, Platform
from licore.services import limits
from licore.services.license_lifecycle import LicenseLifecycle
from licore.storage_ports import Storage


class ClaimResult(enum.Enum):
    """What a claim did, by the state the license was in before it."""

    GRANTED = "granted"  # no license before: one is granted with source purchase_pass
    ALREADY_HELD = "already_held"  # active: only `verified_at` moved
    PAUSED = "paused"  # paused by the seller: stays paused (verified_at moved)
    REVOKED = "revoked"  # revoked by the seller: never restored by a claim


_BY_STATE = {
    LicenseState.NONE: ClaimResult.GRANTED,
    LicenseState.ACTIVE: ClaimResult.ALREADY_HELD,
    LicenseState.PAUSED: ClaimResult.PAUSED,
    LicenseState.INACTIVE: ClaimResult.REVOKED,
}


@attrs.frozen
class Claim:
    result: ClaimResult
    license: License
    product: Product


@attrs.frozen
class Claims:
    storage: Storage
    clock: Clock
    lifecycle: LicenseLifecycle  # the one owner of license transitions
    platform: Platform | None
    rate_limit: int

    async def claim(self, person: ActingPerson, command: ClaimPurchase) -> Claim:
        # Per person, before anything else: each press costs a call to the platform.
        await limits.hit(self.storage, self.clock, f"claim:{person.account_id}",
                         self.rate_limit)
        async with self.storage.unit_of_work() as uow:
            account = await uow.accounts.by_id(person.account_id)
            product = await uow.products.by_id(command.product_id)
        if account is None:
            raise NotFound("the account is gone")
        # Only a listed product is claimable: a draft's id must not be confirmed to exist.
        if product is None or not product.discoverable:
            raise NotFound("no such product")
        if not product.purchase_pass_id:
            raise InvalidRequest("this product is not sold through a purchase pass",
                                 "product_id")
        if self.platform is None:
            raise PlatformUnavailable("purchase passes are not set up on this server")
        answer = await self.platform.owns_pass(account.platform_id, product.purchase_pass_id)
        match answer:
            case Ownership.OWNED:
                pass
            case Ownership.NOT_OWNED:
                raise PassNotOwned("the platform says you do not own this product's pass")
            case Ownership.UNKNOWN:
                raise PlatformUnavailable("the platform did not answer; nothing changed, "
                                          "try again in a minute")
            case _:
                assert_never(answer)
        # The license is the platform's word, not the person's: the trail names the pass.
        with acting(Actor(ActorKind.PLATFORM, f"purchase_pass:{product.purchase_pass_id}")):
            return await self._record(account.platform_id, product)

    async def _record(self, platform_id: str, product: Product) -> Claim:
        for _ in range(3):
            async with self.storage.unit_of_work() as uow:
                try:
                    state, license = await self.lifecycle.apply(
                        uow, product.studio_id, product.id, platform_id,
                        LicenseEvent.PURCHASE_PASS,
                        Source.PURCHASE_PASS)
                except (AlreadyOwned, NotFound):
                    # A concurrent claim or a seller's change won the race: read it again.
                    continue
            return Claim(_BY_STATE[state], license, product)
        raise PlatformUnavailable("the license kept changing while this claim ran; try again")
