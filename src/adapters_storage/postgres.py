"""PostgreSQL through psycopg 3, async, with a connection pool, for scale."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import cache
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from adapters_storage.batching import Answer, Batcher, NonceRequest, RuntimeRequest
from adapters_storage.sql_transaction import SqlTransaction, apply_migrations
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
        self._batcher: Batcher[int, RuntimeRequest, Answer] = Batcher(self._runtime_batch)
        self._nonces: Batcher[int, NonceRequest, bool] = Batcher(self._nonce_batch)

    async def _open(self) -> None:
        if not self._opened:
            await self.pool.open(wait=True)
            self._opened = True

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqlTransaction]:
        await self._open()
        async with self.pool.connection() as conn, conn.transaction():
            yield SqlTransaction(_Executor(conn))

    async def runtime_read(self, buckets: Sequence[str], window_start: int, key_digest: str,
                           user_id: str, game_id: str | None) -> tuple[list[int], RuntimeFacts]:
        request = RuntimeRequest(tuple(buckets), key_digest, user_id, game_id)
        return await self._batcher.read(window_start, request)

    async def _runtime_batch(self, window_start: int, requests: Sequence[RuntimeRequest]
                             ) -> list[tuple[list[int], RuntimeFacts]]:
        await self._open()
        async with self.pool.connection() as conn:
            answers = await SqlTransaction(_Executor(conn)).runtime_batch(window_start,
                                                                          requests)
            await conn.commit()
        return answers

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        return await self._nonces.read(now, NonceRequest(license_id, nonce, expires_at))

    async def _nonce_batch(self, now: int, requests: Sequence[NonceRequest]) -> list[bool]:
        await self._open()
        async with self.pool.connection() as conn:
            used = await SqlTransaction(_Executor(conn)).use_nonces(now, requests)
            await conn.commit()
        return used

    async def migrate(self) -> None:
        async with self.transaction() as tx:
            # The advisory lock serialises migrators from several processes.
            await tx.db.run(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            await apply_migrations(tx.db, "postgresql")

    async def close(self) -> None:
        if self._opened:
            await self.pool.close()
            self._opened = False
