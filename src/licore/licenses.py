"""License states and transitions (spec section 3, contract section 3)."""

from __future__ import annotations

import enum
from typing import Protocol

from licore.errors import AlreadyOwned, InvalidRequest, LicenseRevoked, LicoreError, NotFound
from licore.transitions import Event, Fail, Go, Table, refusal_of, step, table


class LicenseState(enum.Enum):
    NONE = "none"  # no record for this product and user
    ACTIVE = "active"
    INACTIVE = "inactive"
    PAUSED = "paused"


class LicenseEvent(Event):
    GRANT = ("`POST /licenses`", "Product exists in the studio")  # the seller's explicit act
    PURCHASE_PASS = ("Purchase pass verified", "The platform confirms the pass is owned")
    # licore's: a grant for a sale it already recorded (`purchase_key`), however late it
    # comes again. A platform redelivers an open receipt for as long as it stays open, so
    # this is no window of time: the purchase is remembered as long as its license exists.
    RECORDED_SALE = ("`POST /licenses` for a recorded purchase",
                     "The same `purchase_id`, or a sale without one from the same source")
    # Whether a license matches is the state: "none" when there is none.
    REVOKE = ("`DELETE /licenses`",)
    PAUSE = ("Pause",)
    RESUME = ("Resume",)


class Source(enum.Enum):
    """Where a license came from. A claim sets `purchase_pass` (the platform confirmed it);
    a seller's grant says `grant`, or names the sale its hub took (docs/selling.md):"""

    PURCHASE_PASS = "purchase_pass"
    GRANT = "grant"
    TRIAL = "trial"  # licore's: a product's trial (docs/licenses.md); a transfer keeps it
    DEVELOPER_PRODUCT = "developer_product"  # a developer product's receipt
    GAME_PASS = "game_pass"  # a game pass the buyer owns
    SUBSCRIPTION = "subscription"  # a subscription the buyer holds


# What a seller's grant may say; `purchase_pass` is the platform's word, given by a claim.
GRANT_SOURCES = (Source.GRANT, Source.DEVELOPER_PRODUCT, Source.GAME_PASS,
                 Source.SUBSCRIPTION)


class LicenseEffect(enum.Enum):
    """What the caller does with a row, in the same transaction (`services.license_lifecycle`)."""

    # Copies prepared for the buyer carry the old key, so minting or clearing drops them.
    MINT_KEY = "A runtime key is minted (copies prepared with an earlier key are dropped)"
    CLEAR_KEY = "The runtime key is cleared (copies prepared with it are dropped)"
    REVERIFY = "`verified_at` is refreshed"
    # Contract 8: a grant queues a chat-role hand-out and a revoke a removal, as messages of
    # the one outbox (docs/events.md); a pause takes the roles away and a resume gives them
    # back, since a paused license earns nothing.
    QUEUE_CHAT_ROLE_HAND_OUT = "Community-chat roles earned by the product are handed out"
    QUEUE_CHAT_ROLE_REMOVAL = "Community-chat roles earned by the product are removed"


def _owned() -> AlreadyOwned:
    return AlreadyOwned("the user already holds a license for this product")


def _missing() -> NotFound:
    return NotFound("no license for that user and product")


def _revoked_sale() -> LicenseRevoked:
    return LicenseRevoked("the seller revoked the license this purchase gave; the purchase "
                          "does not bring it back (a seller's grant without it does)")


def _inactive() -> InvalidRequest:
    return InvalidRequest("the license is inactive; grant it again to re-activate it", "user")


S, E, Fx = LicenseState, LicenseEvent, LicenseEffect
MINT = (Fx.MINT_KEY, Fx.QUEUE_CHAT_ROLE_HAND_OUT)

