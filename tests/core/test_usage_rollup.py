"""The usage rollup (licore.usage): whatever batches the runtime calls arrive in, the sum of
the batches' tallies is the tally of every call, and the series answers every point of the
range with the counts that fall in it."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from licore.errors import InvalidRequest
from licore.usage import (
    DAY,
    HOUR,
    MAX_POINTS,
    Call,
    CallCount,
    Endpoint,
    EventCount,
    Granularity,
    Happened,
    Outcome,
    Reach,
    Tally,
    UsageOf,
    license_event,
    recent,
    series,
    tally,
)

calls = st.builds(Call, st.sampled_from(["prd_1", "prd_2"]),
                  st.integers(0, 5).map(lambda h: h * HOUR),
                  st.sampled_from(list(Endpoint)), st.sampled_from(list(Outcome)),
                  st.sampled_from(["1", "2", "3"]), st.sampled_from([None, "g1", "g2"]))


@given(st.lists(st.lists(calls, max_size=8), max_size=6))
def test_the_rollup_of_any_batch_sequence_equals_the_counts_of_the_calls(
        batches: list[list[Call]]) -> None:
    summed = Tally()
    for batch in batches:
        summed = summed.plus(tally(batch))
    every = [c for b in batches for c in b]
    assert summed.counts == dict(Counter((c.product_id, c.hour, c.endpoint, c.outcome)
                                         for c in every))
    assert summed.users == {(c.product_id, c.hour, c.user_id) for c in every
                            if c.outcome == Outcome.OK}
    assert summed.places == {(c.product_id, c.hour, c.game_id) for c in every
                             if c.outcome == Outcome.OK and c.game_id is not None}


def test_a_denied_call_counts_but_its_user_and_place_do_not() -> None:
    t = tally([Call("prd_1", 0, "check", "denied", "9", "g")])
    assert t.counts == {("prd_1", 0, "check", "denied"): 1}
    assert not t.users and not t.places


@given(st.lists(st.tuples(st.integers(0, 3 * DAY - 1), st.sampled_from(list(Endpoint)),
                          st.sampled_from(list(Outcome)), st.integers(1, 5)), max_size=20),
       st.sampled_from(list(Granularity)))
def test_the_series_has_every_point_and_the_counts_falling_in_each(
        counted: list[tuple[int, Endpoint, Outcome, int]], g: Granularity) -> None:
    query = UsageOf(0, 3 * DAY, None, g)
    rows = [CallCount(t - t % g.seconds, e, o, n) for t, e, o, n in counted]
    found = series(query, rows, [Reach(0, 2, 1, 1)])
    assert [p.start for p in found.points] == list(range(0, 3 * DAY, g.seconds))
    assert sum(p.total for p in found.points) == sum(n for *_, n in counted)
    for p in found.points:
        assert p.total == sum(n for t, _, _, n in counted if p.start <= t < p.start
                              + g.seconds)
        assert set(p.calls) == {e.value for e in Endpoint}
    assert (found.points[0].users, found.points[0].places, found.points[0].new_places) == (
        2, 1, 1)


def test_the_range_is_rounded_out_to_whole_points() -> None:
    q = UsageOf(HOUR + 5, 3 * HOUR + 1)
    assert (q.first, q.last, len(q.points())) == (HOUR, 4 * HOUR, 3)
    d = UsageOf(DAY + 5, DAY + 6, granularity="day")
    assert (d.first, d.last) == (DAY, 2 * DAY)


@pytest.mark.parametrize(("start", "end", "granularity", "field"), [
    (10, 10, "hour", "to"),  # empty
    (20, 10, "hour", "to"),  # backwards
    (0, (MAX_POINTS + 1) * HOUR, "hour", "to"),  # too many points
    (0, HOUR, "minute", "granularity"),
])
def test_bad_ranges_are_refused_naming_the_field(start: int, end: int, granularity: str,
                                                 field: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        UsageOf(start, end, None, granularity)
    assert refused.value.field == field


def test_the_longest_range_by_the_day_fits() -> None:
    assert len(UsageOf(0, MAX_POINTS * DAY, granularity="day").points()) == MAX_POINTS


def test_the_dashboards_periods() -> None:
    now = 1000 * DAY + 5 * HOUR + 7
    week = recent(now, 7, "prd_1")
    assert (week.granularity, week.last, len(week.points())) == (Granularity.HOUR,
                                                                 1000 * DAY + 6 * HOUR, 168)
    assert recent(now, 90, None).granularity is Granularity.DAY
    with pytest.raises(InvalidRequest):
        recent(now, 8, None)


def test_license_events_count_as_granted_claimed_expired_or_revoked() -> None:
    data = {"product_id": "prd_1", "source": "grant"}
    assert license_event("license.granted", data) is Happened.GRANTED
    assert license_event("license.granted", {**data, "source": "purchase_pass"}) is (
        Happened.CLAIMED)
    assert license_event("license.expired", data) is Happened.EXPIRED
    assert license_event("license.revoked", data) is Happened.REVOKED
    assert license_event("license.paused", data) is None
    assert license_event("product.changed", {}) is None


def test_events_fill_every_point_by_kind_and_downloads_by_version() -> None:
    found = series(UsageOf(0, 2 * HOUR), [], [], [
        EventCount(0, "granted", "", 2), EventCount(0, "download", "1.0", 3),
        EventCount(HOUR, "revoked", "", 1)])
    first, second = found.points
    assert first.licenses == {"granted": 2, "claimed": 0, "expired": 0, "revoked": 0}
    assert first.downloads == {"1.0": 3} and second.downloads == {}
    assert second.licenses["revoked"] == 1
