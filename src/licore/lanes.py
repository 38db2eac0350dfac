"""How the outbox's messages are scheduled (docs/events.md, "How delivery is scheduled"):
which pending messages may go now, and the circuit breaker that backs off one destination.

Every message belongs to a lane, the destination whose order it keeps: a webhook endpoint, a
chat role, or (a fan-out message) itself. A lane has at most one message in flight, and that
message is the lane's oldest pending one (by id, which sorts by creation time): a later
message waits until the earlier one is delivered, skipped or dead, retries included. So a
receiver sees its events in the order they happened, and a destination that hangs holds one
slot, not the queue. A studio has at most `per_studio` messages in flight at once, across all
workers, so one seller's many dead endpoints cannot fill every worker's slots.

A lane whose attempts fail `trip_after` times in a row opens its breaker: none of its messages
goes until a cool-down ends (doubling each time it opens again, up to a cap); then the next
message goes alone as a probe (half-open), and its outcome closes the breaker or opens it again.

Pure: storage applies `plan` in one transaction (SQL transcribes it, the contract tests hold the
two together); the workers run the chosen messages concurrently.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from licore.transitions import Event, Go, Table, step, table

if TYPE_CHECKING:
    from licore.events import Message

STUDIO_SLOTS = 4  # a studio's messages in flight at once, across every worker


def lane_of(kind: str, target: str, message_id: str) -> str:
    """The lane a message keeps its order in: its endpoint, its chat role, or (a fan-out,
    which no other message is ordered against) itself."""
    if kind == "fan_out":
        return f"fan:{message_id}"
    if kind == "chat_role":
        return f"chat:{target}"
    return f"hook:{target}"


class BreakerState(enum.Enum):
    CLOSED = "closed"  # messages go as they come due
    OPEN = "open"  # nothing goes until `open_until`
    HALF_OPEN = "half_open"  # one probe is out; its outcome decides


class BreakerEvent(Event):
    SUCCEEDED = ("an attempt succeeded",)
    FAILED = ("an attempt failed", "fewer than `trip_after` failures in a row")
    FAILED_ENOUGH = ("an attempt failed", "`trip_after` or more failures in a row")
    COOLED = ("the lane's next message is claimed", "the cool-down is over")


class BreakerEffect(enum.Enum):
    CLEAR = "The run of failures ends"
    COUNT = "One more failure in a row is counted"
    COOL_DOWN = ("Nothing of the lane goes until the cool-down ends (30 s, doubling each "
                 "time it opens again, up to an hour)")


B, BE, BX = BreakerState, BreakerEvent, BreakerEffect

BREAKER: Table[BreakerState, BreakerEvent, BreakerEffect] = table(
    (B.CLOSED,    BE.SUCCEEDED,     Go(B.CLOSED, (BX.CLEAR,))),
    (B.CLOSED,    BE.FAILED,        Go(B.CLOSED, (BX.COUNT,))),
    (B.CLOSED,    BE.FAILED_ENOUGH, Go(B.OPEN, (BX.COUNT, BX.COOL_DOWN))),
    (B.CLOSED,    BE.COOLED,        Go(B.CLOSED)),

    (B.OPEN,      BE.COOLED,        Go(B.HALF_OPEN)),
    # Only a send that outlived its lease can end while the breaker is open: take its word.
    (B.OPEN,      BE.SUCCEEDED,     Go(B.CLOSED, (BX.CLEAR,))),
    (B.OPEN,      BE.FAILED,        Go(B.OPEN, (BX.COUNT,))),
    (B.OPEN,      BE.FAILED_ENOUGH, Go(B.OPEN, (BX.COUNT,))),

    (B.HALF_OPEN, BE.SUCCEEDED,     Go(B.CLOSED, (BX.CLEAR,))),
    (B.HALF_OPEN, BE.FAILED,        Go(B.OPEN, (BX.COUNT, BX.COOL_DOWN))),
    (B.HALF_OPEN, BE.FAILED_ENOUGH, Go(B.OPEN, (BX.COUNT, BX.COOL_DOWN))),
    # The probe's worker died and its lease ran out: the retaken message is the probe.
    (B.HALF_OPEN, BE.COOLED,        Go(B.HALF_OPEN)),
)


@attrs.frozen
class BreakerPolicy:
    trip_after: int = 5  # failures in a row that open the breaker
    cool_down: int = 30  # seconds the first opening lasts
    cap: int = 3600  # the longest cool-down


@attrs.frozen
class Breaker:
    """A lane's breaker. The default (closed, no failures) is kept by not storing it."""

    state: BreakerState = BreakerState.CLOSED
    failures: int = 0  # in a row
    opened: int = 0  # openings since the last success: the cool-down doubles with each
    open_until: int = 0