LICENSES: Table[LicenseState, LicenseEvent, LicenseEffect] = table(
    (S.NONE,     E.GRANT,         Go(S.ACTIVE, MINT)),
    (S.NONE,     E.PURCHASE_PASS, Go(S.ACTIVE, MINT)),
    # A recorded purchase names a license, which exists for as long as its record does.
    (S.NONE,     E.RECORDED_SALE, Fail(_missing)),
    (S.NONE,     E.REVOKE,        Fail(_missing)),
    (S.NONE,     E.PAUSE,         Fail(_missing)),
    (S.NONE,     E.RESUME,        Fail(_missing)),

    (S.ACTIVE,   E.GRANT,         Fail(_owned)),
    (S.ACTIVE,   E.PURCHASE_PASS, Go(S.ACTIVE, (Fx.REVERIFY,))),
    (S.ACTIVE,   E.RECORDED_SALE, Fail(_owned)),
    (S.ACTIVE,   E.REVOKE,        Go(S.INACTIVE, (Fx.CLEAR_KEY, Fx.QUEUE_CHAT_ROLE_REMOVAL))),
    (S.ACTIVE,   E.PAUSE,         Go(S.PAUSED, (Fx.QUEUE_CHAT_ROLE_REMOVAL,))),
    (S.ACTIVE,   E.RESUME,        Go(S.ACTIVE)),

    (S.PAUSED,   E.GRANT,         Fail(_owned)),
    (S.PAUSED,   E.PURCHASE_PASS, Go(S.PAUSED, (Fx.REVERIFY,))),
    (S.PAUSED,   E.RECORDED_SALE, Fail(_owned)),
    (S.PAUSED,   E.REVOKE,        Go(S.INACTIVE, (Fx.CLEAR_KEY, Fx.QUEUE_CHAT_ROLE_REMOVAL))),
    (S.PAUSED,   E.PAUSE,         Go(S.PAUSED)),
    (S.PAUSED,   E.RESUME,        Go(S.ACTIVE, (Fx.QUEUE_CHAT_ROLE_HAND_OUT,))),

    # The record is kept on purpose: a re-verified purchase pass cannot silently restore
    # revoked access; only the seller's grant re-activates it.
    (S.INACTIVE, E.GRANT,         Go(S.ACTIVE, MINT)),
    (S.INACTIVE, E.PURCHASE_PASS, Go(S.INACTIVE)),
    # A refunded sale the seller revoked stays revoked whatever is replayed.
    (S.INACTIVE, E.RECORDED_SALE, Fail(_revoked_sale)),
    (S.INACTIVE, E.REVOKE,        Go(S.INACTIVE)),
    (S.INACTIVE, E.PAUSE,         Fail(_inactive)),
    (S.INACTIVE, E.RESUME,        Fail(_inactive)),
)


def purchase_key(source: Source, purchase_id: str | None, platform_id: str) -> str | None:
    """The purchase a grant is for, as licore remembers it (docs/selling.md, "Refunds"): its
    `purchase_id`; a sale sent without one is the buyer's one sale from that source (a game
    pass is owned once; a subscription is one per buyer). None: the seller's own grant,
    which is no sale and may re-activate a revoked license on purpose."""
    if purchase_id is not None:
        return f"id:{purchase_id}"
    if source is Source.GRANT:
        return None
    return f"{source.value}:{platform_id}"


def transition(state: LicenseState, event: LicenseEvent) -> Go[LicenseState, LicenseEffect]:
    return step(LICENSES, state, event)


def passes_runtime(state: LicenseState) -> bool:
    """Only an active license is in force; paused and inactive ones fail every runtime call."""
    return state is LicenseState.ACTIVE


# --- Beyond the specification: transfer, expiry, renewal, trials, tiers, re-keying ---------
#
# These rows sit beside the specification's table, which stays as it is. They are read over a
# license's *standing*: its stored state, except that an active license past its `expires_at`
# stands as expired (out of force, as an inactive one is, yet shown to the seller as expired,
# not revoked). Expiry is a condition of time, not a stored state, so no sweep has to run
# before a runtime call refuses an expired key.


class Standing(enum.Enum):
    NONE = "none"
    ACTIVE = "active"
    PAUSED = "paused"
    EXPIRED = "expired"  # stored active, past `expires_at`
    INACTIVE = "inactive"


class LifecycleEvent(Event):
    TRANSFER_OUT = ("Transfer", "From this holder to another person")
    TRANSFER_IN = ("Transfer", "To this person")
    RENEW = ("Renew",)
    EXPIRE = ("The expiry sweep", "`expires_at` has passed")
    START_TRIAL = ("Start trial", "The product offers a trial this person never took")
    SET_TIER = ("Change tier", "The tier is one the product defines (or none)")
    REKEY = ("Re-key",)


class LifecycleEffect(enum.Enum):
    """What the caller does with a lifecycle row, in the same unit of work
    (`services.license_lifecycle`)."""

    MINT_KEY = "A new runtime key is minted (the old key's digest no longer matches; copies " \
               "prepared with it are dropped)"
    CLEAR_KEY = "The runtime key is cleared (copies prepared with it are dropped)"
    RECORD_DESTINATION = "The record is kept, inactive, with the person it went to"
    COPY_TERMS = "The new record takes the old one's source, tier and expiry"
    EXTEND = "`expires_at` moves later"
    RECORD_TRIAL = "The trial is recorded, so the person never gets another for the product"
    STORE_TIER = "The tier is stored; `/unlock` seals that tier's data from now on"
    QUEUE_CHAT_ROLE_HAND_OUT = "Community-chat roles earned by the product are handed out"
    QUEUE_CHAT_ROLE_REMOVAL = "Community-chat roles earned by the product are removed"
    ANNOUNCE_TRANSFERRED = "Event `license.transferred`"
    ANNOUNCE_RENEWED = "Event `license.renewed`"
    ANNOUNCE_EXPIRED = "Event `license.expired`, written once"
    ANNOUNCE_TRIAL = "Event `license.granted`, marked as a trial"
    ANNOUNCE_TIER = "Event `license.tier_changed`"
    ANNOUNCE_REKEYED = "Event `license.rekeyed`"


