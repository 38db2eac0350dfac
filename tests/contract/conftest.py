"""The contract tests' `storage`: the root one's, plus SQLite with its runtime hot path sent
through aiosqlite (`direct=False`), so the port's contract holds on both of SQLite's paths:
the statements run on the event loop's thread, and the ones aiosqlite runs when a lock is
held (see adapters_storage.sqlite)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from adapters_storage import MemoryStorage, SqliteStorage, open_storage
from licore.storage_ports import Storage


@pytest_asyncio.fixture(params=["memory", "sqlite", "sqlite-aiosqlite",
                                pytest.param("postgres", marks=pytest.mark.postgres)])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    store: Storage
    if request.param == "memory":
        store = MemoryStorage()
    elif request.param == "sqlite":
        store = open_storage(f"sqlite:///{tmp_path / 'licore.db'}")
    elif request.param == "sqlite-aiosqlite":
        store = SqliteStorage(tmp_path / "licore.db", direct=False)
    else:
        store = open_storage(request.getfixturevalue("pg_schema_url"))
    await store.migrate()
    try:
        yield store
    finally:
        await store.close()
