"""License states and transitions (spec section 3, contract section 3)."""

from __future__ import annotations

import enum

from licore.errors import AlreadyOwned, InvalidRequest, NotFound
from licore.transitions import Event, Fail, Go, Table, step, table


class LicenseState(enum.Enum):
    NONE = "none"  # no record for this product and user
    ACTIVE = "active"
    INACTIVE = "inactive"
    PAUSED = "paused"


class LicenseEvent(Event):
    GRANT = ("`POST /licenses`", "Product exists in the studio")  # the seller's explicit act
    PURCHASE_PASS = ("Purchase pass verified", "The platform confirms the pass is owned")
    # Whether a license matches is the state: "none" when there is none.
    REVOKE = ("`DELETE /licenses`",)
    PAUSE = ("Pause",)
    RESUME = ("Resume",)


class Source(enum.Enum):
    PURCHASE_PASS = "purchase_pass"
    GRANT = "grant"


class LicenseEffect(enum.Enum):
    """What the caller does with a row, in the same transaction (`services.licensing`)."""

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


def _inactive() -> InvalidRequest:
    return InvalidRequest("the license is inactive; grant it again to re-activate it", "user")


S, E, Fx = LicenseState, LicenseEvent, LicenseEffect
MINT = (Fx.MINT_KEY, Fx.QUEUE_CHAT_ROLE_HAND_OUT)

LICENSES: Table[LicenseState, LicenseEvent, LicenseEffect] = table(
    (S.NONE,     E.GRANT,         Go(S.ACTIVE, MINT)),
    (S.NONE,     E.PURCHASE_PASS, Go(S.ACTIVE, MINT)),
    (S.NONE,     E.REVOKE,        Fail(_missing)),
    (S.NONE,     E.PAUSE,         Fail(_missing)),
    (S.NONE,     E.RESUME,        Fail(_missing)),

    (S.ACTIVE,   E.GRANT,         Fail(_owned)),
    (S.ACTIVE,   E.PURCHASE_PASS, Go(S.ACTIVE, (Fx.REVERIFY,))),
    (S.ACTIVE,   E.REVOKE,        Go(S.INACTIVE, (Fx.CLEAR_KEY, Fx.QUEUE_CHAT_ROLE_REMOVAL))),
    (S.ACTIVE,   E.PAUSE,         Go(S.PAUSED, (Fx.QUEUE_CHAT_ROLE_REMOVAL,))),
    (S.ACTIVE,   E.RESUME,        Go(S.ACTIVE)),

    (S.PAUSED,   E.GRANT,         Fail(_owned)),
    (S.PAUSED,   E.PURCHASE_PASS, Go(S.PAUSED, (Fx.REVERIFY,))),
    (S.PAUSED,   E.REVOKE,        Go(S.INACTIVE, (Fx.CLEAR_KEY, Fx.QUEUE_CHAT_ROLE_REMOVAL))),
    (S.PAUSED,   E.PAUSE,         Go(S.PAUSED)),
    (S.PAUSED,   E.RESUME,        Go(S.ACTIVE, (Fx.QUEUE_CHAT_ROLE_HAND_OUT,))),

    # The record is kept on purpose: a re-verified purchase pass cannot silently restore
    # revoked access; only the seller's grant re-activates it.
    (S.INACTIVE, E.GRANT,         Go(S.ACTIVE, MINT)),
    (S.INACTIVE, E.PURCHASE_PASS, Go(S.INACTIVE)),
    (S.INACTIVE, E.REVOKE,        Go(S.INACTIVE)),
    (S.INACTIVE, E.PAUSE,         Fail(_inactive)),
    (S.INACTIVE, E.RESUME,        Fail(_inactive)),
)


def transition(state: LicenseState, event: LicenseEvent) -> Go[LicenseState, LicenseEffect]:
    return step(LICENSES, state, event)


def passes_runtime(state: LicenseState) -> bool:
    """Only an active license is in force; paused and inactive ones fail every runtime call."""
    return state is LicenseState.ACTIVE
