"""The usage rollup's storage (docs/api.md, "Usage"), on the three stores: the calls a
process keeps reach the tables with its next runtime batch, are kept only for products that
exist, sum across processes (shards on PostgreSQL), read by the hour or the day, per
product or studio-wide, and are swept by age."""

from __future__ import annotations

import psycopg

from adapters_storage import open_storage
from licore.storage_ports import Storage
from licore.usage import DAY, HOUR, Call, CallCount, EventCount, Reach
from tests.support import records as r

H = 1000 * DAY  # an hour, well after zero


def call(endpoint: str, outcome: str, user: str = "2", game: str | None = None,
         product: str = "prd_1", hour: int = H) -> Call:
    return Call(product, hour, endpoint, outcome, user, game)


async def _seed(store: Storage) -> None:
    async with store.unit_of_work() as uow:
        await r.seed(uow)
        await uow.products.add(r.product(2), "q")
        await uow.studios.add(r.studio(2, owner="acc_2"))
        await uow.products.add(r.product(3, studio_id="std_2"), "r")


async def _read(store: Storage, product: str | None, step: int = HOUR,
                studio: str = "std_1") -> tuple[list[CallCount], list[Reach]]:
    async with store.unit_of_work() as uow:
        calls = await uow.records.usage.calls(studio, product, H - DAY, H + DAY, step)
        reach = await uow.records.usage.reach(studio, product, H - DAY, H + DAY, step)
    return sorted(calls), list(reach)


async def test_calls_are_counted_per_product_hour_endpoint_and_outcome(storage: Storage) -> None:
    await _seed(storage)
    for c in [call("check", "ok", "2", "g1"), call("check", "ok", "2", "g1"),
              call("check", "denied", "7", "g9"), call("unlock", "ok", "3", "g2"),
              call("check", "ok", "2", product="prd_2"),
              call("check", "ok", hour=H + HOUR),
              call("check", "ok", product="prd_404"),  # no such product: not kept
              call("check", "ok", product="prd_3")]:  # another studio's
        storage.note_call(c)
    await storage.flush_usage()
    calls, reach = await _read(storage, "prd_1")
    assert calls == [CallCount(H, "check", "denied", 1), CallCount(H, "check", "ok", 2),
                     CallCount(H, "unlock", "ok", 1), CallCount(H + HOUR, "check", "ok", 1)]
    # Distinct users and places of passed calls only: 2 and 3, g1 and g2.
    assert reach == [Reach(H, 2, 2, 0), Reach(H + HOUR, 1, 0, 0)]
    studio_calls, studio_reach = await _read(storage, None, DAY)
    day = H - H % DAY
    assert studio_calls == [CallCount(day, "check", "denied", 1),
                            CallCount(day, "check", "ok", 4), CallCount(day, "unlock", "ok", 1)]
    assert studio_reach == [Reach(day, 2, 2, 0)]  # user 2 in two products is one user
    other, _ = await _read(storage, None, studio="std_2")
    assert other == [CallCount(H, "check", "ok", 1)]
    async with storage.unit_of_work() as uow:
        assert await uow.records.usage.calls("std_1", "prd_404", 0, 2 * H, HOUR) == []


async def test_new_places_are_the_places_a_product_is_first_seen_in(storage: Storage) -> None:
    await _seed(storage)
    async with storage.unit_of_work() as uow:
        await uow.licenses.add(r.license(1))
        await uow.licenses.add(r.license(2, platform_id="3"))
        await uow.records.runtime.record_place("lic_1", "g1", H + 10)
        await uow.records.runtime.record_place("lic_2", "g1", H + HOUR + 10)  # g1 is not new again
        await uow.records.runtime.record_place("lic_2", "g2", H + HOUR + 20)
    _, reach = await _read(storage, "prd_1")
    assert [(x.start, x.new_places) for x in reach] == [(H, 1), (H + HOUR, 1)]


async def test_old_hours_are_swept(storage: Storage) -> None:
    await _seed(storage)
    storage.note_call(call("check", "ok", game="g"))
    storage.note_call(call("check", "ok", game="g", hour=H + HOUR))
    await storage.flush_usage()
    async with storage.unit_of_work() as uow:
        assert await uow.records.usage.sweep(H + HOUR) == 3  # H's count, user and place
    calls, _ = await _read(storage, "prd_1")
    assert calls == [CallCount(H + HOUR, "check", "ok", 1)]


