"""Best-of-N timing for the benchmarks: the least disturbed run is the one to compare."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable


def best(fn: Callable[[], object], repeat: int) -> float:
    fastest = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


async def best_async(fn: Callable[[], Awaitable[object]], repeat: int) -> float:
    fastest = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest
