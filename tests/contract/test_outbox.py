"""The outbox and its destinations, through the ports alone, on every adapter: claims lease
messages away from other workers, a lost lease refuses the late result, the log pages newest
first, and hand-made resends keep the message id."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import attrs
import pytest

from adapters_storage import open_storage, schema
from adapters_storage.payloads import message_row
from adapters_storage.records import column_list
from adapters_storage.sql import common
from licore.events import (
    ChatRole,
    FanOut,
    Message,
    MessageKind,
    MessageState,
    Payload,
    RoleChange,
    WebhookBody,
    WebhookEndpoint,
)
from licore.lanes import Breaker, BreakerState
from licore.storage_ports import Storage
from tests.support.records import seed

# A payload of each kind's own type, as the core writes them.
PAYLOADS: dict[MessageKind, Payload] = {
    MessageKind.WEBHOOK: WebhookBody('{"a":1}'),
    MessageKind.CHAT_ROLE: RoleChange("10", "20", "30"),
    MessageKind.FAN_OUT: FanOut((("10", "20"),), (), "lic_1"),
}


def message(n: int, *, due: int = 100, kind: MessageKind = MessageKind.WEBHOOK,
            studio: str = "std_1", target: str = "whk_1") -> Message:
    return Message(id=f"msg_{n:03}", kind=kind, topic="license.granted", studio_id=studio,
                   target=target, subject="", payload=PAYLOADS[kind],
                   state=MessageState.PENDING, attempts=0, next_attempt_at=due,
                   created_at=50)


async def test_each_kind_of_payload_reads_back_as_the_value_written(storage: Storage) -> None:
    written = [message(n, kind=kind, target=f"t{n}") for n, kind in enumerate(MessageKind)]
    async with storage.unit_of_work() as uow:
        await uow.outbox.add(written)
    async with storage.unit_of_work() as uow:
        assert [await uow.outbox.by_id(m.id) for m in written] == written
        claimed = await uow.outbox.claim(100, "w1", 160, 10)
    assert {m.id: m.payload for m in claimed} == {m.id: m.payload for m in written}


async def test_claims_take_due_messages_once_until_the_lease_runs_out(
        storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await uow.outbox.add([message(1, target="whk_a"), message(2, due=90, target="whk_b"),
                              message(3, due=500, target="whk_c")])
    async with storage.unit_of_work() as uow:
        first = await uow.outbox.claim(100, "w1", 160, 10)
    assert [m.id for m in first] == ["msg_002", "msg_001"]  # the longest due first
    assert {(m.claimed_by, m.claimed_until) for m in first} == {("w1", 160)}
    async with storage.unit_of_work() as uow:
        assert list(await uow.outbox.claim(150, "w2", 210, 10)) == []  # leased to w1
        assert await uow.outbox.backlog(150) == 2
        again = await uow.outbox.claim(161, "w2", 221, 1)  # w1's lease ran out
    assert [m.id for m in again] == ["msg_002"]
    async with storage.unit_of_work() as uow:
        late = attrs.evolve(first[0], state=MessageState.DELIVERED, attempts=1)
        assert not await uow.outbox.save(late, "w1")  # w1 lost the lease to w2
        done = attrs.evolve(again[0], state=MessageState.DELIVERED, attempts=1,
                            last_status=204, delivered_at=170, claimed_by=None,
                            claimed_until=None)
        assert await uow.outbox.save(done, "w2")
        assert await uow.outbox.by_id("msg_002") == done
        assert await uow.outbox.backlog(600) == 2


async def test_the_log_is_newest_first_by_studio_and_kind_and_resend_keeps_the_id(
        storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        await uow.outbox.add([message(n) for n in range(1, 6)]
                             + [message(9, kind=MessageKind.CHAT_ROLE),
                                message(8, studio="std_2")])
        page = await uow.outbox.of_studio("std_1", MessageKind.WEBHOOK, 3, None)
        assert [m.id for m in page.items] == ["msg_005", "msg_004", "msg_003"]
        rest = await uow.outbox.of_studio("std_1", MessageKind.WEBHOOK, 3, page.next_cursor)
        assert [m.id for m in rest.items] == ["msg_002", "msg_001"] and rest.next_cursor is None
        dead = attrs.evolve(message(1), state=MessageState.DEAD, attempts=7)
        claimed = await uow.outbox.claim(100, "w", 200, 10)
        # The heads of the lanes: endpoint whk_1's oldest (msg_008 is whk_1's too), the role's.
        assert [m.id for m in claimed] == ["msg_001", "msg_009"]
        assert await uow.outbox.save(attrs.evolve(dead, claimed_by="w"), "w")
        assert await uow.outbox.requeue("msg_001", 300)
        assert not await uow.outbox.requeue("msg_nope", 300)
        back = await uow.outbox.by_id("msg_001")
        assert back is not None and back.state is MessageState.PENDING
        assert back.next_attempt_at == 300 and back.attempts == 7 and back.claimed_by is None


async def test_hooks_keep_endpoints_roles_and_links(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        endpoint = WebhookEndpoint("whk_1", "std_1", "https://example.com/h",
                                   ("license.granted", "license.revoked"), b"secret", 10)
        await uow.hooks.add_endpoint(endpoint)
        await uow.hooks.add_endpoint(attrs.evolve(endpoint, id="whk_2", topics=("alert.raised",)))
        assert [e.id for e in await uow.hooks.endpoints_of("std_1")] == ["whk_1", "whk_2"]
        rotated = attrs.evolve(endpoint, secret_ciphertext=b"new", previous_ciphertext=b"secret",
                               previous_until=99, failing_since=5, disabled_at=7,
                               disabled_reason="failing")
        await uow.hooks.save_endpoint(rotated)
        assert await uow.hooks.endpoint("whk_1") == rotated
        assert await uow.hooks.remove_endpoint("whk_2")
        assert not await uow.hooks.remove_endpoint("whk_2")
        assert await uow.hooks.endpoints_of("std_2") == []

        roles = [ChatRole("prd_1", "22", "7"), ChatRole("prd_1", "11", "9")]
        await uow.hooks.set_roles("prd_1", roles)
        assert list(await uow.hooks.roles_of("prd_1")) == sorted(
            roles, key=lambda r: (r.guild_id, r.role_id))
        await uow.hooks.set_roles("prd_1", roles[:1])
        assert list(await uow.hooks.roles_of("prd_1")) == roles[:1]

        await uow.hooks.link_chat("100", "555", 1)
        await uow.hooks.link_chat("100", "556", 2)
        assert await uow.hooks.chat_user("100") == "556"
        await uow.hooks.link_chat("100", None, 3)
        assert await uow.hooks.chat_user("100") is None


async def settle_as(storage: Storage, m: Message, worker: str, state: MessageState,
                    due: int | None = None) -> None:
    async with storage.unit_of_work() as uow:
        assert await uow.outbox.save(attrs.evolve(
            m, state=state, attempts=m.attempts + 1, claimed_by=None, claimed_until=None,
            next_attempt_at=m.next_attempt_at if due is None else due), worker)


async def test_a_lane_goes_one_message_at_a_time_in_order_whatever_the_retries(
        storage: Storage) -> None:
    """One endpoint's messages: only the oldest pending goes, never two at once, and a
    failed one waiting for its retry holds the later ones back; other lanes go meanwhile."""
    async with storage.unit_of_work() as uow:
        await uow.outbox.add([message(n, target="whk_a") for n in (1, 2, 3)]
                             + [message(4, target="whk_b")])
    async with storage.unit_of_work() as uow:
        first = await uow.outbox.claim(100, "w1", 160, 10)
        assert [m.id for m in first] == ["msg_001", "msg_004"]
        assert [m.lane for m in first] == ["hook:whk_a", "hook:whk_b"]
        assert list(await uow.outbox.claim(100, "w2", 160, 10)) == []  # both lanes busy
    await settle_as(storage, first[0], "w1", MessageState.PENDING, due=130)  # retry at 130
    await settle_as(storage, first[1], "w1", MessageState.DELIVERED)
    async with storage.unit_of_work() as uow:
        assert list(await uow.outbox.claim(110, "w2", 170, 10)) == []  # msg_002 waits
        (retried,) = await uow.outbox.claim(130, "w2", 190, 10)
    assert retried.id == "msg_001" and retried.attempts == 1
    await settle_as(storage, retried, "w2", MessageState.DEAD)
    async with storage.unit_of_work() as uow:
        (second,) = await uow.outbox.claim(131, "w1", 191, 10)
    assert second.id == "msg_002"


async def test_a_studio_gets_at_most_its_slots_and_studios_take_turns(
        storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await uow.outbox.add([message(n, due=n, target=f"whk_b{n}", studio="std_b")
                              for n in range(1, 7)]
                             + [message(20 + n, due=50 + n, target=f"whk_a{n}", studio="std_a")
                                for n in range(1, 3)])
    async with storage.unit_of_work() as uow:
        # Two turns in: each studio's longest due, then each one's next.
        taken = await uow.outbox.claim(100, "w1", 160, 3, per_studio=4)
        assert [m.id for m in taken] == ["msg_001", "msg_021", "msg_002"]
        more = await uow.outbox.claim(100, "w2", 160, 10, per_studio=4)
        # std_b has 2 in flight, so 2 more; std_a 1, so its last lane.
        assert [m.id for m in more] == ["msg_003", "msg_022", "msg_004"]
        assert list(await uow.outbox.claim(100, "w3", 160, 10, per_studio=4)) == []
    await settle_as(storage, taken[0], "w1", MessageState.DELIVERED)
    async with storage.unit_of_work() as uow:
        assert [m.id for m in await uow.outbox.claim(101, "w3", 160, 10,
                                                     per_studio=4)] == ["msg_005"]
        # Leases that ran out free their studio's slots: turns again, four of std_b at most.
        assert [m.id for m in await uow.outbox.claim(161, "w4", 200, 10, per_studio=4)] == [
            "msg_002", "msg_021", "msg_003", "msg_022", "msg_004", "msg_005"]


async def test_an_open_breaker_holds_its_lane_until_the_cool_down_ends(
        storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await uow.outbox.add([message(1, target="whk_a"), message(2, target="whk_b")])
        assert await uow.outbox.breakers(["hook:whk_a", "hook:nope"]) == {}
        opened = Breaker(BreakerState.OPEN, failures=5, opened=1, open_until=130)
        await uow.outbox.save_breaker("hook:whk_a", opened)
        assert await uow.outbox.breakers(["hook:whk_a", "hook:whk_b"]) == {
            "hook:whk_a": opened}
        assert [m.id for m in await uow.outbox.claim(100, "w", 160, 10)] == ["msg_002"]
    async with storage.unit_of_work() as uow:
        assert [m.id for m in await uow.outbox.claim(130, "w", 190, 10)] == ["msg_001"]
        half = Breaker(BreakerState.HALF_OPEN, failures=5, opened=1, open_until=130)
        await uow.outbox.save_breaker("hook:whk_a", half)
        assert await uow.outbox.breakers(["hook:whk_a"]) == {"hook:whk_a": half}
        await uow.outbox.save_breaker("hook:whk_a", Breaker())  # closed: forgotten
        assert await uow.outbox.breakers(["hook:whk_a"]) == {}


async def test_concurrent_claims_never_take_two_messages_of_a_lane_or_one_twice(
        storage: Storage) -> None:
    """Many workers claiming at once (on PostgreSQL, on separate connections): every
    message is taken once, and no lane or studio is over its bound."""
    async with storage.unit_of_work() as uow:
        await uow.outbox.add([message(10 * lane + n, target=f"whk_{lane}",
                                      studio=f"std_{lane % 3}")
                              for lane in range(9) for n in range(3)])

    async def claim(worker: str) -> Sequence[Message]:
        async with storage.unit_of_work() as uow:
            return await uow.outbox.claim(100, worker, 160, 4, per_studio=2)

    rounds = await asyncio.gather(*(claim(f"w{n}") for n in range(8)))
    taken = [m for batch in rounds for m in batch]
    assert len({m.id for m in taken}) == len(taken) == 6  # two lanes of each of 3 studios
    assert len({m.lane for m in taken}) == 6
    assert all(m.id[-1] == "0" for m in taken)  # each lane's oldest


async def test_messages_queued_before_lanes_existed_get_theirs_on_migrating(
        database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database upgraded with messages pending: each one's lane is filled in from its kind
    and target, as `lane_of` makes it, and the claims keep order by it at once."""
    store = open_storage(database_url)
    lanes = next(n for n, m in enumerate(schema.MIGRATIONS) if any("outbox_lanes" in s for s in m))
    monkeypatch.setattr(common, "MIGRATIONS", schema.MIGRATIONS[:lanes])
    await store.migrate()
    old = [message(1, target="whk_a"), message(2, target="whk_a"),
           message(3, kind=MessageKind.CHAT_ROLE, target="11/22"),
           message(4, kind=MessageKind.FAN_OUT, target="prd_1")]
    columns = [c for c in column_list(Message).split(", ") if c != "lane"]
    try:
        async with store.unit_of_work() as uow:
            db = uow.db  # the SQL unit of work: rows written as the old schema had them
            for m in old:
                row = dict(zip(column_list(Message).split(", "), message_row(m), strict=True))
                await db.run(f"INSERT INTO outbox ({', '.join(columns)}) VALUES "
                             f"({', '.join('?' for _ in columns)})", [row[c] for c in columns])
        monkeypatch.setattr(common, "MIGRATIONS", schema.MIGRATIONS)
        await store.migrate()
        async with store.unit_of_work() as uow:
            for m in old:
                assert await uow.outbox.by_id(m.id) == m  # the lane made as lane_of makes it
            claimed = await uow.outbox.claim(100, "w", 160, 10)
        assert [m.id for m in claimed] == ["msg_001", "msg_003", "msg_004"]
    finally:
        await store.close()
