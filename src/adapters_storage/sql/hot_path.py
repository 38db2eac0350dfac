"""The runtime hot path, written once for both databases.

Concurrent runtime reads (and nonce writes) wait in a batcher and go to the database
together; each batch runs on a connection outside any unit of work, committed before the
answers return. A database adapter supplies only that connection and its dialect, which
decides how a batch's rows are passed to a statement (see `row_source`).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, suppress

import attrs

from adapters_storage.batching import Answer, Batcher, NonceRequest, RuntimeRequest
from adapters_storage.sql.common import Executor, row_source
from adapters_storage.sql.runtime import runtime_batch, use_nonces
from adapters_storage.sql.usage import add_usage
from licore.runtime import Facts as RuntimeFacts
from licore.usage import Call, SeenKey, tally

Autocommit = Callable[[], AbstractAsyncContextManager[Executor]]
SHARDS_FROM = 1 << 16  # shard 0 is the units of work's; every shard a 4-byte int to psycopg
USAGE_FLUSH_EVERY = 5.0  # seconds: the kept calls ride a runtime batch at most this often
SEEN_MAX = 100_000  # users and places this process remembers writing; past it, forgotten


def process_shard() -> int:
    """A random shard for this process's runtime counters: distinct across processes and
    hosts but for a one-in-a-billion clash, which only costs the two processes a shared row.
    Each server worker is a spawned process that opens its own storage, so each draws its
    own."""
    return SHARDS_FROM + secrets.randbelow((1 << 31) - SHARDS_FROM)


class HotPath:
    def __init__(self, autocommit: Autocommit, dialect: str) -> None:
        """`autocommit()`: a connection whose statements are committed when the block
        ends. `dialect`: the database, which decides how a batch's rows are passed and
        whether this process counts in a rate-counter shard of its own (see `add_hits`)."""
        self.autocommit = autocommit
        self.source = row_source(dialect)
        self.shard = process_shard() if dialect == "postgresql" else None
        self._batcher: Batcher[int, RuntimeRequest, Answer] = Batcher(self._runtime_batch)
        self._nonces: Batcher[int, NonceRequest, bool] = Batcher(self._nonce_batch)
        self._calls: list[Call] = []  # kept for the usage rollup, not yet written
        self._written_at = 0.0  # the event loop's time of the last write of them
        self._timer: asyncio.Task[None] | None = None
        # (product, hour, user or place) this process has written: not sent again, so a
        # user calling all hour costs the database one row once.
        self._seen_users: set[SeenKey] = set()
        self._seen_places: set[SeenKey] = set()

    async def runtime_read(self, buckets: Sequence[str], window_start: int, key_digest: str,
                           user_id: str, game_id: str | None) -> tuple[list[int], RuntimeFacts]:
        request = RuntimeRequest(tuple(buckets), key_digest, user_id, game_id)
        return await self._batcher.read(window_start, request)

    async def _runtime_batch(self, window_start: int,
                             requests: Sequence[RuntimeRequest]) -> list[Answer]:
        calls = self._due()
        async with self.autocommit() as db:
            answers = await runtime_batch(db, self.source, window_start, requests, self.shard)
            if calls:
                await self._write(db, calls)
        return answers

    # The usage rollup (licore.usage): each call is kept here, and the calls kept ride the
    # next runtime batch once USAGE_FLUSH_EVERY seconds have passed since the last write,
    # rolled up into a few rows (one per product, hour, endpoint and outcome, and the
    # users and places not written before), on the batch's connection. Under load that is
    # at most three statements every few seconds, whatever the rate of calls; when no
    # batch comes, a timer writes them on its own.

    def note_call(self, call: Call) -> None:
        self._calls.append(call)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(self._write_later())

    def _due(self) -> list[Call]:
        """The kept calls, taken, when USAGE_FLUSH_EVERY seconds have passed since they
        were last written."""
        now = asyncio.get_running_loop().time()
        if not self._calls or now - self._written_at < USAGE_FLUSH_EVERY:
            return []
        self._written_at = now
        taken, self._calls = self._calls, []
        return taken

    async def _write(self, db: Executor, calls: Sequence[Call]) -> None:
        # A failed write loses these calls from the rollup, never a runtime answer.
        with suppress(Exception):
            await self._add(db, calls)

    async def _add(self, db: Executor, calls: Sequence[Call]) -> None:
        t = tally(calls)
        fresh = attrs.evolve(t, users=t.users - self._seen_users,
                             places=t.places - self._seen_places)
        await add_usage(db, self.source, fresh, self.shard or 0)
        if len(self._seen_users) + len(self._seen_places) > SEEN_MAX:
            self._seen_users, self._seen_places = set(), set()
        self._seen_users |= fresh.users
        self._seen_places |= fresh.places

    async def _write_later(self) -> None:
        try:
            while self._calls:
                await asyncio.sleep(USAGE_FLUSH_EVERY)
                calls = self._due()
                if calls:
                    async with self.autocommit() as db:
                        await self._write(db, calls)
        finally:
            self._timer = None

    async def flush_usage(self) -> None:
        """Write every kept call now (before a read of the rollup, and at close)."""
        taken, self._calls = self._calls, []
        if taken:
            async with self.autocommit() as db:
                await self._add(db, taken)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        with suppress(Exception):
            await self.flush_usage()

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        return await self._nonces.read(now, NonceRequest(license_id, nonce, expires_at))

    async def _nonce_batch(self, now: int, requests: Sequence[NonceRequest]) -> list[bool]:
        async with self.autocommit() as db:
            return await use_nonces(db, self.source, now, requests)


class OnHotPath:
    """The runtime calls of a SQL storage, each handed to the storage's `HotPath` (`_hot`):
    written here once for both databases."""

    _hot: HotPath

    async def runtime_read(self, buckets: Sequence[str], window_start: int, key_digest: str,
                           user_id: str, game_id: str | None) -> tuple[list[int], RuntimeFacts]:
        return await self._hot.runtime_read(buckets, window_start, key_digest, user_id, game_id)

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        return await self._hot.use_nonce(license_id, nonce, expires_at, now)

    def note_call(self, call: Call) -> None:
        self._hot.note_call(call)

    async def flush_usage(self) -> None:
        await self._hot.flush_usage()
