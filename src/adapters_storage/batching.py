"""Runtime statements from concurrent requests, answered together.

On the runtime hot path each request needs two statements (count it, load its facts), and a
sealed answer one more (record its nonce); on either database a statement is a trip: to
aiosqlite's thread and back, or to the PostgreSQL server and back. Under load many requests
wait at once, so a batcher takes every request waiting when the connection frees up and
answers them all with the same statements. With no concurrency a batch is one request and
nothing changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, TypeVar

import attrs

from licore.runtime import Facts

MAX_BATCH = 128


@attrs.frozen
class RuntimeRequest:
    buckets: tuple[str, ...]
    key_digest: str
    user_id: str
    game_id: str | None


@attrs.frozen
class NonceRequest:
    license_id: str
    nonce: str
    expires_at: int


Answer = tuple[list[int], Facts]
K = TypeVar("K", bound=Hashable)
Req = TypeVar("Req")
Ans = TypeVar("Ans")


class Batcher(Generic[K, Req, Ans]):
    """Requests sharing a key (the rate window, the current second) go in one batch."""

    def __init__(self, run: Callable[[K, Sequence[Req]], Awaitable[list[Ans]]]) -> None:
        self._run = run
        self._pending: dict[K, list[tuple[Req, asyncio.Future[Ans]]]] = {}
        self._draining = False

    async def read(self, key: K, request: Req) -> Ans:
        future: asyncio.Future[Ans] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(key, []).append((request, future))
        if not self._draining:
            self._draining = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._pending:
                key = next(iter(self._pending))
                queue = self._pending[key]
                batch, rest = queue[:MAX_BATCH], queue[MAX_BATCH:]
                if rest:
                    self._pending[key] = rest
                else:
                    del self._pending[key]
                try:
                    answers = await self._run(key, [r for r, _ in batch])
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (_, future), answer in zip(batch, answers, strict=True):
                    if not future.done():
                        future.set_result(answer)
        finally:
            self._draining = False
