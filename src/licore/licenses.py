"""License states and transitions (spec section 3, contract section 3)."""

from __future__ import annotations

import enum

from licore.errors import AlreadyOwned, InvalidRequest, NotFound
from licore.transitions import Fail, Go, Outcome, step


class LicenseState(enum.Enum):
    NONE = "none"  # no record for this product and user
    ACTIVE = "active"
    INACTIVE = "inactive"
    PAUSED = "paused"


class LicenseEvent(enum.Enum):
    GRANT = "POST /licenses"  # the seller's explicit act
    PURCHASE_PASS = "purchase pass verified"
    REVOKE = "DELETE /licenses"
    PAUSE = "pause"
    RESUME = "resume"


class Source(enum.Enum):
    PURCHASE_PASS = "purchase_pass"
    GRANT = "grant"


# Effects the caller performs with the state change, in the same transaction.
MINT_KEY = "mint a runtime key; queue chat roles"
CLEAR_KEY = "clear the runtime key; drop cached copies; queue chat role removal"
REVERIFY = "refresh verified_at"


def _owned() -> AlreadyOwned:
    return AlreadyOwned("the user already holds a license for this product")


def _missing() -> NotFound:
    return NotFound("no license for that user and product")


def _inactive() -> InvalidRequest:
    return InvalidRequest("the license is inactive; grant it again to re-activate it", "user")


S, E = LicenseState, LicenseEvent

LICENSES: dict[tuple[LicenseState, LicenseEvent], Outcome[LicenseState]] = {
    (S.NONE, E.GRANT): Go(S.ACTIVE, MINT_KEY),
    (S.ACTIVE, E.GRANT): Fail(_owned),
    (S.PAUSED, E.GRANT): Fail(_owned),
    (S.INACTIVE, E.GRANT): Go(S.ACTIVE, MINT_KEY),
    (S.NONE, E.PURCHASE_PASS): Go(S.ACTIVE, MINT_KEY),
    (S.ACTIVE, E.PURCHASE_PASS): Go(S.ACTIVE, REVERIFY),
    (S.PAUSED, E.PURCHASE_PASS): Go(S.PAUSED, REVERIFY),
    # Kept on purpose: a re-verified purchase pass cannot silently restore revoked access.
    (S.INACTIVE, E.PURCHASE_PASS): Go(S.INACTIVE),
    (S.NONE, E.REVOKE): Fail(_missing),
    (S.ACTIVE, E.REVOKE): Go(S.INACTIVE, CLEAR_KEY),
    (S.PAUSED, E.REVOKE): Go(S.INACTIVE, CLEAR_KEY),
    (S.INACTIVE, E.REVOKE): Go(S.INACTIVE),
    (S.NONE, E.PAUSE): Fail(_missing),
    (S.ACTIVE, E.PAUSE): Go(S.PAUSED),
    (S.PAUSED, E.PAUSE): Go(S.PAUSED),
    (S.INACTIVE, E.PAUSE): Fail(_inactive),
    (S.NONE, E.RESUME): Fail(_missing),
    (S.PAUSED, E.RESUME): Go(S.ACTIVE),
    (S.ACTIVE, E.RESUME): Go(S.ACTIVE),
    (S.INACTIVE, E.RESUME): Fail(_inactive),
}


def transition(state: LicenseState, event: LicenseEvent) -> Go[LicenseState]:
    return step(LICENSES, state, event)


def passes_runtime(state: LicenseState) -> bool:
    """Only an active license is in force; paused and inactive ones fail every runtime call."""
    return state is LicenseState.ACTIVE
