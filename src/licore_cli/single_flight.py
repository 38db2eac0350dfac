"""`SingleFlight` on asyncio: the first caller under a key runs the work as a task, and
every caller that asks while it runs awaits the same task."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class AsyncSingleFlight:
    def __init__(self) -> None:
        self._running: dict[str, asyncio.Future[Any]] = {}

    async def __call__(self, key: str, fn: Callable[[], Awaitable[T]], /) -> T:
        running = self._running.get(key)
        if running is None:
            running = asyncio.ensure_future(fn())
            self._running[key] = running
            running.add_done_callback(lambda done: self._finished(key, done))
        # A cancelled caller must not cancel the work the others wait for.
        result: T = await asyncio.shield(running)
        return result

    def _finished(self, key: str, done: asyncio.Future[Any]) -> None:
        self._running.pop(key, None)
        if not done.cancelled():
            done.exception()  # retrieved: no warning when every caller was cancelled