def _paused_transfer() -> InvalidRequest:
    return InvalidRequest("the license is paused; resume it before transferring it", "from_user")


def _inactive_transfer() -> InvalidRequest:
    return InvalidRequest("the license is not active, so there is nothing to transfer",
                          "from_user")


def _expired_transfer() -> InvalidRequest:
    return InvalidRequest("the license has expired; renew it before transferring it",
                          "from_user")


def _revoked_target() -> InvalidRequest:
    # A transfer must not restore what the seller revoked: only a grant re-activates it.
    return InvalidRequest("the target's license of this product was revoked; grant it "
                          "to re-activate it", "to_user")


def _inactive_renew() -> InvalidRequest:
    return InvalidRequest("the license is inactive; grant it again to re-activate it", "user")


def _trial_taken() -> AlreadyOwned:
    return AlreadyOwned("the user already holds or held a license for this product")


def _inactive_change() -> InvalidRequest:
    return InvalidRequest("the license is inactive", "user")


T, LE, LF = Standing, LifecycleEvent, LifecycleEffect
TRANSFERRED_OUT = (LF.CLEAR_KEY, LF.RECORD_DESTINATION, LF.QUEUE_CHAT_ROLE_REMOVAL,
                   LF.ANNOUNCE_TRANSFERRED)
TRANSFERRED_IN = (LF.COPY_TERMS, LF.MINT_KEY, LF.QUEUE_CHAT_ROLE_HAND_OUT)

LIFECYCLE: Table[Standing, LifecycleEvent, LifecycleEffect] = table(
    (T.NONE,     LE.TRANSFER_OUT, Fail(_missing)),
    (T.NONE,     LE.TRANSFER_IN,  Go(T.ACTIVE, TRANSFERRED_IN)),
    (T.NONE,     LE.RENEW,        Fail(_missing)),
    (T.NONE,     LE.EXPIRE,       Go(T.NONE)),
    (T.NONE,     LE.START_TRIAL,  Go(T.ACTIVE, (LF.RECORD_TRIAL, LF.MINT_KEY,
                                                LF.QUEUE_CHAT_ROLE_HAND_OUT,
                                                LF.ANNOUNCE_TRIAL))),
    (T.NONE,     LE.SET_TIER,     Fail(_missing)),
    (T.NONE,     LE.REKEY,        Fail(_missing)),

    (T.ACTIVE,   LE.TRANSFER_OUT, Go(T.INACTIVE, TRANSFERRED_OUT)),
    (T.ACTIVE,   LE.TRANSFER_IN,  Fail(_owned)),
    (T.ACTIVE,   LE.RENEW,        Go(T.ACTIVE, (LF.EXTEND, LF.ANNOUNCE_RENEWED))),
    # The sweep only asks about licenses past their time, which stand as expired; an
    # active one it meets was renewed meanwhile, and is left alone.
    (T.ACTIVE,   LE.EXPIRE,       Go(T.ACTIVE)),
    (T.ACTIVE,   LE.START_TRIAL,  Fail(_trial_taken)),
    (T.ACTIVE,   LE.SET_TIER,     Go(T.ACTIVE, (LF.STORE_TIER, LF.ANNOUNCE_TIER))),
    (T.ACTIVE,   LE.REKEY,        Go(T.ACTIVE, (LF.MINT_KEY, LF.ANNOUNCE_REKEYED))),

    (T.PAUSED,   LE.TRANSFER_OUT, Fail(_paused_transfer)),
    (T.PAUSED,   LE.TRANSFER_IN,  Fail(_owned)),
    (T.PAUSED,   LE.RENEW,        Go(T.PAUSED, (LF.EXTEND, LF.ANNOUNCE_RENEWED))),
    # A paused license already lost its roles; past its time it is told as expired once.
    (T.PAUSED,   LE.EXPIRE,       Go(T.PAUSED, (LF.ANNOUNCE_EXPIRED,))),
    (T.PAUSED,   LE.START_TRIAL,  Fail(_trial_taken)),
    (T.PAUSED,   LE.SET_TIER,     Go(T.PAUSED, (LF.STORE_TIER, LF.ANNOUNCE_TIER))),
    (T.PAUSED,   LE.REKEY,        Go(T.PAUSED, (LF.MINT_KEY, LF.ANNOUNCE_REKEYED))),

    (T.EXPIRED,  LE.TRANSFER_OUT, Fail(_expired_transfer)),
    (T.EXPIRED,  LE.TRANSFER_IN,  Fail(_owned)),
    (T.EXPIRED,  LE.RENEW,        Go(T.ACTIVE, (LF.EXTEND, LF.QUEUE_CHAT_ROLE_HAND_OUT,
                                                LF.ANNOUNCE_RENEWED))),
    (T.EXPIRED,  LE.EXPIRE,       Go(T.EXPIRED, (LF.QUEUE_CHAT_ROLE_REMOVAL,
                                                 LF.ANNOUNCE_EXPIRED))),
    (T.EXPIRED,  LE.START_TRIAL,  Fail(_trial_taken)),
    (T.EXPIRED,  LE.SET_TIER,     Go(T.EXPIRED, (LF.STORE_TIER, LF.ANNOUNCE_TIER))),
    (T.EXPIRED,  LE.REKEY,        Go(T.EXPIRED, (LF.MINT_KEY, LF.ANNOUNCE_REKEYED))),

    # Nothing here restores a revoked (or transferred-away) license: only the seller's grant,
    # a row of the specification's table, does.
    (T.INACTIVE, LE.TRANSFER_OUT, Fail(_inactive_transfer)),
    (T.INACTIVE, LE.TRANSFER_IN,  Fail(_revoked_target)),
    (T.INACTIVE, LE.RENEW,        Fail(_inactive_renew)),
    (T.INACTIVE, LE.EXPIRE,       Go(T.INACTIVE)),
    (T.INACTIVE, LE.START_TRIAL,  Fail(_trial_taken)),
    (T.INACTIVE, LE.SET_TIER,     Fail(_inactive_change)),
    (T.INACTIVE, LE.REKEY,        Fail(_inactive_change)),
)


