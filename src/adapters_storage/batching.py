"""Runtime look-ups from concurrent requests, answered together.

On the runtime hot path each request needs two statements (count it, load its facts), and on
either database a statement is a trip: to aiosqlite's thread and back, or to the PostgreSQL
server and back. Under load many requests wait at once, so the batcher takes every request
waiting when the connection frees up and answers them all with the same two statements. With
no concurrency a batch is one request and nothing changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import attrs

from licore.runtime import Facts

MAX_BATCH = 128


@attrs.frozen
class RuntimeRequest:
    buckets: tuple[str, ...]
    key_digest: str
    user_id: str
    game_id: str | None


Answer = tuple[list[int], Facts]
RunBatch = Callable[[int, Sequence[RuntimeRequest]], Awaitable[list[Answer]]]


class RuntimeBatcher:
    def __init__(self, run: RunBatch) -> None:
        self._run = run
        self._pending: dict[int, list[tuple[RuntimeRequest, asyncio.Future[Answer]]]] = {}
        self._draining = False

    async def read(self, window_start: int, request: RuntimeRequest) -> Answer:
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(window_start, []).append((request, future))
        if not self._draining:
            self._draining = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._pending:
                window = next(iter(self._pending))
                queue = self._pending[window]
                batch, rest = queue[:MAX_BATCH], queue[MAX_BATCH:]
                if rest:
                    self._pending[window] = rest
                else:
                    del self._pending[window]
                try:
                    answers = await self._run(window, [r for r, _ in batch])
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
