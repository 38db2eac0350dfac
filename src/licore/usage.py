"""Usage over time (docs/api.md, "Usage"): runtime calls rolled up per product and hour.

Pure: what a call leaves behind (`Call`), the rollup of a batch of them (`Tally`), the query
a seller asks (`UsageOf`, bounded) and the series it is answered with (`Series`). The
storage adapter writes a `Tally` with the runtime batch it already sends; this module never
sees a database."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from licore import bounds
from licore.errors import InvalidRequest

HOUR = 3600
DAY = 86400
MAX_POINTS = 2400  # points in one answer: 100 days by the hour, 6.5 years by the day


class Endpoint(enum.StrEnum):
    CHECK = "check"
    UNLOCK = "unlock"
    VERSION = "version"
    UPDATE = "update"
    VERIFY_SOURCE = "verify_source"


class Outcome(enum.StrEnum):
    OK = "ok"  # the call passed
    DENIED = "denied"  # the call failed (every denial looks alike to the game)
    RATE_LIMITED = "rate_limited"  # refused before any decision (429)


class Call(NamedTuple):
    """One runtime call as the rollup sees it. A named tuple: one is made per call."""

    product_id: str  # the product the call names; the store keeps only existing products'
    hour: int  # the start of the UTC hour it came in
    endpoint: str
    outcome: str
    user_id: str
    game_id: str | None


def hour_of(t: int) -> int:
    return t - t % HOUR


CountKey = tuple[str, int, str, str]  # product, hour, endpoint, outcome
SeenKey = tuple[str, int, str]  # product, hour, user (or place)


@attrs.frozen
class Tally:
    """What a batch of calls adds: counts by product, hour, endpoint and outcome, and the
    users and places that passed a call in that product and hour (a denied call's user id
    is only the caller's claim, so it is not counted as a user)."""

    counts: dict[CountKey, int] = attrs.field(factory=dict)
    users: frozenset[SeenKey] = frozenset()
    places: frozenset[SeenKey] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.counts)

    def plus(self, other: Tally) -> Tally:
        return Tally(dict(Counter(self.counts) + Counter(other.counts)),
                     self.users | other.users, self.places | other.places)


def tally(calls: Iterable[Call]) -> Tally:
    counts: Counter[CountKey] = Counter()
    users: set[SeenKey] = set()
    places: set[SeenKey] = set()
    for c in calls:
        counts[(c.product_id, c.hour, c.endpoint, c.outcome)] += 1
        if c.outcome == Outcome.OK:
            users.add((c.product_id, c.hour, c.user_id))
            if c.game_id is not None:
                places.add((c.product_id, c.hour, c.game_id))
    return Tally(dict(counts), frozenset(users), frozenset(places))


class Granularity(enum.StrEnum):
    HOUR = "hour"
    DAY = "day"

    @property
    def seconds(self) -> int:
        return HOUR if self is Granularity.HOUR else DAY


def _granularity(value: str | Granularity) -> Granularity:
    try:
        return Granularity(value)
    except ValueError:
        raise InvalidRequest("granularity must be hour or day", "granularity") from None


