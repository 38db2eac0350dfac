"""Housekeeping: rows that only matter for a while are deleted once they stop mattering."""

from __future__ import annotations

from licore.ports import Clock
from licore.storage_ports import Storage

SWEEP_EVERY = 300  # seconds; a nonce is remembered for 600
# Counters outlive their window by a margin: the longest window in use is the web sign-in
# limit's 15 minutes; a day covers it and anything a future limit is likely to need.
COUNTER_RETENTION = 24 * 3600


async def sweep(storage: Storage, clock: Clock) -> int:
    """Forget used nonces that can no longer be replayed (their payloads have expired) and
    counters of windows long past. Safe to run from every server process at once."""
    now = clock.now()
    async with storage.unit_of_work() as uow:
        return (await uow.runtime.sweep_nonces(now)
                + await uow.counters.sweep(now - COUNTER_RETENTION))
