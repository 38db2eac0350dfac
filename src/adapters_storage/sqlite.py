"""The embedded default: SQLite through aiosqlite.

A small pool of connections in WAL mode. Every unit of work starts with `BEGIN IMMEDIATE`, so
writers from any number of processes on one file queue on SQLite's own lock (with a busy
timeout) instead of failing half-way, and readers are never blocked by WAL.

The runtime hot path's single statements (count, look-up, nonce, usage rollup) run on the
event loop's own thread through one more connection (`_Direct`), because aiosqlite's hop to
its thread and back cost more than the statement itself (docs/performance.md). That is safe
only as it is done here: in WAL mode, each statement in autocommit (one index probe or one
small upsert, microseconds), with a busy timeout of 0, so a statement that would have to wait
for a lock fails at once, having done nothing, and runs again through aiosqlite, which waits.
The loop thread never waits on a lock, and never checkpoints (that fsyncs): another thread
does (`_restart_wal`).
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
from adapters_storage.sql.hot_path import HotPath, OnHotPath
from adapters_storage.sql.unit_of_work import SqlUnitOfWork
from licore.errors import Unavailable

BUSY_TIMEOUT_MS = 30_000
# Direct writes between two checkpoints (on another thread, `_restart_wal`): about SQLite's
# own automatic checkpoint of a 1,000-page WAL, at the hot path's two pages or so a write.
CHECKPOINT_AFTER = 500
CHECKPOINT_WAIT = 1.0  # seconds a checkpoint waits for a writer or reader; then the next
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


def _waits(exc: sqlite3.OperationalError) -> bool:
    """Whether the statement failed only because it would have had to wait for a lock."""
    return exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _restart_wal(path: str) -> None:
    """Copy the WAL into the database and have the next writer start it over (`RESTART`).
    A passive checkpoint, as SQLite's automatic one, never lets a WAL start over while the
    loop keeps writing (a write lands during every checkpoint), so it would grow without end;
    this one holds writers off while it runs, and they go through aiosqlite meanwhile."""
    conn = sqlite3.connect(path, timeout=CHECKPOINT_WAIT)
    try:
        conn.execute("PRAGMA wal_checkpoint(RESTART)")
    finally:
        conn.close()


class _Direct:
    """An executor for the hot path's autocommit statements: each runs on the calling
    (event loop) thread through `conn`, and, when it would have to wait for a lock, through
    an aiosqlite connection of the pool instead (taken at the first such statement, given
    back when the block ends). A statement that failed that way did nothing: it runs once."""

    def __init__(self, storage: SqliteStorage, conn: sqlite3.Connection) -> None:
        self.storage = storage
        self.conn = conn
        self.pooled: aiosqlite.Connection | None = None

    async def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            found: list[tuple[Any, ...]] = self.conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if not _waits(exc):
                raise
            return await (await self._fallback()).rows(sql, params)
        self.storage.wrote_directly()
        return found

    async def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        try:
            count = self.conn.execute(sql, params).rowcount
        except sqlite3.OperationalError as exc:
            if not _waits(exc):
                raise
            return await (await self._fallback()).run(sql, params)
        self.storage.wrote_directly()
        return count

    async def _fallback(self) -> _Executor:
        if self.pooled is None:
            self.pooled = await self.storage._acquire()
        return _Executor(self.pooled)


class SqliteStorage(OnHotPath):
    def __init__(self, path: str | Path, pool_size: int = 1, direct: bool = True) -> None:
        """`direct`: the hot path's statements on the loop's thread (see the module); off,
        they all go through aiosqlite (the tests run the hot path both ways)."""
        self.path = str(path)
        self.pool_size = pool_size
        self._idle: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self._all: list[aiosqlite.Connection] = []
        self._opening = asyncio.Lock()
        self._hot = HotPath(self._hot_statements, "sqlite")
        self._direct_wanted = direct
        self._direct: sqlite3.Connection | None = None
        self._changes = 0  # the direct connection's total_changes when last looked at
        self._unchecked = 0  # direct writes since the last checkpoint was started
        self._checkpoint: asyncio.Task[None] | None = None

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

    @asynccontextmanager
    async def _hot_statements(self) -> AsyncIterator[_Executor | _Direct]:
        """Where the hot path's statements run: on this thread (`_Direct`) once the
        database is known to be in WAL mode, else through aiosqlite."""
        conn = self._direct if self._direct is not None else await self._open_direct()
        if conn is None:
            async with self._autocommit() as db:
                yield db
            return
        direct = _Direct(self, conn)
        try:
            yield direct
        finally:
            if direct.pooled is not None:
                self._idle.put_nowait(direct.pooled)

    async def _open_direct(self) -> sqlite3.Connection | None:
        """The hot path's own connection, opened once a pooled connection has put the file
        in WAL mode; None (aiosqlite for everything) when it is not (`:memory:`), or when
        opening had to wait for a lock (tried again on the next call)."""
        if not self._direct_wanted:
            return None
        async with self._autocommit():  # opens the pool's first connection: WAL is set
            pass
        if self._direct is not None:
            return self._direct
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                               cached_statements=512)
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            wal = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            # Checkpoints fsync: never on the loop's thread (see `wrote_directly`).
            conn.execute("PRAGMA wal_autocheckpoint = 0")
        except sqlite3.OperationalError as exc:
            conn.close()
            if _waits(exc):
                return None
            raise
        if not wal:
            conn.close()
            self._direct_wanted = False
            return None
        self._direct, self._changes = conn, conn.total_changes
        return conn

    def wrote_directly(self) -> None:
        """After a direct statement: past CHECKPOINT_AFTER writes, checkpoint the WAL on
        another thread."""
        assert self._direct is not None
        changes = self._direct.total_changes
        if changes == self._changes:
            return
        self._changes = changes
        self._unchecked += 1
        if self._unchecked >= CHECKPOINT_AFTER and self._checkpoint is None:
            self._unchecked = 0
            self._checkpoint = asyncio.get_running_loop().create_task(self._checkpoint_wal())

    async def _checkpoint_wal(self) -> None:
        try:
            await asyncio.to_thread(_restart_wal, self.path)
        except sqlite3.Error:
            pass  # the next one tries again; readers and writers never need it
        finally:
            self._checkpoint = None

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
        if self._checkpoint is not None:
            await self._checkpoint
        if self._direct is not None:
            self._direct.close()
            self._direct = None
        for conn in self._all:
            await conn.close()
        self._all.clear()
