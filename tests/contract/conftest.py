"""The contract tests' `storage`: the root one's, plus SQLite with its runtime hot path sent
through aiosqlite (`direct=False`), so the port's contract holds on both of SQLite's paths:
the statements run on the event loop's thread, and the ones aiosqlite runs when a lock is
held (see adapters_storage.sqlite)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from adapters_storage import SqliteStorage
from licore.storage_ports import Storage
from tests.conftest import migrated_storage


@pytest_asyncio.fixture(params=["memory", "sqlite", "sqlite-aiosqlite",
                                pytest.param("postgres", marks=pytest.mark.postgres)])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    if request.param != "sqlite-aiosqlite":
        async with migrated_storage(request, tmp_path) as store:
            yield store
        return
    aiosqlite_only = SqliteStorage(tmp_path / "licore.db", direct=False)
    await aiosqlite_only.migrate()
    try:
        yield aiosqlite_only
    finally:
        await aiosqlite_only.close()
