"""The runtime hot path, written once for both databases.

Concurrent runtime reads (and nonce writes) wait in a batcher and go to the database
together; each batch runs on a connection outside any unit of work, committed before the
answers return. A database adapter supplies only that connection and its dialect, which
decides how a batch's rows are passed to a statement (see `row_source`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from adapters_storage.batching import Answer, Batcher, NonceRequest, RuntimeRequest
from adapters_storage.sql.common import Executor, row_source
from adapters_storage.sql.runtime import runtime_batch, use_nonces
from licore.runtime import Facts as RuntimeFacts

Autocommit = Callable[[], AbstractAsyncContextManager[Executor]]
SHARDS_FROM = 1 << 16  # shard 0 is the units of work's; every shard a 4-byte int to psycopg


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

    async def runtime_read(self, buckets: Sequence[str], window_start: int, key_digest: str,
                           user_id: str, game_id: str | None) -> tuple[list[int], RuntimeFacts]:
        request = RuntimeRequest(tuple(buckets), key_digest, user_id, game_id)
        return await self._batcher.read(window_start, request)

    async def _runtime_batch(self, window_start: int,
                             requests: Sequence[RuntimeRequest]) -> list[Answer]:
        async with self.autocommit() as db:
            return await runtime_batch(db, self.source, window_start, requests, self.shard)

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        return await self._nonces.read(now, NonceRequest(license_id, nonce, expires_at))

    async def _nonce_batch(self, now: int, requests: Sequence[NonceRequest]) -> list[bool]:
        async with self.autocommit() as db:
            return await use_nonces(db, self.source, now, requests)
