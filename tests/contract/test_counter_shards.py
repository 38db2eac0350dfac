"""Rate counters in shards (docs/runtime.md, "Several processes"): each process on
PostgreSQL counts the runtime hot path in a row of its own and reads the sum; whatever the
rows, statements lock them in one order, so concurrent batches never deadlock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import psycopg
import pytest

from adapters_storage import PostgresStorage, open_storage
from adapters_storage.schema import MIGRATIONS, statements
from adapters_storage.sql.common import Executor
from licore.errors import Contended
from licore.storage_ports import UnitOfWork

W = 600  # a window start


async def test_processes_count_in_shards_and_every_reader_sees_the_sum(
        database_url: str) -> None:
    """Two storages on one database stand for two server processes: on PostgreSQL each
    counts in its own shard, on SQLite both in one row; the counts they return, and every
    later reader, see the total either way."""
    a, b = open_storage(database_url), open_storage(database_url)
    try:
        await a.migrate()
        got = []
        for store in (a, b, a, b, b):
            (per_key, per_ip), _ = await store.runtime_read(["rk:x", "rip:y"], W, "d", "2", None)
            got.append((per_key, per_ip))
        async with a.unit_of_work() as uow:
            counters = uow.records.counters
            seen = (await counters.count("rk:x", W), await counters.count("rip:y", W))
            # A unit of work adds to the same totals (in shard 0).
            after = await uow.records.counters.hit(["rip:y"], W)
            other_window = await uow.records.counters.count("rk:x", W + 60)
    finally:
        await a.close()
        await b.close()
    assert got == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
    assert seen == (5, 5) and after == [6] and other_window == 0
    if database_url.startswith("postgresql"):
        assert await _shards(database_url, "rk:x") == 2


async def _shards(url: str, bucket: str) -> int:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute("SELECT COUNT(*) FROM rate_counters WHERE bucket = %s",
                                 [bucket])
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.postgres
async def test_batches_locking_shared_rows_in_opposite_orders_do_not_deadlock(
        pg_schema_url: str) -> None:
    """Three transactions on the same counter rows. T holds row c. A is asked for a, c, b
    and B for b, a. In the order asked, A would hold a and wait for c, B hold b and wait for
    a, and when T lets c go A would wait for b: a cycle PostgreSQL ends by failing one of
    them. In one order (a, b, c) whoever asks, A holds a and b and B waits for a, and
    both finish."""
    store = PostgresStorage(pg_schema_url, min_size=3, max_size=4)
    await store.migrate()
    held, release = asyncio.Event(), asyncio.Event()
    try:
        async def holder() -> list[int]:
            async with store.unit_of_work() as uow:
                got = await uow.records.counters.hit(["c"], W)
                held.set()
                await release.wait()
            return got

        t = asyncio.get_running_loop().create_task(holder())
        await held.wait()
        a = await _waiting(store, lambda uow: uow.records.counters.hit(["a", "c", "b"], W))
        b = await _waiting(store, lambda uow: uow.records.counters.hit(["b", "a"], W))
        release.set()
        results = await asyncio.gather(t, a, b, return_exceptions=True)
    finally:
        release.set()
        await store.close()
    assert list(results) == [[1], [1, 2, 1], [2, 2]], results


async def _waiting(store: PostgresStorage, work: Callable[[UnitOfWork], Awaitable[Any]]
                   ) -> asyncio.Task[Any]:
    """`work` in a unit of work of its own, returned once it waits for a row lock
    (PostgreSQL's view of its backend says so)."""
    started = asyncio.Event()
    pid: list[int] = []

    async def run() -> Any:
        async with store.unit_of_work() as uow:
            db: Executor = uow.db
            pid.append(int((await db.rows("SELECT pg_backend_pid()"))[0][0]))
            started.set()
            return await work(uow)

    task = asyncio.get_running_loop().create_task(run())
    await started.wait()
    async with store.pool.connection() as conn:
        for _ in range(1000):
            cur = await conn.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", pid)
            if (await cur.fetchone()) == ("Lock",):
                break
            await asyncio.sleep(0.01)
    return task


@pytest.fixture
async def before_shards(database_url: str) -> AsyncIterator[str]:
    """A database migrated to just before the counters went into shards, holding a counter
    of each kind."""
    store = open_storage(database_url)
    dialect = "postgresql" if database_url.startswith("postgresql") else "sqlite"
    async with store.unit_of_work() as uow:
        db: Executor = uow.db
        await db.run("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)")
        sharding = next(n for n, m in enumerate(MIGRATIONS)
                        if any("rate_counters_sharded" in sql for sql in m))
        for version, migration in enumerate(MIGRATIONS[:sharding], start=1):
            for sql in statements(dialect, migration):
                await db.run(sql)
            await db.run("INSERT INTO schema_migrations (version) VALUES (?)", [version])
        await db.run("INSERT INTO rate_counters (bucket, window_start, count) "
                     "VALUES ('session-ended:s1', 0, 1), ('rk:x', ?, 7)", [W])
    await store.close()
    yield database_url


async def test_counters_going_into_shards_keep_every_count(before_shards: str) -> None:
    store = open_storage(before_shards)
    try:
        await store.migrate()
        async with store.unit_of_work() as uow:
            kept = (await uow.records.counters.count("session-ended:s1", 0),
                    await uow.records.counters.count("rk:x", W))
        (per_key,), _ = await store.runtime_read(["rk:x"], W, "d", "2", None)
    finally:
        await store.close()
    assert kept == (1, 7) and per_key == 8


@pytest.mark.postgres
async def test_a_deadlock_is_told_as_contention_not_as_an_outage(pg_schema_url: str) -> None:
    """Two transactions that lock two rows in opposite orders: PostgreSQL fails one. Its
    caller is told the truth (a concurrent request; retry in a second), not that the
    database cannot be reached, and the next request is served at once."""
    store = PostgresStorage(pg_schema_url, min_size=2, max_size=3)
    await store.migrate()
    first_held, second_held = asyncio.Event(), asyncio.Event()

    async def cross(mine: str, theirs: str, held: asyncio.Event, other: asyncio.Event) -> None:
        async with store.unit_of_work() as uow:
            await uow.records.counters.hit([mine], W)
            held.set()
            await other.wait()
            await uow.records.counters.hit([theirs], W)

    try:
        outcomes = await asyncio.gather(cross("a", "b", first_held, second_held),
                                        cross("b", "a", second_held, first_held),
                                        return_exceptions=True)
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(failed) == 1, outcomes
        assert isinstance(failed[0], Contended) and failed[0].status == 503
        assert failed[0].retry_after == 1
        assert "concurrent request" in failed[0].description
        assert "cannot reach" not in failed[0].description
        async with asyncio.timeout(2):  # not the half-second fail-fast of an outage
            async with store.unit_of_work() as uow:
                # The turned-back transaction left nothing: one hit on each row, the winner's.
                assert [await uow.records.counters.count(row, W) for row in "ab"] == [1, 1]
    finally:
        await store.close()
