"""Device authorization states and transitions (spec sections 3 and 8, contract section 6)."""

from __future__ import annotations

import enum

import attrs

from licore.errors import (
    AccessDenied,
    ApprovalRefused,
    AuthorizationPending,
    ExpiredToken,
    LicoreError,
)
from licore.transitions import Fail, Go, Outcome, step

LIFETIME = 600  # seconds, spec section 8
INTERVAL = 5  # seconds between polls, spec section 8
SLOW_DOWN_STEP = 5  # RFC 8628 section 3.5
MAX_INTERVAL = 60  # some clients keep polling at the original interval; don't grow forever
POLL_SLACK = 1  # about a second of timing slack (contract 6)
WRONG_ENTRY_LIMIT = 5

USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"  # RFC 8628 section 6.1: no vowels, no look-alikes
USER_CODE_LENGTH = 8


class DeviceState(enum.Enum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
    BURNED = "burned"
    CLAIMED = "claimed"


class DeviceEvent(enum.Enum):
    POLL = "poll /device/token"
    POLL_TOO_FAST = "poll faster than interval"
    APPROVE = "user approves (a scope survives)"
    APPROVE_NOTHING_SURVIVES = "user approves (no scope survives)"
    DENY = "user denies"
    TIME_PASSES = "600 seconds pass"
    BURN = "5 wrong code entries"


# Side effects.
ISSUE_KEY = "issue the key, returned once"
GROW_INTERVAL = "add 5 seconds to the interval"
FILTER_SCOPES = "keep only the scopes the approver may grant"


def _pending() -> LicoreError:
    return AuthorizationPending("the user has not approved yet; keep polling")


def _denied() -> LicoreError:
    return AccessDenied("the user refused the authorization")


def _expired() -> LicoreError:
    return ExpiredToken("the code expired or was already used; start over")


def _nothing_survives() -> LicoreError:
    return ApprovalRefused("you may not grant any of the scopes this app asks for")


def _not_pending() -> LicoreError:
    return ExpiredToken("this code is no longer waiting for approval")


S, E = DeviceState, DeviceEvent

DEVICE_FLOW: dict[tuple[DeviceState, DeviceEvent], Outcome[DeviceState]] = {
    (S.PENDING, E.POLL): Fail(_pending),
    (S.PENDING, E.POLL_TOO_FAST): Go(S.PENDING, GROW_INTERVAL),  # answered with slow_down
    (S.PENDING, E.APPROVE): Go(S.APPROVED, FILTER_SCOPES),
    (S.PENDING, E.APPROVE_NOTHING_SURVIVES): Fail(_nothing_survives),
    (S.PENDING, E.DENY): Go(S.DENIED),
    (S.PENDING, E.TIME_PASSES): Go(S.EXPIRED),
    (S.PENDING, E.BURN): Go(S.BURNED),
    (S.APPROVED, E.POLL): Go(S.CLAIMED, ISSUE_KEY),
    (S.APPROVED, E.POLL_TOO_FAST): Go(S.CLAIMED, ISSUE_KEY),  # the key is ready; hand it over
    (S.APPROVED, E.TIME_PASSES): Go(S.EXPIRED),
    (S.CLAIMED, E.POLL): Fail(_expired),
    (S.CLAIMED, E.POLL_TOO_FAST): Fail(_expired),
    (S.DENIED, E.POLL): Fail(_denied),
    (S.DENIED, E.POLL_TOO_FAST): Fail(_denied),
    (S.EXPIRED, E.POLL): Fail(_expired),
    (S.EXPIRED, E.POLL_TOO_FAST): Fail(_expired),
    (S.BURNED, E.POLL): Fail(_expired),
    (S.BURNED, E.POLL_TOO_FAST): Fail(_expired),
}
# Approving, denying or burning anything but a pending authorization is refused the same way.
for _state in (S.APPROVED, S.DENIED, S.EXPIRED, S.BURNED, S.CLAIMED):
    for _event in (E.APPROVE, E.APPROVE_NOTHING_SURVIVES, E.DENY, E.BURN):
        DEVICE_FLOW.setdefault((_state, _event), Fail(_not_pending))
for _state in (S.DENIED, S.EXPIRED, S.BURNED, S.CLAIMED):
    DEVICE_FLOW[(_state, E.TIME_PASSES)] = Go(_state)


def transition(state: DeviceState, event: DeviceEvent) -> Go[DeviceState]:
    return step(DEVICE_FLOW, state, event)


@attrs.frozen
class Timing:
    """What the poll clock of one authorization knows."""

    created_at: int
    expires_at: int
    interval: int
    last_poll_at: int | None


def effective_state(state: DeviceState, timing: Timing, now: int) -> DeviceState:
    """The stored state after letting time pass: past its lifetime it is expired."""
    if now >= timing.expires_at:
        return transition(state, DeviceEvent.TIME_PASSES).next
    return state


def poll_event(timing: Timing, now: int) -> DeviceEvent:
    if timing.last_poll_at is not None and now - timing.last_poll_at < timing.interval - POLL_SLACK:
        return DeviceEvent.POLL_TOO_FAST
    return DeviceEvent.POLL


def grown_interval(interval: int) -> int:
    return min(interval + SLOW_DOWN_STEP, MAX_INTERVAL)


def normalize_user_code(entered: str) -> str:
    """Entry is case-insensitive and ignores hyphens and spaces (contract 6)."""
    return "".join(ch for ch in entered.upper() if ch not in "- \t")


def format_user_code(code: str) -> str:
    return f"{code[:4]}-{code[4:]}"


def is_well_formed_user_code(normalized: str) -> bool:
    return len(normalized) == USER_CODE_LENGTH and all(
        ch in USER_CODE_ALPHABET for ch in normalized
    )
