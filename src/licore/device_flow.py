"""Device authorization states and transitions (spec sections 3 and 8, contract section 6)."""

from __future__ import annotations

import enum

import attrs

from licore.errors import (
    AccessDenied,
    ApprovalRefused,
    AuthorizationPending,
    ClientDisabled,
    ExpiredToken,
    InvalidClient,
    LicoreError,
    NotFound,
)
from licore.transitions import Event, Fail, Go, Table, refusal_of, step, table

SLOW_DOWN_STEP = 5  # RFC 8628 section 3.5
MAX_INTERVAL = 60  # some clients keep polling at the original interval; don't grow forever
POLL_SLACK = 1  # about a second of timing slack (contract 6)
WRONG_ENTRY_LIMIT = 5

USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"  # RFC 8628 section 6.1: no vowels, no look-alikes
USER_CODE_LENGTH = 8


class DeviceState(enum.Enum):
    NONE = "none"  # no authorization for this code (never stored)
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
    BURNED = "burned"
    CLAIMED = "claimed"


class DeviceEvent(Event):
    REQUEST_CODE = ("`POST /device/code`", "Valid `client_id` and at least one available scope",
                    True)
    POLL = ("Poll `/device/token`", "Not faster than `interval`")
    POLL_TOO_FAST = ("Poll too fast", "Faster than `interval`")
    APPROVE = ("User approves", "Approver holds at least one requested scope")
    APPROVE_NOTHING_SURVIVES = ("User approves", "No requested scope survives the filter")
    DENY = ("User denies",)
    TIME_PASSES = ("600 seconds pass",)
    BURN = ("5 wrong code entries",)
    # The operator disabled the app since the code was issued (`licore client disable`).
    # The guard is read with the record, in the same transaction as the poll or decision.
    POLL_CLIENT_DISABLED = ("Poll `/device/token`", "The app is disabled")
    DECIDE_CLIENT_DISABLED = ("User approves or denies, or opens the consent page",
                              "The app is disabled")


class DeviceEffect(enum.Enum):
    """What the caller does with a row, in the same transaction (`services.device`)."""

    ISSUE_CODES = "Codes returned"
    # The answer is an effect rather than a `Fail` row because it carries the grown interval
    # and the grown interval is stored: the poll is refused and yet changes the record.
    SLOW_DOWN = "The interval grows by 5 seconds (at most 60). HTTP 400, `slow_down`"
    GRANT_FILTERED = "The scope list is filtered to what the approver may grant"
    ISSUE_KEY = "Key returned once"


def _pending() -> LicoreError:
    return AuthorizationPending("the user has not approved yet; keep polling")


def _denied() -> LicoreError:
    return AccessDenied("the user refused the authorization")


def _expired() -> LicoreError:
    return ExpiredToken("the code expired or was already used; start over")


def _unknown() -> LicoreError:
    return ExpiredToken("unknown device_code; start over")


def _no_such_code() -> LicoreError:
    return NotFound("no authorization with that code")


def _nothing_survives() -> LicoreError:
    return ApprovalRefused("you may not grant any of the scopes this app asks for")


def _not_pending() -> LicoreError:
    return ExpiredToken("this code is no longer waiting for approval")


def _client_disabled() -> LicoreError:
    return InvalidClient("the app this code was issued to has been disabled; the operator "
                         "stopped it, so no key will be issued")


def _client_disabled_page() -> LicoreError:
    return ClientDisabled("this app has been disabled by the operator of this service, so "
                          "it can no longer be approved; nothing was granted")


S, E, Fx = DeviceState, DeviceEvent, DeviceEffect