@attrs.frozen
class UsageOf:
    """`GET /v1/usage`: one product's usage, or the studio's (no `product_id`), from `start`
    (included) to `end` (excluded), unix seconds, in points of `granularity`. Both ends
    are rounded down to the point they fall in, `end` up, so a point is never cut."""

    start: int = attrs.field(validator=bounds.WholeNumber(0, 1 << 40))
    end: int = attrs.field(validator=bounds.WholeNumber(0, 1 << 40))
    product_id: str | None = attrs.field(default=None, validator=bounds.IDENTIFIER)
    granularity: Granularity = attrs.field(default=Granularity.HOUR, converter=_granularity)
    csv: bool = False  # how the answer is written (an export); the series is the same

    def __attrs_post_init__(self) -> None:
        if self.end <= self.start:
            raise InvalidRequest("to must be after from", "to")
        if len(self.points()) > MAX_POINTS:
            raise InvalidRequest(f"from to to spans {len(self.points()):,} points of a "
                                 f"{self.granularity.value}; at most {MAX_POINTS:,} a call "
                                 "(ask a shorter range, or granularity=day)", "to")

    @property
    def step(self) -> int:
        return self.granularity.seconds

    @property
    def first(self) -> int:
        return self.start - self.start % self.step

    @property
    def last(self) -> int:
        """The end of the last point (excluded)."""
        return -(-self.end // self.step) * self.step

    def points(self) -> range:
        return range(self.first, self.last, self.step)


class Happened(enum.StrEnum):
    """What is counted at a state change, in its unit of work (not on the hot path)."""

    GRANTED = "granted"  # a license granted by the seller (or reactivated), trials too
    CLAIMED = "claimed"  # a license a buyer claimed (the platform confirmed the purchase)
    EXPIRED = "expired"
    REVOKED = "revoked"
    DOWNLOAD = "download"  # a buyer's copy downloaded; `subject` is the version's label


LICENSE_EVENTS = (Happened.GRANTED, Happened.CLAIMED, Happened.EXPIRED, Happened.REVOKED)


class EventCount(NamedTuple):
    start: int
    kind: str
    subject: str  # the version label of a download; "" otherwise
    times: int


class CallCount(NamedTuple):
    start: int  # the point's start
    endpoint: str
    outcome: str
    calls: int


class Reach(NamedTuple):
    start: int
    users: int  # distinct users that passed a call
    places: int  # distinct places calls passed from
    new_places: int  # places first seen in the point


@attrs.frozen
class Point:
    start: int
    calls: dict[str, dict[str, int]]  # endpoint -> outcome -> count, every name present
    users: int
    places: int
    new_places: int
    licenses: dict[str, int] = attrs.field(factory=dict)  # Happened -> count, each present
    downloads: dict[str, int] = attrs.field(factory=dict)  # version label -> count

    @property
    def total(self) -> int:
        return sum(n for by in self.calls.values() for n in by.values())


@attrs.frozen
class Series:
    query: UsageOf
    points: tuple[Point, ...]


def series(query: UsageOf, calls: Sequence[CallCount], reach: Sequence[Reach],
           events: Sequence[EventCount] = ()) -> Series:
    """Every point of the range, empty ones too (a chart needs its zeros)."""
    happened: dict[int, dict[str, int]] = {}
    downloads: dict[int, dict[str, int]] = {}
    for e in events:
        into = downloads if e.kind == Happened.DOWNLOAD else happened
        key = e.subject if e.kind == Happened.DOWNLOAD else e.kind
        by_kind = into.setdefault(e.start, {})
        by_kind[key] = by_kind.get(key, 0) + e.times
    counted: dict[int, dict[str, dict[str, int]]] = {}
    for start, endpoint, outcome, count in calls:
        by = counted.setdefault(start, {})
        by.setdefault(endpoint, {})[outcome] = by.get(endpoint, {}).get(outcome, 0) + count
    reached = {r.start: r for r in reach}
    points = []
    for start in query.points():
        by = counted.get(start, {})
        r = reached.get(start, Reach(start, 0, 0, 0))
        points.append(Point(start, {e.value: {o.value: by.get(e, {}).get(o, 0)
                                              for o in Outcome} for e in Endpoint},
                            r.users, r.places, r.new_places,
                            {k.value: happened.get(start, {}).get(k, 0)
                             for k in LICENSE_EVENTS},
                            dict(sorted(downloads.get(start, {}).items()))))
    return Series(query, tuple(points))


PERIODS = (7, 30, 90)  # the dashboard's choices, in days


def recent(now: int, days: int, product_id: str | None) -> UsageOf:
    """The last `days` days up to the current hour, by the hour for a week, else by day."""
    if days not in PERIODS:
        raise InvalidRequest("days must be 7, 30 or 90", "days")
    granularity = Granularity.HOUR if days <= 7 else Granularity.DAY
    end = hour_of(now) + HOUR
    return UsageOf(end - days * DAY, end, product_id, granularity)


def license_event(topic: str, data: Mapping[str, Any]) -> Happened | None:
    """What an announced license event counts as: a grant whose license came from a
    confirmed purchase is a claim."""
    if "product_id" not in data:
        return None
    if topic == "license.granted":
        return Happened.CLAIMED if data.get("source") == "purchase_pass" else Happened.GRANTED
    return {"license.expired": Happened.EXPIRED,
            "license.revoked": Happened.REVOKED}.get(topic)
