"""API key lifecycle (spec section 3 "API key", section 5 rules 5 to 7, contract 7)."""

from __future__ import annotations

import enum

from licore.errors import InvalidToken
from licore.transitions import Fail, Go, Outcome, step

IDLE_LIMIT = 60 * 24 * 3600  # unused for 60 days, then revoked
TOUCH_EVERY = 60  # coalesce last_used_at writes to one a key a minute


class KeyState(enum.Enum):
    ACTIVE = "active"
    REVOKED = "revoked"


class KeyEvent(enum.Enum):
    USE = "a request carries the key"
    HOLDER_REVOKES = "holder calls POST /revoke"
    USER_REVOKES = "revoked in the connected-apps list"
    IDLE_60_DAYS = "unused for 60 days"


REVOKE = "record revoked_at"


def _invalid() -> InvalidToken:
    return InvalidToken("the key is unknown, revoked or expired")


S, E = KeyState, KeyEvent

API_KEYS: dict[tuple[KeyState, KeyEvent], Outcome[KeyState]] = {
    (S.ACTIVE, E.USE): Go(S.ACTIVE),
    (S.ACTIVE, E.HOLDER_REVOKES): Go(S.REVOKED, REVOKE),
    (S.ACTIVE, E.USER_REVOKES): Go(S.REVOKED, REVOKE),
    (S.ACTIVE, E.IDLE_60_DAYS): Go(S.REVOKED, REVOKE),
    (S.REVOKED, E.USE): Fail(_invalid),
    (S.REVOKED, E.HOLDER_REVOKES): Fail(_invalid),
    # Revoking from the list twice is harmless: the person sees it gone either way.
    (S.REVOKED, E.USER_REVOKES): Go(S.REVOKED),
    (S.REVOKED, E.IDLE_60_DAYS): Go(S.REVOKED),
}


def transition(state: KeyState, event: KeyEvent) -> Go[KeyState]:
    return step(API_KEYS, state, event)


def state_at(revoked_at: int | None, last_used_at: int, now: int) -> KeyState:
    """The key's state once idleness is taken into account."""
    if revoked_at is not None:
        return KeyState.REVOKED
    if now - last_used_at >= IDLE_LIMIT:
        return transition(KeyState.ACTIVE, KeyEvent.IDLE_60_DAYS).next
    return KeyState.ACTIVE


def needs_touch(last_used_at: int, now: int) -> bool:
    return now - last_used_at >= TOUCH_EVERY
