"""PostgreSQL through psycopg 3, async, with a connection pool, for scale."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import cache
from typing import Any

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from adapters_storage import BUSY_WAIT, POOL_SIZE
from adapters_storage.sql.common import apply_migrations
from adapters_storage.sql.hot_path import HotPath, OnHotPath
from adapters_storage.sql.unit_of_work import SqlUnitOfWork
from licore.errors import Contended, Unavailable

MIGRATION_LOCK = 0x11C0E  # any constant; the advisory lock serialises concurrent migrators
# How long a request waits for a connection (BUSY_WAIT): while the database answers, a burst
# queues patiently (a fresh server taking a thousand first requests must not fail them); once
# it has stopped answering, requests fail fast with 503 and Retry-After instead of hanging.
OUTAGE_WAIT = 0.5
OPEN_WAIT = 10.0  # at start: connect before serving; past this, serve and keep trying
CONNECT_TIMEOUT = 3  # seconds for one connection attempt (a host that drops packets)
RETRY_AFTER = 2  # seconds, told to callers during an outage
# The hot path's sessions (its statements are the same few, run thousands of times a second):
# - a generic plan from the sixth run on: with the default (`auto`) PostgreSQL plans a batch
#   of one afresh on every run, because the generic plan's guess of ten rows a batch looks
#   dearer than the one-row plan; planning the look-up took 0.45 ms, four times running it;
# - commits that do not wait for the WAL's flush to disk: counts, nonces and the usage
#   rollup are all it writes, and a crash of the database server may forget the last
#   fraction of a second of them, as SQLite's WAL (synchronous NORMAL) may for every write
#   (docs/runtime.md says what that allows).
HOT_SESSION = "-c plan_cache_mode=force_generic_plan -c synchronous_commit=off"


def _hot_options(url: str) -> str:
    """`HOT_SESSION` after any options the URL sets itself (a `search_path`, say): a keyword
    given to the connection replaces the URL's, so they are joined."""
    given = conninfo_to_dict(url).get("options")
    return f"{given} {HOT_SESSION}" if given else HOT_SESSION


def _pool(url: str, min_size: int, max_size: int, busy_wait: float,
          **session: str) -> AsyncConnectionPool[Any]:
    # Statements outside a unit of work commit themselves: no BEGIN and COMMIT trips on the
    # hot path. A unit of work opens its transaction explicitly.
    return AsyncConnectionPool(url, min_size=min_size, max_size=max_size, open=False,
                               timeout=busy_wait,
                               kwargs={"connect_timeout": CONNECT_TIMEOUT, "autocommit": True,
                                       **session})


@cache
def _pg(sql: str) -> str:
    # The shared SQL uses `?`; psycopg wants `%s`, and a literal `%` must be doubled.
    return re.sub(r"\?", "%s", sql.replace("%", "%%"))


class _Executor:
    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn = conn

    async def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = await self.conn.execute(_pg(sql), params)
        # Whether the statement returned rows, from the result's status: `cur.description`
        # would build a column object for each of the look-up's 33 columns to say so.
        result = cur.pgresult
        if result is None or result.status != pq.ExecStatus.TUPLES_OK:
            return []
        return await cur.fetchall()  # tuples: the connection's default row factory

    async def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        cur = await self.conn.execute(_pg(sql), params)
        return cur.rowcount


class PostgresStorage(OnHotPath):
    def __init__(self, url: str, min_size: int = 1, max_size: int = POOL_SIZE,
                 busy_wait: float = BUSY_WAIT, hot_size: int = 2) -> None:
        """`min_size`/`max_size`: the units of work's pool. `hot_size`: the runtime hot
        path's own pool (`HOT_SESSION`), one connection kept open: its batches run one at a
        time per statement kind, so two connections serve a process whatever its load, and
        a burst of units of work never leaves a runtime call without one."""
        self.url = url
        self.busy_wait = busy_wait
        self.pool = _pool(url, min_size, max_size, busy_wait)
        self.hot_pool = _pool(url, 1, hot_size, busy_wait, options=_hot_options(url))
        self._opened = False
        self._opening = asyncio.Lock()  # several first requests must not each open the pool
        self._down = False  # the last attempt to use the database failed to reach it
        self._hot = HotPath(self._autocommit, "postgresql")

    async def open(self) -> None:
        """Connect at start (the server calls this before it serves)."""
        await self._open()

    async def _open(self) -> None:
        if self._opened:
            return
        async with self._opening:
            if self._opened:
                return
            try:
                await self.pool.open(wait=True, timeout=OPEN_WAIT)
                await self.hot_pool.open()
            except PoolTimeout:
                # Open all the same: the pool keeps connecting in the background and the
                # server answers 503 (and /readyz says so) until the database is back.
                self._down = True
            self._opened = True

    @asynccontextmanager
    async def _connection(self, hot: bool = False
                          ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection (of the hot path's pool with `hot`); a database that cannot
        be reached is `Unavailable` (HTTP 503 with Retry-After), never a driver error, and
        never a thirty-second hang."""
        await self._open()
        pool = self.hot_pool if hot else self.pool
        try:
            async with pool.connection(
                    timeout=OUTAGE_WAIT if self._down else self.busy_wait) as conn:
                yield conn
        except PoolTimeout as exc:
            # No connection in time. Busy (every connection in use) is not an outage; a pool
            # that holds no connection at all cannot reach the database.
            if pool.get_stats().get("pool_size", 0) == 0:
                self._down = True
            raise Unavailable(RETRY_AFTER) from exc
        except psycopg.OperationalError as exc:
            # Connection lost, server shutting down: the database is away. Whatever the
            # transaction wrote was rolled back with it. A transaction the server rolled back
            # itself (SQLSTATE class 40: a deadlock, a serialization failure) says nothing of
            # the database's health, so the requests after it still wait their turn for a
            # connection instead of failing fast as in an outage.
            if (exc.sqlstate or "").startswith("40"):
                raise Contended() from exc
            self._down = True
            raise Unavailable(RETRY_AFTER) from exc
        self._down = False

    @asynccontextmanager
    async def unit_of_work(self) -> AsyncIterator[SqlUnitOfWork]:
        async with self._connection() as conn, conn.transaction():
            yield SqlUnitOfWork(_Executor(conn), "postgresql")

    @asynccontextmanager
    async def _autocommit(self) -> AsyncIterator[_Executor]:
        async with self._connection(hot=True) as conn:
            yield _Executor(conn)

    async def ready(self) -> bool:
        """Whether the database answers a query right now, within about a second."""
        try:
            async with asyncio.timeout(1.0):
                async with self._connection() as conn:
                    await conn.execute("SELECT 1")
        except (Unavailable, TimeoutError):
            return False
        return True

    async def migrate(self) -> None:
        async with self.unit_of_work() as uow:
            # The advisory lock serialises migrators from several processes.
            await uow.db.run(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            await apply_migrations(uow.db, "postgresql")

    async def close(self) -> None:
        if self._opened:
            await self._hot.close()
            await self.pool.close()
            await self.hot_pool.close()
            self._opened = False
