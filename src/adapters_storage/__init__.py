"""Storage adapters: SQLite (embedded default) and PostgreSQL, one schema, one SQL; and an
in-memory store for tests and embedders that keep nothing."""

from __future__ import annotations

from adapters_storage.memory.storage import MemoryStorage
from adapters_storage.postgres import BUSY_WAIT, PostgresStorage
from adapters_storage.sqlite import SqliteStorage


def open_storage(url: str, busy_wait: float = BUSY_WAIT) -> SqliteStorage | PostgresStorage:
    """`busy_wait`: seconds a request waits for a PostgreSQL connection while the database
    answers but every pooled connection is in use (docs/operators.md)."""
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresStorage(url, busy_wait=busy_wait)
    if url.startswith("sqlite:"):
        return SqliteStorage.from_url(url)
    raise ValueError("the database URL must start with sqlite:/// or postgresql://")


__all__ = ["MemoryStorage", "PostgresStorage", "SqliteStorage", "open_storage"]
