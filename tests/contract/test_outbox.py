"""The outbox and its destinations, through the ports alone, on every adapter: claims lease
messages away from other workers, a lost lease refuses the late result, the log pages newest
first, and hand-made resends keep the message id."""

from __future__ import annotations

import attrs

from licore.events import ChatRole, Message, MessageKind, MessageState, WebhookEndpoint
from licore.storage_ports import Storage
from tests.support.records import seed


def message(n: int, *, due: int = 100, kind: MessageKind = MessageKind.WEBHOOK,
            studio: str = "std_1") -> Message:
    return Message(id=f"msg_{n:03}", kind=kind, topic="license.granted", studio_id=studio,
                   target="whk_1", subject="", payload='{"a":1}',
                   state=MessageState.PENDING, attempts=0, next_attempt_at=due,
                   created_at=50)


async def test_claims_take_due_messages_once_until_the_lease_runs_out(
        storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await uow.outbox.add([message(1), message(2, due=90), message(3, due=500)])
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
        assert await uow.outbox.save(attrs.evolve(dead, claimed_by="w"), "w")
        assert len(claimed) == 7
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
