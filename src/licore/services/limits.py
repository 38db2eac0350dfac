"""Fixed-window rate limits whose counters live in the database, so every server process on
one database shares them."""

from __future__ import annotations

from licore.errors import RateLimited
from licore.ports import Clock, Storage

WINDOW = 60


async def hit(storage: Storage, clock: Clock, bucket: str, limit: int) -> None:
    """Count one request in `bucket`; raise `RateLimited` past `limit` in this minute."""
    now = clock.now()
    start = now - now % WINDOW
    async with storage.unit_of_work() as uow:
        (count,) = await uow.counters.hit([bucket], start)
    if count > limit:
        raise RateLimited(retry_after=max(1, start + WINDOW - now))