async def test_kept_calls_ride_the_next_runtime_batch_and_processes_sum(
        database_url: str) -> None:
    """Two storages on one database stand for two server processes. Each process's calls
    reach the database with its next runtime read, without a flush (the first write is
    due at once), and a reader sums both (on PostgreSQL each process adds to rows of its
    own shard)."""
    a, b, reader = (open_storage(database_url) for _ in range(3))
    try:
        await a.migrate()
        await _seed(a)
        a.note_call(call("check", "ok"))
        a.note_call(call("check", "ok", "3"))
        b.note_call(call("check", "ok"))
        b.note_call(call("unlock", "denied"))
        for store in (a, b):
            await store.runtime_read(["rk:x"], 600, "nodigest", "2", None)
        calls, reach = await _read(reader, "prd_1")
    finally:
        for store in (a, b, reader):
            await store.close()
    assert calls == [CallCount(H, "check", "ok", 3), CallCount(H, "unlock", "denied", 1)]
    assert reach == [Reach(H, 2, 0, 0)]
    if database_url.startswith("postgresql"):
        async with await psycopg.AsyncConnection.connect(database_url) as conn:
            cur = await conn.execute("SELECT COUNT(DISTINCT shard) FROM usage_calls")
            row = await cur.fetchone()
        assert row is not None and row[0] == 2


async def test_calls_kept_at_close_are_written(database_url: str) -> None:
    a, reader = open_storage(database_url), open_storage(database_url)
    try:
        await a.migrate()
        await _seed(a)
        a.note_call(call("version", "ok"))
        await a.close()
        calls, _ = await _read(reader, "prd_1")
    finally:
        await reader.close()
    assert calls == [CallCount(H, "version", "ok", 1)]


async def test_what_happened_is_counted_per_product_hour_kind_and_subject(
        storage: Storage) -> None:
    await _seed(storage)
    async with storage.unit_of_work() as uow:
        for product, hour, kind, subject in [
                ("prd_1", H, "granted", ""), ("prd_1", H, "granted", ""),
                ("prd_1", H + 60, "download", "1.0"), ("prd_1", H, "download", "1.1"),
                ("prd_2", H + HOUR, "revoked", ""), ("prd_3", H, "granted", "")]:
            await uow.records.usage.count(product, hour, kind, subject)
    async with storage.unit_of_work() as uow:
        one = sorted(await uow.records.usage.events("std_1", "prd_1", H - DAY, H + DAY, HOUR))
        studio = sorted(await uow.records.usage.events("std_1", None, H - DAY, H + DAY, DAY))
        assert await uow.records.usage.sweep(H + HOUR) == 4  # three rows of prd_1 and one of prd_3
    assert one == [EventCount(H, "download", "1.0", 1), EventCount(H, "download", "1.1", 1),
                   EventCount(H, "granted", "", 2)]
    day = H - H % DAY
    assert studio == [EventCount(day, "download", "1.0", 1),
                      EventCount(day, "download", "1.1", 1), EventCount(day, "granted", "", 2),
                      EventCount(day, "revoked", "", 1)]


async def test_a_user_seen_again_in_the_hour_counts_once_whichever_process_wrote_it(
        database_url: str) -> None:
    """A process leaves the users and places it already wrote this hour out of later
    writes (`HotPath._add`); the distinct counts stay right, also when another process
    wrote them too."""
    a, b = open_storage(database_url), open_storage(database_url)
    try:
        await a.migrate()
        await _seed(a)
        for store in (a, b, a):
            store.note_call(call("check", "ok", "2", "g1"))
            await store.flush_usage()
        a.note_call(call("check", "ok", "3", "g1"))
        await a.flush_usage()
        calls, reach = await _read(a, "prd_1")
    finally:
        await a.close()
        await b.close()
    assert calls == [CallCount(H, "check", "ok", 4)]
    assert reach == [Reach(H, 2, 1, 0)]
