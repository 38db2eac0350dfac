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


def reset(now: int) -> int:
    """Seconds until the window `now` falls in ends (at least 1)."""
    return max(1, now - now % WINDOW + WINDOW - now)


def quota(count: int, limit: int, now: int) -> Quota | None:
    """What is left after the `count`th request of this window, or None past `limit`."""
    return None if count > limit else Quota(limit, limit - count, reset(now))


async def hit(storage: Storage, clock: Clock, bucket: str, limit: int) -> Quota:
    """Count one request in `bucket`; raise `RateLimited` past `limit` in this minute."""
    now = clock.now()
    async with storage.unit_of_work() as uow:
        (count,) = await uow.records.counters.hit([bucket], now - now % WINDOW)
    left = quota(count, limit, now)
    if left is None:
        raise RateLimited(retry_after=reset(now), limit=limit)
    return left
