"""The hot path's batcher (adapters_storage.batching): a request that finds nothing running
goes alone, in its caller's own task; those arriving meanwhile wait and go together."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from adapters_storage.batching import Batcher


async def test_a_lone_request_runs_in_its_callers_task_and_later_ones_go_together() -> None:
    batches: list[tuple[str, ...]] = []
    tasks: list[asyncio.Task[object] | None] = []
    gate = asyncio.Event()

    async def run(key: int, requests: Sequence[str]) -> list[str]:
        batches.append(tuple(requests))
        tasks.append(asyncio.current_task())
        if requests == ["first"]:
            await gate.wait()
        return [r.upper() for r in requests]

    batcher: Batcher[int, str, str] = Batcher(run)

    async def lone() -> tuple[str, asyncio.Task[object] | None]:
        return await batcher.read(1, "first"), asyncio.current_task()

    first = asyncio.create_task(lone())
    await asyncio.sleep(0)
    later = [asyncio.create_task(batcher.read(1, f"r{i}")) for i in range(3)]
    await asyncio.sleep(0)
    assert batches == [("first",)]  # the others wait for it
    gate.set()
    answer, caller = await first
    assert answer == "FIRST" and tasks[0] is caller
    assert await asyncio.gather(*later) == ["R0", "R1", "R2"]
    assert batches == [("first",), ("r0", "r1", "r2")]
    assert tasks[1] is not caller and tasks[1] not in later
    # Idle again: the next request goes alone in its own task once more.
    assert await batcher.read(1, "again") == "AGAIN" and batches[-1] == ("again",)


async def test_a_failed_lone_batch_fails_its_caller_and_the_waiting_still_run() -> None:
    gate = asyncio.Event()

    async def run(key: int, requests: Sequence[str]) -> list[str]:
        if requests == ["bad"]:
            await gate.wait()
            raise RuntimeError("statement failed")
        return list(requests)

    batcher: Batcher[int, str, str] = Batcher(run)
    bad = asyncio.create_task(batcher.read(1, "bad"))
    await asyncio.sleep(0)
    waiting = asyncio.create_task(batcher.read(1, "good"))
    await asyncio.sleep(0)
    gate.set()
    with pytest.raises(RuntimeError, match="statement failed"):
        await bad
    assert await waiting == "good"


async def test_a_cancelled_lone_caller_still_lets_the_waiting_run() -> None:
    gate = asyncio.Event()

    async def run(key: int, requests: Sequence[str]) -> list[str]:
        if requests == ["slow"]:
            await gate.wait()
        return list(requests)

    batcher: Batcher[int, str, str] = Batcher(run)
    slow = asyncio.create_task(batcher.read(1, "slow"))
    await asyncio.sleep(0)
    waiting = asyncio.create_task(batcher.read(1, "next"))
    await asyncio.sleep(0)
    slow.cancel()
    assert await asyncio.wait_for(waiting, 5) == "next"
