"""Running the async use cases from Hypothesis' synchronous state machines."""

from __future__ import annotations

import asyncio
import unittest
from collections.abc import Coroutine
from typing import Any, ClassVar, TypeVar

from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine

from adapters_storage import MemoryStorage, SqliteStorage
from licore.services.deps import Deps, Settings
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps

T = TypeVar("T")


# An example costs about half as much on the in-memory storage as on SQLite (the rest is the
# event loop and Hypothesis), so it gets twice the examples for about the same time.
MEMORY_EXAMPLES_FACTOR = 2


class AsyncWorld:
    """A fresh store (in-memory SQLite, or the in-memory storage), a fake clock and an event
    loop of its own."""

    def __init__(self, backend: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock()
        # Rate limits have their own tests; here they would only cut sequences short.
        unlimited = Settings(device_code_rate_limit=10**9, code_entry_rate_limit=10**9,
                             runtime_key_rate_limit=10**9, runtime_ip_rate_limit=10**9)
        storage: Storage = (MemoryStorage() if backend == "memory"
                            else SqliteStorage(":memory:", pool_size=1))
        self.deps: Deps = make_deps(storage, self.clock, unlimited)
        self.run(self.deps.storage.migrate())

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.run(self.deps.storage.close())
        self.loop.close()


class StorageMachine(RuleBasedStateMachine):
    """A state machine over one store; `backend` says which."""

    backend: ClassVar[str] = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        self.w = AsyncWorld(self.backend)

    def teardown(self) -> None:
        self.w.close()


def machine_tests(machine: type[StorageMachine], *, max_examples: int,
                  steps: int) -> tuple[type[unittest.TestCase], type[unittest.TestCase]]:
    """The machine's test case on SQLite, and one on the in-memory storage with
    MEMORY_EXAMPLES_FACTOR times the examples."""
    on_memory: type[StorageMachine] = type(f"{machine.__name__}InMemory", (machine,),
                                           {"backend": "memory"})
    cases: list[type[unittest.TestCase]] = []
    for cls, examples in ((machine, max_examples),
                          (on_memory, max_examples * MEMORY_EXAMPLES_FACTOR)):
        case = cls.TestCase
        case.settings = settings(max_examples=examples, stateful_step_count=steps,
                                 deadline=None)
        cases.append(case)
    return cases[0], cases[1]