# Every cell is written. Approving, denying or burning is for a pending authorization only; a
# code that is gone polls as expired (RFC 8628: start over). Burning a session whose code is
# no longer pending leaves that code as it is.
DEVICE_FLOW: Table[DeviceState, DeviceEvent, DeviceEffect] = table(
    (S.NONE,     E.REQUEST_CODE,             Go(S.PENDING, (Fx.ISSUE_CODES,))),
    (S.NONE,     E.POLL,                     Fail(_unknown)),
    (S.NONE,     E.POLL_TOO_FAST,            Fail(_unknown)),
    (S.NONE,     E.APPROVE,                  Fail(_no_such_code)),
    (S.NONE,     E.APPROVE_NOTHING_SURVIVES, Fail(_no_such_code)),
    (S.NONE,     E.DENY,                     Fail(_no_such_code)),
    (S.NONE,     E.TIME_PASSES,              Go(S.NONE)),
    (S.NONE,     E.BURN,                     Go(S.NONE)),
    (S.NONE,     E.POLL_CLIENT_DISABLED,     Fail(_unknown)),
    (S.NONE,     E.DECIDE_CLIENT_DISABLED,   Fail(_no_such_code)),

    (S.PENDING,  E.POLL,                     Fail(_pending)),
    (S.PENDING,  E.POLL_TOO_FAST,            Go(S.PENDING, (Fx.SLOW_DOWN,))),
    (S.PENDING,  E.APPROVE,                  Go(S.APPROVED, (Fx.GRANT_FILTERED,))),
    (S.PENDING,  E.APPROVE_NOTHING_SURVIVES, Fail(_nothing_survives)),
    (S.PENDING,  E.DENY,                     Go(S.DENIED)),
    (S.PENDING,  E.TIME_PASSES,              Go(S.EXPIRED)),
    (S.PENDING,  E.BURN,                     Go(S.BURNED)),
    (S.PENDING,  E.POLL_CLIENT_DISABLED,     Fail(_client_disabled)),
    (S.PENDING,  E.DECIDE_CLIENT_DISABLED,   Fail(_client_disabled_page)),

    (S.APPROVED, E.POLL,                     Go(S.CLAIMED, (Fx.ISSUE_KEY,))),
    # The key is ready, so even a hasty poll gets it rather than slow_down.
    (S.APPROVED, E.POLL_TOO_FAST,            Go(S.CLAIMED, (Fx.ISSUE_KEY,))),
    (S.APPROVED, E.APPROVE,                  Fail(_not_pending)),
    (S.APPROVED, E.APPROVE_NOTHING_SURVIVES, Fail(_not_pending)),
    (S.APPROVED, E.DENY,                     Fail(_not_pending)),
    (S.APPROVED, E.TIME_PASSES,              Go(S.EXPIRED)),
    (S.APPROVED, E.BURN,                     Go(S.APPROVED)),
    (S.APPROVED, E.POLL_CLIENT_DISABLED,     Fail(_client_disabled)),
    (S.APPROVED, E.DECIDE_CLIENT_DISABLED,   Fail(_client_disabled_page)),

    (S.CLAIMED,  E.POLL,                     Fail(_expired)),
    (S.CLAIMED,  E.POLL_TOO_FAST,            Fail(_expired)),
    (S.CLAIMED,  E.APPROVE,                  Fail(_not_pending)),
    (S.CLAIMED,  E.APPROVE_NOTHING_SURVIVES, Fail(_not_pending)),
    (S.CLAIMED,  E.DENY,                     Fail(_not_pending)),
    (S.CLAIMED,  E.TIME_PASSES,              Go(S.CLAIMED)),
    (S.CLAIMED,  E.BURN,                     Go(S.CLAIMED)),
    (S.CLAIMED,  E.POLL_CLIENT_DISABLED,     Fail(_expired)),
    (S.CLAIMED,  E.DECIDE_CLIENT_DISABLED,   Fail(_not_pending)),

    (S.DENIED,   E.POLL,                     Fail(_denied)),
    (S.DENIED,   E.POLL_TOO_FAST,            Fail(_denied)),
    (S.DENIED,   E.APPROVE,                  Fail(_not_pending)),
    (S.DENIED,   E.APPROVE_NOTHING_SURVIVES, Fail(_not_pending)),
    (S.DENIED,   E.DENY,                     Fail(_not_pending)),
    (S.DENIED,   E.TIME_PASSES,              Go(S.DENIED)),
    (S.DENIED,   E.BURN,                     Go(S.DENIED)),
    (S.DENIED,   E.POLL_CLIENT_DISABLED,     Fail(_client_disabled)),
    (S.DENIED,   E.DECIDE_CLIENT_DISABLED,   Fail(_not_pending)),

    (S.EXPIRED,  E.POLL,                     Fail(_expired)),
    (S.EXPIRED,  E.POLL_TOO_FAST,            Fail(_expired)),
    (S.EXPIRED,  E.APPROVE,                  Fail(_not_pending)),
    (S.EXPIRED,  E.APPROVE_NOTHING_SURVIVES, Fail(_not_pending)),
    (S.EXPIRED,  E.DENY,                     Fail(_not_pending)),
    (S.EXPIRED,  E.TIME_PASSES,              Go(S.EXPIRED)),
    (S.EXPIRED,  E.BURN,                     Go(S.EXPIRED)),
    (S.EXPIRED,  E.POLL_CLIENT_DISABLED,     Fail(_expired)),
    (S.EXPIRED,  E.DECIDE_CLIENT_DISABLED,   Fail(_not_pending)),

    (S.BURNED,   E.POLL,                     Fail(_expired)),
    (S.BURNED,   E.POLL_TOO_FAST,            Fail(_expired)),
    (S.BURNED,   E.APPROVE,                  Fail(_not_pending)),
    (S.BURNED,   E.APPROVE_NOTHING_SURVIVES, Fail(_not_pending)),
    (S.BURNED,   E.DENY,                     Fail(_not_pending)),
    (S.BURNED,   E.TIME_PASSES,              Go(S.BURNED)),
    (S.BURNED,   E.BURN,                     Go(S.BURNED)),
    (S.BURNED,   E.POLL_CLIENT_DISABLED,     Fail(_expired)),
    (S.BURNED,   E.DECIDE_CLIENT_DISABLED,   Fail(_not_pending)),
)


def transition(state: DeviceState, event: DeviceEvent) -> Go[DeviceState, DeviceEffect]:
    return step(DEVICE_FLOW, state, event)


def refusal(state: DeviceState, event: DeviceEvent) -> LicoreError:
    """The error of a row that refuses (for the caller to raise where it has no record)."""
    return refusal_of(DEVICE_FLOW, state, event)


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
