"""The outbox's scheduling policy (licore.lanes, docs/events.md): the breaker's table, and
`plan` held against a plain model of what may go: each lane's oldest pending message only,
due and unleased, its breaker not holding it, no studio over its slots, as many as fit."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from licore import transitions
from licore.events import Message, MessageKind, MessageState, WebhookBody
from licore.lanes import (
    BREAKER,
    Breaker,
    BreakerEvent,
    BreakerPolicy,
    BreakerState,
    after,
    holds,
    lane_of,
    outcome,
    plan,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"
POLICY = BreakerPolicy(trip_after=3, cool_down=10, cap=35)


def test_the_breaker_table_answers_every_event_in_every_state() -> None:
    assert set(BREAKER) == set(itertools.product(BreakerState, BreakerEvent))


def test_the_docs_show_the_breaker_table_as_the_code_has_it() -> None:
    assert transitions.markdown(BREAKER) in DOC.read_text()


def fail(b: Breaker, now: int) -> Breaker:
    return after(b, outcome(b, False, POLICY), now, POLICY)


def test_failures_in_a_row_open_it_the_cool_down_doubles_to_its_cap_and_success_closes_it(
        ) -> None:
    b = fail(fail(Breaker(), 100), 101)
    assert (b.state, b.failures) == (BreakerState.CLOSED, 2) and not holds(b, 101)
    b = fail(b, 102)
    assert b == Breaker(BreakerState.OPEN, failures=3, opened=1, open_until=112)
    assert holds(b, 111) and not holds(b, 112)
    b = after(b, BreakerEvent.COOLED, 112, POLICY)  # the lane's next message is the probe
    assert b.state is BreakerState.HALF_OPEN and not holds(b, 112)
    b = fail(b, 113)  # the probe failed: open again, twice as long
    assert (b.state, b.opened, b.open_until) == (BreakerState.OPEN, 2, 133)
    for now in (133, 200):
        b = fail(after(b, BreakerEvent.COOLED, now, POLICY), now)
    assert b.open_until == 200 + 35  # 40 s would be past the cap
    b = after(after(b, BreakerEvent.COOLED, 235, POLICY), outcome(b, True, POLICY), 236,
              POLICY)
    assert b == Breaker()  # closed, the run of failures over: stored by forgetting it


def test_a_success_between_failures_ends_the_run() -> None:
    b = fail(fail(Breaker(), 1), 2)
    b = after(b, outcome(b, True, POLICY), 3, POLICY)
    assert fail(fail(b, 4), 5).state is BreakerState.CLOSED


def test_lanes_are_the_endpoint_the_chat_role_or_the_fan_out_message_itself() -> None:
    assert lane_of("webhook", "whk_1", "msg_9") == "hook:whk_1"
    assert lane_of("chat_role", "11/22", "msg_9") == "chat:11/22"
    assert lane_of("fan_out", "prd_1", "msg_9") == "fan:msg_9"


NOW = 100
messages = st.lists(st.builds(
    lambda n, target, studio, due, lease, state: Message(
        f"msg_{n:04}", MessageKind.WEBHOOK, "t", studio, target, "", WebhookBody("{}"), state,
        0, due, 0,
        claimed_by=None if lease is None else "w", claimed_until=lease),
    st.integers(0, 9999), st.sampled_from(["a", "b", "c", "d", "e", "f"]),
    st.sampled_from(["s1", "s2", "s3"]), st.integers(90, 110),
    st.one_of(st.none(), st.integers(90, 110)),
    st.sampled_from([MessageState.PENDING] * 3 + [MessageState.DELIVERED])),
    max_size=30, unique_by=lambda m: m.id)
breakers = st.dictionaries(st.sampled_from([f"hook:{t}" for t in "abcdef"]), st.builds(
    Breaker, st.sampled_from(BreakerState), st.integers(0, 5), st.integers(0, 3),
    st.integers(90, 110)), max_size=3)


@settings(max_examples=400, deadline=None)
@given(messages, breakers, st.integers(1, 8), st.integers(1, 4))
def test_plan_takes_what_the_model_allows_and_as_much_of_it_as_fits(
        pending: list[Message], kept: dict[str, Breaker], limit: int, per_studio: int) -> None:
    live = [m for m in pending if m.state is MessageState.PENDING]
    head = {lane: min(m.id for m in live if m.lane == lane) for lane in {m.lane for m in live}}
    busy = {s: sum(1 for m in live if m.studio_id == s and m.claimed_until is not None
                   and m.claimed_until >= NOW) for s in ("s1", "s2", "s3")}
    may_go = [m for m in live if m.id == head[m.lane] and m.next_attempt_at <= NOW
              and (m.claimed_until is None or m.claimed_until < NOW)
              and not (m.lane in kept and kept[m.lane].state is BreakerState.OPEN
                       and kept[m.lane].open_until > NOW)]

    chosen = plan(pending, kept, NOW, limit, per_studio)

    assert all(m in may_go for m in chosen)
    assert len({m.lane for m in chosen}) == len(chosen) <= limit
    for studio in busy:
        assert busy[studio] + sum(1 for m in chosen if m.studio_id == studio) <= max(
            per_studio, busy[studio])
    if len(chosen) < limit:  # nothing left out that had room
        for m in may_go:
            room = per_studio - busy[m.studio_id]
            assert m in chosen or sum(1 for c in chosen if c.studio_id == m.studio_id) >= room
    # Turns: a studio gets its k-th only once every studio with room got as many.
    for k, m in enumerate(chosen):
        mine = sum(1 for c in chosen[:k] if c.studio_id == m.studio_id)
        for other in {c.studio_id for c in may_go} - {m.studio_id}:
            theirs = sum(1 for c in chosen[:k] if c.studio_id == other)
            waiting = [c for c in may_go if c.studio_id == other and c not in chosen[:k]]
            room = per_studio - busy[other] - theirs
            assert not (waiting and room > 0 and theirs < mine)
