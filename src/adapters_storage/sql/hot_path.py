"""The runtime hot path, written once for both databases.

Concurrent runtime reads (and nonce writes) wait in a batcher and go to the database
together; each batch runs on a connection outside any unit of work, committed before the
answers return. A database adapter supplies only that connection and its dialect, which
decides how a batch's rows are passed to a statement (see `row_source`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from adapters_storage.batching import Answer, Batcher, NonceRequest, RuntimeRequest
from adapters_storage.sql.common import Executor, row_source
from adapters_storage.sql.runtime import runtime_batch, use_nonces
from licore.runtime import Facts as RuntimeFacts

Autocommit = Callable[[], AbstractAsyncContextManager[Executor]]


class HotPath:
    def __init__(self, autocommit: Autocommit, dialect: str) -> None:
        """`autocommit()`: a connection whose statements are committed when the block
        ends. `dialect`: the database, which decides how a batch's rows are passed."""
        self.autocommit = autocommit
        self.source = row_source(dialect)
        self._batcher: Batcher[int, RuntimeRequest, Answer] = Batcher(self._runtime_batch)
        self._nonces: Batcher[int, NonceRequest, bool] = Batcher(self._nonce_batch)

    async def runtime_read(self, buckets: Sequence[str], window_start: int, key_digest: str,
                           user_id: str, game_id: str | None) -> tuple[list[int], RuntimeFacts]:
        request = RuntimeRequest(tuple(buckets), key_digest, user_id, game_id)
        return await self._batcher.read(window_start, request)

    async def _runtime_batch(self, window_start: int,
                             requests: Sequence[RuntimeRequest]) -> list[Answer]:
        async with self.autocommit() as db:
            return await runtime_batch(db, self.source, window_start, requests)

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        return await self._nonces.read(now, NonceRequest(license_id, nonce, expires_at))

    async def _nonce_batch(self, now: int, requests: Sequence[NonceRequest]) -> list[bool]:
        async with self.autocommit() as db:
            return await use_nonces(db, self.source, now, requests)
