"""API key lifecycle (spec section 3 "API key", section 5 rules 5 to 7, contract 7)."""

from __future__ import annotations

import enum

from licore.errors import InvalidToken
from licore.transitions import Event, Fail, Go, Table, step, table

IDLE_LIMIT = 60 * 24 * 3600  # unused for 60 days, then revoked
TOUCH_EVERY = 60  # coalesce last_used_at writes to one a key a minute


class KeyState(enum.Enum):
    ACTIVE = "active"
    REVOKED = "revoked"


class KeyEvent(Event):
    USE = ("A request carries the key",)
    HOLDER_REVOKES = ("Holder calls `POST /revoke`",)
    USER_REVOKES = ("User revokes it in the connected-apps list",
                    "Effective on the next request")
    IDLE_60_DAYS = ("Unused for 60 days",)


class KeyEffect(enum.Enum):
    """What the caller does with a row, in the same transaction (`services.device`)."""

    RECORD_REVOKED = "`revoked_at` is recorded; the key yields `invalid_token` from now on"


def _invalid() -> InvalidToken:
    return InvalidToken("the key is unknown, revoked or expired")


S, E, Fx = KeyState, KeyEvent, KeyEffect

API_KEYS: Table[KeyState, KeyEvent, KeyEffect] = table(
    (S.ACTIVE,  E.USE,            Go(S.ACTIVE)),
    (S.ACTIVE,  E.HOLDER_REVOKES, Go(S.REVOKED, (Fx.RECORD_REVOKED,))),
    (S.ACTIVE,  E.USER_REVOKES,   Go(S.REVOKED, (Fx.RECORD_REVOKED,))),
    (S.ACTIVE,  E.IDLE_60_DAYS,   Go(S.REVOKED, (Fx.RECORD_REVOKED,))),

    (S.REVOKED, E.USE,            Fail(_invalid)),
    (S.REVOKED, E.HOLDER_REVOKES, Fail(_invalid)),
    # Revoking from the list twice is harmless: the person sees it gone either way.
    (S.REVOKED, E.USER_REVOKES,   Go(S.REVOKED)),
    (S.REVOKED, E.IDLE_60_DAYS,   Go(S.REVOKED)),
)


def transition(state: KeyState, event: KeyEvent) -> Go[KeyState, KeyEffect]:
    return step(API_KEYS, state, event)


def is_idle(last_used_at: int, now: int) -> bool:
    return now - last_used_at >= IDLE_LIMIT


def state_at(revoked_at: int | None, last_used_at: int, now: int) -> KeyState:
    """The key's state once idleness is taken into account."""
    if revoked_at is not None:
        return KeyState.REVOKED
    if is_idle(last_used_at, now):
        return transition(KeyState.ACTIVE, KeyEvent.IDLE_60_DAYS).next
    return KeyState.ACTIVE


def needs_touch(last_used_at: int, now: int) -> bool:
    return now - last_used_at >= TOUCH_EVERY