def lifecycle(standing: Standing,
              event: LifecycleEvent) -> Go[Standing, LifecycleEffect]:
    return step(LIFECYCLE, standing, event)


def refusal_of_lifecycle(standing: Standing, event: LifecycleEvent) -> LicoreError:
    """The error a refusing lifecycle row raises, for a caller that learns of the refusal
    only when storing (a record made meanwhile by a concurrent request)."""
    return refusal_of(LIFECYCLE, standing, event)


class HasTerms(Protocol):
    @property
    def state(self) -> LicenseState: ...
    @property
    def expires_at(self) -> int | None: ...


def expired(license: HasTerms, now: int) -> bool:
    return license.expires_at is not None and now >= license.expires_at


def grace_end(license: HasTerms, grace_days: int | None) -> int | None:
    """When a license leaves force: its end, plus the product's grace (docs/licenses.md,
    "Grace"). None: it never ends."""
    if license.expires_at is None:
        return None
    return license.expires_at + (grace_days or 0) * DAY


def in_grace(license: HasTerms, now: int, grace_days: int | None) -> bool:
    """Past its end, yet within the product's grace: still in force, shown as such."""
    end = grace_end(license, grace_days)
    return expired(license, now) and end is not None and now < end


def standing(license: HasTerms | None, now: int) -> Standing:
    if license is None:
        return Standing.NONE
    if license.state is LicenseState.ACTIVE:
        return Standing.EXPIRED if expired(license, now) else Standing.ACTIVE
    return Standing.PAUSED if license.state is LicenseState.PAUSED else Standing.INACTIVE


def in_force(license: HasTerms, now: int, grace_days: int | None = None) -> bool:
    """Whether the license passes the runtime checks and lets its holder download: active
    and not past its expiry and the product's grace (the specification's `passes_runtime`,
    plus time)."""
    return passes_runtime(license.state) and not (
        expired(license, now) and not in_grace(license, now, grace_days))


def status(license: HasTerms, now: int, grace_days: int | None = None) -> str:
    """What the seller sees: the stored state, or `expired` for an active or paused license
    past its time and grace (expired is not revoked: renewing brings it back)."""
    if (license.state is not LicenseState.INACTIVE and expired(license, now)
            and not in_grace(license, now, grace_days)):
        return "expired"
    return license.state.value


class PlacePolicy(enum.Enum):
    """What a call from a place past the product's place limit meets."""

    ALERT = "alert"  # it passes, and the seller gets an `unrecognised_place` alert
    ENFORCE = "enforce"  # it fails as a wrong key does, and raises the same alert


DEFAULT_PLACE_LIMIT = 3
DAY = 86400  # seconds: terms, trials and reminders are counted in days
MAX_REMINDER_DAYS = 365
MAX_GRACE_DAYS = 365
