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
    def __init__(self, tables: Tables) -> None:
        self.accounts = MemoryAccounts(tables)
        self.studios = MemoryStudios(tables)
        self.clients = MemoryClients(tables)
        self.devices = MemoryDeviceAuthorizations(tables)
        self.api_keys = MemoryApiKeys(tables)
        self.products = MemoryProducts(tables)
        self.versions = MemoryVersions(tables)
        self.copies = MemoryPreparedCopies(tables)
        self.licenses = MemoryLicenses(tables)
        self.alerts = MemoryAlerts(tables)
        self.blacklist = MemoryBlacklist(tables)
        self.runtime = MemoryRuntimeRecords(tables)
        self.counters = MemoryRateCounters(tables)
        self.outbox = MemoryOutbox(tables)
        self.hooks = MemoryHooks(tables)
        self.idempotency = MemoryIdempotencyKeys(tables)
        self.usage = MemoryUsage(tables)
        self.images = MemoryImages(tables)
        self.audit = MemoryAuditLog(tables)


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
