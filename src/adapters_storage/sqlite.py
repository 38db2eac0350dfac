"""The embedded default: SQLite through aiosqlite.

A small pool of connections in WAL mode. Every unit of work starts with `BEGIN IMMEDIATE`, so
writers from any number of processes on one file queue on SQLite's own lock (with a busy
timeout) instead of failing half-way, and readers are never blocked by WAL.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from adapters_storage.sql.common import apply_migrations
from adapters_storage.sql.hot_path import HotPath
from adapters_storage.sql.unit_of_work import SqlUnitOfWork
from licore.errors import Unavailable
from licore.runtime import Facts as RuntimeFacts
from licore.usage import Call

BUSY_TIMEOUT_MS = 30_000
RETRY_AFTER = 2  # seconds, told to callers when the file stayed locked past the timeout
WAL_ATTEMPTS = 600  # 30 seconds, like the busy timeout


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
        self._hot = HotPath(self._autocommit, "sqlite")

    @classmethod
    def from_url(cls, url: str) -> SqliteStorage:
        # sqlite:///relative.db or sqlite:////absolute.db
        path = url.removeprefix("sqlite://")
        path = path[1:] if path.startswith("/") else path
        return cls(path or "licore.db")

    async def _connect(self) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        await self._use_wal(conn)
        await conn.execute("PRAGMA synchronous = NORMAL")
        await conn.execute("PRAGMA foreign_keys = ON")
        # Deleted content is overwritten, so a copy of the file shows nothing removed (a
        # revoked license's rows, say).
        await conn.execute("PRAGMA secure_delete = ON")
        return conn

    @staticmethod
    async def _use_wal(conn: aiosqlite.Connection) -> None:
        # WAL is a property of the file, set once. Switching needs an exclusive lock and
        # SQLite answers "locked" at once instead of using the busy timeout, so when several
        # processes open a new file together the losers retry until the winner has switched.
        for _ in range(WAL_ATTEMPTS):
            try:
                rows = await conn.execute_fetchall("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise
                await asyncio.sleep(0.05)
                continue
            if rows and str(next(iter(rows))[0]).lower() in ("wal", "memory"):
                return
            await asyncio.sleep(0.05)
        raise sqlite3.OperationalError("could not switch the database to WAL mode")

    async def _acquire(self) -> aiosqlite.Connection:
        async with self._opening:
            if self._idle.empty() and len(self._all) < self.pool_size:
                conn = await self._connect()
                self._all.append(conn)
                return conn
        return await self._idle.get()

    @asynccontextmanager
    async def unit_of_work(self) -> AsyncIterator[SqlUnitOfWork]:
        conn = await self._acquire()
        try:
            await conn.execute("BEGIN IMMEDIATE")
            try:
                yield SqlUnitOfWork(_Executor(conn))
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            await conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            # Another process held the file past the busy timeout: nothing was done.
            raise Unavailable(RETRY_AFTER) from exc
        finally:
            self._idle.put_nowait(conn)

    @asynccontextmanager
    async def _autocommit(self) -> AsyncIterator[_Executor]:
        # Autocommit statements: no BEGIN/COMMIT trips; the hot path needs no transaction.
        conn = await self._acquire()
        try:
            yield _Executor(conn)
        finally:
            self._idle.put_nowait(conn)

    async def runtime_read(self, buckets: Sequence[str], window_start: int, key_digest: str,
                           user_id: str, game_id: str | None) -> tuple[list[int], RuntimeFacts]:
        return await self._hot.runtime_read(buckets, window_start, key_digest, user_id, game_id)

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        return await self._hot.use_nonce(license_id, nonce, expires_at, now)

    def note_call(self, call: Call) -> None:
        self._hot.note_call(call)

    async def flush_usage(self) -> None:
        await self._hot.flush_usage()

    async def migrate(self) -> None:
        async with self.unit_of_work() as uow:
            await apply_migrations(uow.db, "sqlite")

    async def open(self) -> None:
        async with self._autocommit():
            pass

    async def ready(self) -> bool:
        try:
            async with asyncio.timeout(1.0), self._autocommit() as db:
                await db.rows("SELECT 1")
        except (sqlite3.Error, TimeoutError):
            return False
        return True

    async def close(self) -> None:
        if self._all:
            await self._hot.close()
        for conn in self._all:
            await conn.close()
        self._all.clear()