def outcome(breaker: Breaker, ok: bool, policy: BreakerPolicy) -> BreakerEvent:
    """The event one attempt's outcome is to the lane's breaker."""
    if ok:
        return BreakerEvent.SUCCEEDED
    if breaker.failures + 1 >= policy.trip_after:
        return BreakerEvent.FAILED_ENOUGH
    return BreakerEvent.FAILED


def after(breaker: Breaker, event: BreakerEvent, now: int, policy: BreakerPolicy) -> Breaker:
    """The breaker once `event` happened at `now`, by the table."""
    go = step(BREAKER, breaker.state, event)
    result = attrs.evolve(breaker, state=go.next)
    for effect in go.effects:
        match effect:
            case BreakerEffect.CLEAR:
                result = Breaker()
            case BreakerEffect.COUNT:
                result = attrs.evolve(result, failures=result.failures + 1)
            case BreakerEffect.COOL_DOWN:
                wait = min(policy.cap, policy.cool_down * 2 ** min(result.opened, 20))
                result = attrs.evolve(result, opened=result.opened + 1,
                                      open_until=now + wait)
    return result


def holds(breaker: Breaker | None, now: int) -> bool:
    """Whether the breaker keeps its lane's messages back at `now`."""
    return (breaker is not None and breaker.state is BreakerState.OPEN
            and breaker.open_until > now)


def _heads_and_leases(pending: Iterable[Message], now: int
                      ) -> tuple[dict[str, Message], dict[str, int]]:
    """Each lane's oldest pending message, and how many each studio has leased now."""
    by_lane: dict[str, Message] = {}
    busy: dict[str, int] = {}
    for m in pending:
        if m.state.value != "pending":
            continue
        if m.claimed_until is not None and m.claimed_until >= now:
            busy[m.studio_id] = busy.get(m.studio_id, 0) + 1
        first = by_lane.get(m.lane)
        if first is None or m.id < first.id:
            by_lane[m.lane] = m
    return by_lane, busy


def _may_go(head: Message, breakers: Mapping[str, Breaker], now: int) -> bool:
    """A lane's head goes when due, not leased (or its lease ran out) and its breaker does
    not hold it."""
    return (head.next_attempt_at <= now
            and (head.claimed_until is None or head.claimed_until < now)
            and not holds(breakers.get(head.lane), now))


def plan(pending: Iterable[Message], breakers: Mapping[str, Breaker], now: int, limit: int,
         per_studio: int = STUDIO_SLOTS) -> list[Message]:
    """Which of the pending messages go now, at most `limit`, in the order to start them.

    A candidate is the oldest pending message of its lane, due, not leased (or its lease ran
    out), and its lane's breaker does not hold it. A studio with `n` messages leased gets at
    most `per_studio - n` more. Candidates are taken studio by studio in turns (each studio's
    longest due first), so a studio with many due lanes cannot crowd the others out of a
    round; within a turn, the longest due first, then by id."""
    by_lane, busy = _heads_and_leases(pending, now)
    ready = sorted((m for m in by_lane.values() if _may_go(m, breakers, now)),
                   key=lambda m: (m.next_attempt_at, m.id))
    turns: dict[str, int] = {}
    ranked: list[tuple[int, int, str, Message]] = []
    for m in ready:
        turn = turns[m.studio_id] = turns.get(m.studio_id, 0) + 1
        if turn + busy.get(m.studio_id, 0) <= per_studio:
            ranked.append((turn, m.next_attempt_at, m.id, m))
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked[:limit]]
