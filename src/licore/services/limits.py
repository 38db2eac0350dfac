"""Fixed-window rate limits whose counters live in the database, so every server process on
one database shares them."""

from __future__ import annotations

import attrs

from licore.errors import RateLimited
from licore.ports import Clock
from licore.storage_ports import Storage

WINDOW = 60


@attrs.frozen
class Quota:
    """What is left of a limit after this request, for the caller to pace itself."""

    limit: int
    remaining: int
    reset: int  # seconds until the window starts again


async def hit(storage: Storage, clock: Clock, bucket: str, limit: int) -> Quota:
    """Count one request in `bucket`; raise `RateLimited` past `limit` in this minute."""
    now = clock.now()
    start = now - now % WINDOW
    async with storage.unit_of_work() as uow:
        (count,) = await uow.counters.hit([bucket], start)
    reset = max(1, start + WINDOW - now)
    if count > limit:
        raise RateLimited(retry_after=reset, limit=limit)
    return Quota(limit, limit - count, reset)
