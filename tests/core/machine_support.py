"""Running the async use cases from Hypothesis' synchronous state machines."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from adapters_storage import SqliteStorage
from licore.services.deps import Deps, Settings
from tests.support.fakes import FakeClock, make_deps

T = TypeVar("T")


class AsyncWorld:
    """A fresh in-memory SQLite database, a fake clock and an event loop of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock()
        # Rate limits have their own tests; here they would only cut sequences short.
        unlimited = Settings(device_code_rate_limit=10**9, code_entry_rate_limit=10**9,
                             runtime_key_rate_limit=10**9, runtime_ip_rate_limit=10**9)
        self.deps: Deps = make_deps(SqliteStorage(":memory:", pool_size=1), self.clock,
                                    unlimited)
        self.run(self.deps.storage.migrate())

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.run(self.deps.storage.close())
        self.loop.close()
