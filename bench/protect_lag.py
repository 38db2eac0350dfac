"""How long the event loop waits while a big script is protected: in a thread of the serving
process (the offload) or in a protection worker process (adapters_protection.processes).

Run from the repository root: `.venv/bin/python bench/protect_lag.py`.

An asyncio task sleeps 10 ms over and over while one script of 1 MiB (bench/protect.py's
one-script shape) is protected under `light` through `asyncio.to_thread`, as a download
does; each sleep's overshoot is the time the loop could not run. Protecting holds the
interpreter lock (tree-sitter's parse of the whole script included), so in a thread the
loop gets it only between the protector's slices. Printed: pings, and the overshoot's
median, 99th percentile and maximum in ms, for each way, alternately.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from adapters_protection.fingerprint import DEFAULT_SECRET  # noqa: E402
from adapters_protection.luau_protector import LuauProtector  # noqa: E402
from adapters_protection.processes import ProcessProtector  # noqa: E402
from bench.protect import MIB, SECRET, one_script  # noqa: E402
from licore.protection import parse_protection_settings  # noqa: E402


async def lag(work: Callable[[], object]) -> tuple[int, float, float, float]:
    overshoots: list[float] = []
    done = False

    async def ping() -> None:
        while not done:
            start = time.perf_counter()
            await asyncio.sleep(0.01)
            overshoots.append(time.perf_counter() - start - 0.01)

    task = asyncio.create_task(ping())
    await asyncio.to_thread(work)
    done = True
    await task
    overshoots.sort()
    return (len(overshoots), 1000 * overshoots[len(overshoots) // 2],
            1000 * overshoots[int(len(overshoots) * 0.99)], 1000 * overshoots[-1])


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--rounds", type=int, default=2)
    opts = args.parse_args()
    rules = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "light"}]})
    script = [("ServerScriptService/Big", one_script(MIB))]
    here, spread = LuauProtector(), ProcessProtector(DEFAULT_SECRET, 2)
    spread.protect_all(script, rules, SECRET)  # the pool started before the timing
    print(f"{'where':<10}{'pings':>7}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for _ in range(opts.rounds):
        ways: tuple[tuple[str, LuauProtector | ProcessProtector], ...] = (
            ("thread", here), ("worker", spread))
        for name, protector in ways:
            def work(p: LuauProtector | ProcessProtector = protector) -> object:
                return p.protect_all(script, rules, SECRET)

            pings, p50, p99, most = asyncio.run(lag(work))
            print(f"{name:<10}{pings:>7}{p50:>9.2f}{p99:>9.2f}{most:>9.1f}")
    spread.close()


if __name__ == "__main__":
    main()
