"""Housekeeping: rows that only matter for a while are deleted once they stop mattering."""

from __future__ import annotations

from licore.services.deps import Deps
from licore.services.limits import WINDOW

SWEEP_EVERY = 300  # seconds; a nonce is remembered for 600


async def sweep(deps: Deps) -> int:
    """Forget used nonces that can no longer be replayed (their payloads have expired) and
    rate counters of past windows. Safe to run from every server process at once."""
    now = deps.clock.now()
    async with deps.storage.transaction() as tx:
        return await tx.sweep_expired(now, now - now % WINDOW - WINDOW)
