"""Storage adapters: SQLite (embedded default) and PostgreSQL, one schema, one SQL; and an
in-memory store for tests and embedders that keep nothing.

Each is imported when first named: a process on SQLite never loads the PostgreSQL driver
(about a quarter of a worker's start-up import time)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adapters_storage.memory.storage import MemoryStorage
    from adapters_storage.postgres import PostgresStorage
    from adapters_storage.sqlite import SqliteStorage

# Seconds a request waits for a pooled PostgreSQL connection while the database answers.
BUSY_WAIT = 30.0
POOL_SIZE = 8  # PostgreSQL connections a process keeps for units of work, at most

_WHERE = {"MemoryStorage": "adapters_storage.memory.storage",
          "PostgresStorage": "adapters_storage.postgres",
          "SqliteStorage": "adapters_storage.sqlite"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'adapters_storage' has no attribute {name!r}")


def open_storage(url: str, busy_wait: float = BUSY_WAIT,
                 pool_size: int = POOL_SIZE) -> SqliteStorage | PostgresStorage:
    """`busy_wait`: seconds a request waits for a PostgreSQL connection while the database
    answers but every pooled connection is in use; `pool_size`: at most how many
    connections a process keeps for units of work on PostgreSQL (docs/operators.md)."""
    if url.startswith(("postgresql://", "postgres://")):
        from adapters_storage.postgres import PostgresStorage
        return PostgresStorage(url, max_size=pool_size, busy_wait=busy_wait)
    if url.startswith("sqlite:"):
        from adapters_storage.sqlite import SqliteStorage
        return SqliteStorage.from_url(url)
    raise ValueError("the database URL must start with sqlite:/// or postgresql://")


__all__ = ["BUSY_WAIT", "POOL_SIZE", "MemoryStorage", "PostgresStorage", "SqliteStorage",
           "open_storage"]
