"""PostgreSQL through psycopg 3, async, with a connection pool, for scale."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import cache
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from adapters_storage.sql.common import apply_migrations
from adapters_storage.sql.hot_path import HotPath
from adapters_storage.sql.unit_of_work import SqlUnitOfWork
from licore.runtime import Facts as RuntimeFacts

MIGRATION_LOCK = 0x11C0E  # any constant; the advisory lock serialises concurrent migrators


@cache
def _pg(sql: str) -> str:
    # The shared SQL uses `?`; psycopg wants `%s`, and a literal `%` must be doubled.
    return re.sub(r"\?", "%s", sql.replace("%", "%%"))


class _Executor:
    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn = conn

    async def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = await self.conn.execute(_pg(sql), params)
        return [tuple(r) for r in await cur.fetchall()] if cur.description else []

    async def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        cur = await self.conn.execute(_pg(sql), params)
        return cur.rowcount


class PostgresStorage:
    def __init__(self, url: str, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self.pool = AsyncConnectionPool(url, min_size=min_size, max_size=max_size, open=False)
        self._opened = False
        self._hot = HotPath(self._autocommit)

    async def _open(self) -> None:
        if not self._opened:
            await self.pool.open(wait=True)
            self._opened = True

    @asynccontextmanager
    async def unit_of_work(self) -> AsyncIterator[SqlUnitOfWork]:
        await self._open()
        async with self.pool.connection() as conn, conn.transaction():
            yield SqlUnitOfWork(_Executor(conn), "postgresql")

    @asynccontextmanager
    async def _autocommit(self) -> AsyncIterator[_Executor]:
        await self._open()
        async with self.pool.connection() as conn:
            yield _Executor(conn)
            await conn.commit()

    async def runtime_read(self, buckets: Sequence[str], window_start: int, key_digest: str,
                           user_id: str, game_id: str | None) -> tuple[list[int], RuntimeFacts]:
        return await self._hot.runtime_read(buckets, window_start, key_digest, user_id, game_id)

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        return await self._hot.use_nonce(license_id, nonce, expires_at, now)

    async def migrate(self) -> None:
        async with self.unit_of_work() as uow:
            # The advisory lock serialises migrators from several processes.
            await uow.db.run(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            await apply_migrations(uow.db, "postgresql")

    async def close(self) -> None:
        if self._opened:
            await self.pool.close()
            self._opened = False
