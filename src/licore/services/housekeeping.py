"""Housekeeping: the storage's life with the server (connect before serving, answer whether it
is ready, close), and rows that only matter for a while, deleted once they stop mattering."""

from __future__ import annotations

import attrs

from licore.ports import Clock
from licore.storage_ports import Storage

SWEEP_EVERY = 300  # seconds; a nonce is remembered for 600
# Counters outlive their window by a margin: the longest window in use is the web sign-in
# limit's 15 minutes; a day covers it and anything a future limit is likely to need.
COUNTER_RETENTION = 24 * 3600
DAY = 24 * 3600


@attrs.frozen
class Housekeeping:
    storage: Storage
    clock: Clock
    every: int = SWEEP_EVERY  # seconds between sweeps
    usage_retention_days: int = 400  # the usage rollup's hours kept (docs/operators.md)
    audit_retention_days: int = 0  # the audit trail's entries kept this long; 0: always

    async def open(self) -> None:
        """Connect now, before serving: the first requests of a fresh worker must not race
        to."""
        await self.storage.open()

    async def close(self) -> None:
        await self.storage.close()

    async def ready(self) -> bool:
        """Whether the database answers right now, known within about a second."""
        return await self.storage.ready()

    async def sweep(self) -> int:
        """Forget used nonces that can no longer be replayed (their payloads have expired),
        counters of windows long past, idempotency keys past their 24 hours and audit
        entries past the operator's retention. Safe to run from every server process at
        once."""
        now = self.clock.now()
        async with self.storage.unit_of_work() as uow:
            swept = (await uow.records.runtime.sweep_nonces(now)
                     + await uow.records.counters.sweep(now - COUNTER_RETENTION)
                     + await uow.records.idempotency.sweep(now)
                     + await uow.records.usage.sweep(now - self.usage_retention_days * DAY))
            if self.audit_retention_days:
                swept += await uow.audit.sweep(now - self.audit_retention_days * DAY)
            return swept
