"""The embedded default: SQLite through aiosqlite.

A small pool of connections in WAL mode. Every unit of work starts with `BEGIN IMMEDIATE`, so
writers from any number of processes on one file queue on SQLite's own lock (with a busy
timeout) instead of failing half-way, and readers are never blocked by WAL.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from adapters_storage.batching import RuntimeBatcher, RuntimeRequest
from adapters_storage.schema import MIGRATIONS, statements
from adapters_storage.sql_transaction import SqlTransaction
from licore.runtime import Facts as RuntimeFacts

BUSY_TIMEOUT_MS = 30_000


class _Executor:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    # Each await is a hop to aiosqlite's thread and back, the main cost of a short
    # transaction, so a statement takes exactly one: execute_fetchall, or execute without
    # closing the cursor explicitly (it closes when dropped).
    async def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in await self.conn.execute_fetchall(sql, params)]

    async def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        cursor = await self.conn.execute(sql, params)
        return cursor.rowcount


class SqliteStorage:
    def __init__(self, path: str | Path, pool_size: int = 1) -> None:
        self.path = str(path)
        self.pool_size = pool_size
        self._idle: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self._all: list[aiosqlite.Connection] = []
        self._opening = asyncio.Lock()
        self._batcher = RuntimeBatcher(self._runtime_batch)

    @classmethod
    def from_url(cls, url: str) -> SqliteStorage:
        # sqlite:///relative.db or sqlite:////absolute.db
        path = url.removeprefix("sqlite://")
        path = path[1:] if path.startswith("/") else path
        return cls(path or "licore.db")

    async def _connect(self) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        await conn.execute("PRAGMA journal_mode = WAL")
        await conn.execute("PRAGMA synchronous = NORMAL")
        await conn.execute("PRAGMA foreign_keys = ON")
        return conn

    async def _acquire(self) -> aiosqlite.Connection:
        async with self._opening:
            if self._idle.empty() and len(self._all) < self.pool_size:
                conn = await self._connect()
                self._all.append(conn)
                return conn
        return await self._idle.get()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqlTransaction]:
        conn = await self._acquire()
        try:
            await conn.execute("BEGIN IMMEDIATE")
            try:
                yield SqlTransaction(_Executor(conn))
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            await conn.execute("COMMIT")
        finally:
            self._idle.put_nowait(conn)

    async def runtime_read(self, buckets: Sequence[str], window_start: int, key_digest: str,
                           user_id: str, game_id: str | None) -> tuple[list[int], RuntimeFacts]:
        request = RuntimeRequest(tuple(buckets), key_digest, user_id, game_id)
        return await self._batcher.read(window_start, request)

    async def _runtime_batch(self, window_start: int, requests: Sequence[RuntimeRequest]
                             ) -> list[tuple[list[int], RuntimeFacts]]:
        # Autocommit statements: no BEGIN/COMMIT trips; the counters need no transaction.
        conn = await self._acquire()
        try:
            return await SqlTransaction(_Executor(conn)).runtime_batch(window_start, requests)
        finally:
            self._idle.put_nowait(conn)

    async def migrate(self) -> None:
        async with self.transaction() as tx:
            db = tx.db
            await db.run("CREATE TABLE IF NOT EXISTS schema_migrations "
                         "(version INTEGER PRIMARY KEY)")
            done = {r[0] for r in await db.rows("SELECT version FROM schema_migrations")}
            for version, migration in enumerate(MIGRATIONS, start=1):
                if version in done:
                    continue
                for sql in statements("sqlite", migration):
                    await db.run(sql)
                await db.run("INSERT INTO schema_migrations (version) VALUES (?)", [version])

    async def close(self) -> None:
        for conn in self._all:
            await conn.close()
        self._all.clear()
