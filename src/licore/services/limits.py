"""Fixed-window rate limits whose counters live in the database, so every server process on
one database shares them."""

from __future__ import annotations

from licore.errors import RateLimited
from licore.services.deps import Deps

WINDOW = 60


async def hit(deps: Deps, bucket: str, limit: int) -> None:
    """Count one request in `bucket`; raise `RateLimited` past `limit` in this minute."""
    now = deps.clock.now()
    start = now - now % WINDOW
    async with deps.storage.unit_of_work() as uow:
        (count,) = await uow.counters.hit([bucket], start)
    if count > limit:
        raise RateLimited(retry_after=max(1, start + WINDOW - now))
