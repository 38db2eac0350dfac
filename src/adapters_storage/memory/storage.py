"""The in-memory storage adapter.

One lock stands for the database's write lock: a unit of work holds it from start to end,
so units of work run one after another as they do on SQLite (`BEGIN IMMEDIATE`), and a
rollback restores the snapshot taken at the start. The hot path takes the same lock, so it
never sees a unit of work half done.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import cached_property

from adapters_storage.memory.abuse import MemoryAlerts, MemoryBlacklist
from adapters_storage.memory.audit import MemoryAuditLog
from adapters_storage.memory.catalog import (
    MemoryLicenses,
    MemoryPreparedCopies,
    MemoryProducts,
    MemoryVersions,
)
from adapters_storage.memory.events import MemoryHooks, MemoryOutbox
from adapters_storage.memory.idempotency import MemoryIdempotencyKeys
from adapters_storage.memory.images import MemoryImages
from adapters_storage.memory.people import (
    MemoryAccounts,
    MemoryApiKeys,
    MemoryClients,
    MemoryDeviceAuthorizations,
    MemoryStudios,
)
from adapters_storage.memory.runtime import (
    MemoryRateCounters,
    MemoryRuntimeRecords,
    runtime_facts,
)
from adapters_storage.memory.tables import Tables
from adapters_storage.memory.usage import MemoryUsage
from licore.runtime import Facts as RuntimeFacts
from licore.usage import Call, tally


class MemoryUnitOfWork:
    """Its repositories made when first asked for, as the SQL unit of work's are."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    @cached_property
    def accounts(self) -> MemoryAccounts:
        return MemoryAccounts(self.tables)

    @cached_property
    def studios(self) -> MemoryStudios:
        return MemoryStudios(self.tables)

    @cached_property
    def clients(self) -> MemoryClients:
        return MemoryClients(self.tables)

    @cached_property
    def devices(self) -> MemoryDeviceAuthorizations:
        return MemoryDeviceAuthorizations(self.tables)

    @cached_property
    def api_keys(self) -> MemoryApiKeys:
        return MemoryApiKeys(self.tables)

    @cached_property
    def products(self) -> MemoryProducts:
        return MemoryProducts(self.tables)

    @cached_property
    def versions(self) -> MemoryVersions:
        return MemoryVersions(self.tables)

    @cached_property
    def copies(self) -> MemoryPreparedCopies:
        return MemoryPreparedCopies(self.tables)

    @cached_property
    def licenses(self) -> MemoryLicenses:
        return MemoryLicenses(self.tables)

    @cached_property
    def outbox(self) -> MemoryOutbox:
        return MemoryOutbox(self.tables)

    @cached_property
    def hooks(self) -> MemoryHooks:
        return MemoryHooks(self.tables)

    @cached_property
    def images(self) -> MemoryImages:
        return MemoryImages(self.tables)

    @cached_property
    def audit(self) -> MemoryAuditLog:
        return MemoryAuditLog(self.tables)

    @cached_property
    def abuse(self) -> MemoryAbuse:
        return MemoryAbuse(self.tables)

    @cached_property
    def records(self) -> MemoryRequestRecords:
        return MemoryRequestRecords(self.tables)


class MemoryAbuse:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    @cached_property
    def alerts(self) -> MemoryAlerts:
        return MemoryAlerts(self.tables)

    @cached_property
    def blacklist(self) -> MemoryBlacklist:
        return MemoryBlacklist(self.tables)


class MemoryRequestRecords:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    @cached_property
    def runtime(self) -> MemoryRuntimeRecords:
        return MemoryRuntimeRecords(self.tables)

    @cached_property
    def counters(self) -> MemoryRateCounters:
        return MemoryRateCounters(self.tables)

    @cached_property
    def idempotency(self) -> MemoryIdempotencyKeys:
        return MemoryIdempotencyKeys(self.tables)

    @cached_property
    def usage(self) -> MemoryUsage:
        return MemoryUsage(self.tables)


class MemoryStorage:
    def __init__(self) -> None:
        self.tables = Tables()
        self._locks: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}
        self._calls: list[Call] = []  # kept for the usage rollup, written with the next read

    def _lock(self) -> asyncio.Lock:
        # An asyncio lock belongs to one event loop; tests may drive a store from several.
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            self._locks = {loop: (lock := asyncio.Lock())}
        return lock

    @asynccontextmanager
    async def unit_of_work(self) -> AsyncIterator[MemoryUnitOfWork]:
        async with self._lock():
            before = self.tables.snapshot()
            try:
                yield MemoryUnitOfWork(self.tables)
            except BaseException:
                self.tables.restore(before)
                raise

    async def runtime_read(self, buckets: Sequence[str], window_start: int, key_digest: str,
                           user_id: str, game_id: str | None) -> tuple[list[int], RuntimeFacts]:
        async with self._lock():
            await self._write_calls()
            counters = self.tables.counters
            counts: list[int] = []
            for bucket in buckets:  # a bucket named twice counts twice, as in the SQL batch
                counts.append(counters.get((bucket, window_start), 0) + 1)
                counters[(bucket, window_start)] = counts[-1]
            return counts, runtime_facts(self.tables, key_digest, user_id, game_id)

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        async with self._lock():
            return await MemoryRuntimeRecords(self.tables).use_nonce(license_id, nonce,
                                                                     expires_at, now)

    def note_call(self, call: Call) -> None:
        self._calls.append(call)

    async def _write_calls(self) -> None:
        taken, self._calls = self._calls, []
        if taken:
            await MemoryUsage(self.tables).add(tally(taken))

    async def flush_usage(self) -> None:
        async with self._lock():
            await self._write_calls()

    async def migrate(self) -> None:
        """Nothing to migrate: the tables are made with the store."""

    async def open(self) -> None:
        """Nothing to connect to."""

    async def ready(self) -> bool:
        return True

    async def close(self) -> None:
        """Nothing to release."""
