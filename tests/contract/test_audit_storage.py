"""The audit trail in storage (`AuditLog`, docs/audit.md), on every adapter: entries come back
as written, newest first, a page at a time; each studio sees its own; every filter (action or
its family, actor kind/id/key id, subject type/id, a time range, both ends inclusive) lets
through exactly what it names; a rolled-back unit of work leaves none; the sweep forgets the
old ones."""

from __future__ import annotations

import pytest

from licore.audit import Actor, ActorKind, AuditEntry, AuditFilter, Change
from licore.storage_ports import Storage

APP = Actor(ActorKind.APP, "cli_1", "key_1")
PERSON = Actor(ActorKind.PERSON, "acc_1")
EVERY = AuditFilter()


def entry(n: int, action: str = "license.revoked", actor: Actor = APP,
          studio: str | None = "stu_1", subject: tuple[str, str] = ("license", "lic_1"),
          changes: tuple[Change, ...] = ()) -> AuditEntry:
    return AuditEntry(f"aud_{n:04d}", studio, 1000 + n, actor, f"req-{n}", action,
                      subject[0], subject[1], changes)


async def add(storage: Storage, *entries: AuditEntry) -> None:
    async with storage.unit_of_work() as uow:
        for e in entries:
            await uow.audit.add(e)


async def ids(storage: Storage, where: AuditFilter = EVERY, studio: str = "stu_1",
              limit: int = 100) -> list[str]:
    async with storage.unit_of_work() as uow:
        found = await uow.audit.of_studio(studio, where, limit, None)
    return [e.id for e in found.items]


async def test_an_entry_comes_back_as_written(storage: Storage) -> None:
    written = entry(1, changes=(Change("state", "active", "inactive"),
                                Change("key_generation", 0, 1), Change("discoverable", True,
                                                                       False),
                                Change("scopes", ("a:read",), ("a:read", "b:write")),
                                Change("expires_at", None, 1234),
                                Change("key_digest", shown=False)))
    await add(storage, written, entry(2, actor=Actor(ActorKind.SERVICE, "licore")))
    async with storage.unit_of_work() as uow:
        found = await uow.audit.of_studio("stu_1", EVERY, 10, None)
    assert found.items[1] == written
    assert found.items[0].actor == Actor(ActorKind.SERVICE, "licore")
    assert found.next_cursor is None


async def test_newest_first_a_page_at_a_time(storage: Storage) -> None:
    await add(storage, *(entry(n) for n in range(1, 6)))
    seen: list[str] = []
    cursor = None
    async with storage.unit_of_work() as uow:
        while True:
            page = await uow.audit.of_studio("stu_1", EVERY, 2, cursor)
            seen += [e.id for e in page.items]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    assert seen == [f"aud_{n:04d}" for n in (5, 4, 3, 2, 1)]


async def test_each_studio_sees_its_own(storage: Storage) -> None:
    await add(storage, entry(1), entry(2, studio="stu_2"), entry(3, studio=None))
    assert await ids(storage) == ["aud_0001"]
    assert await ids(storage, studio="stu_2") == ["aud_0002"]


async def test_the_filters(storage: Storage) -> None:
    await add(storage,
              entry(1, "license.revoked"),
              entry(2, "license.granted", actor=PERSON),
              entry(3, "licenses_x.revoked", subject=("product", "prd_1")),
              entry(4, "product.changed", actor=Actor(ActorKind.OPERATOR, "ops"),
                    subject=("product", "prd_1")),
              entry(5, "license", actor=Actor(ActorKind.APP, "cli_2", "key_2")))
    assert await ids(storage, AuditFilter(action="license.revoked")) == ["aud_0001"]
    # a family: the action itself or what starts with it and a dot, nothing else
    assert await ids(storage, AuditFilter(action="license")) == [
        "aud_0005", "aud_0002", "aud_0001"]
    assert await ids(storage, AuditFilter(action="lic")) == []
    assert await ids(storage, AuditFilter(actor="person")) == ["aud_0002"]
    assert await ids(storage, AuditFilter(actor="acc_1")) == ["aud_0002"]
    assert await ids(storage, AuditFilter(actor="key_2")) == ["aud_0005"]
    assert await ids(storage, AuditFilter(actor="cli_1")) == ["aud_0003", "aud_0001"]
    assert await ids(storage, AuditFilter(subject="product")) == ["aud_0004", "aud_0003"]
    assert await ids(storage, AuditFilter(subject="lic_1")) == [
        "aud_0005", "aud_0002", "aud_0001"]
    assert await ids(storage, AuditFilter(since=1002, until=1004)) == [
        "aud_0004", "aud_0003", "aud_0002"]
    assert await ids(storage, AuditFilter(action="license", actor="app", since=1005)) == [
        "aud_0005"]


async def test_a_rolled_back_unit_of_work_leaves_no_entry(storage: Storage) -> None:
    with pytest.raises(RuntimeError):
        async with storage.unit_of_work() as uow:
            await uow.audit.add(entry(1))
            raise RuntimeError("the change failed")
    assert await ids(storage) == []


async def test_the_sweep_forgets_entries_before_a_time(storage: Storage) -> None:
    await add(storage, *(entry(n) for n in range(1, 5)))
    async with storage.unit_of_work() as uow:
        assert await uow.audit.sweep(1003) == 2
    assert await ids(storage) == ["aud_0004", "aud_0003"]


async def test_everywhere_is_every_studios_and_none(storage: Storage) -> None:
    await add(storage, entry(1), entry(2, studio="stu_2"), entry(3, studio=None),
              entry(4, "app.registered", studio=None, subject=("app", "cli_9")))
    async with storage.unit_of_work() as uow:
        every = await uow.audit.everywhere(EVERY, 10, None)
        apps = await uow.audit.everywhere(AuditFilter(subject="app"), 10, None)
        first = await uow.audit.everywhere(EVERY, 3, None)
        rest = await uow.audit.everywhere(EVERY, 3, first.next_cursor)
    assert [e.id for e in every.items] == ["aud_0004", "aud_0003", "aud_0002", "aud_0001"]
    assert [e.id for e in apps.items] == ["aud_0004"]
    assert [e.id for e in first.items + rest.items] == [e.id for e in every.items]
    assert rest.next_cursor is None
