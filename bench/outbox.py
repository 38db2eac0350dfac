"""How long studio A's webhook deliveries take while other studios' endpoints hang
(docs/events.md, "How delivery is scheduled"; docs/performance.md).

Run from the repository root: `.venv/bin/python bench/outbox.py [--events 100] [--timeout 5]
[--bad-studios 7]`.

One delivery loop as `licore serve` runs it (`licore_cli.worker.work_forever`, 16 slots), the
real webhook sender (`SignedSender`, signing and all) and storage on SQLite in a temporary
file, in one process; the receivers are asyncio HTTP servers on loopback. Studio A's receiver
answers 204 at once; its events are made at a steady 20 a second, and each one's latency is
the time from the change that made it to its arrival.

- baseline: studio A alone.
- isolation: first each bad studio's three endpoints (`--bad-studios`, 1 by default), which
  accept each request and never answer, get `--events` events queued (three messages each),
  then A's events are made as above. Each of their sends waits out the whole `--timeout`.

Printed: A's p50, p99 and worst latency in each, and their ratio to the same run's baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

import attrs  # noqa: E402
from tests.support.fakes import make_deps  # noqa: E402
from tests.support.scenario import build_world  # noqa: E402

from adapters_crypto import SystemClock  # noqa: E402
from adapters_events import SignedSender  # noqa: E402
from adapters_storage import open_storage  # noqa: E402
from licore import commands as c  # noqa: E402
from licore.actors import ActingStudio  # noqa: E402
from licore.licenses import LicenseEvent  # noqa: E402
from licore.services.wiring import UseCases  # noqa: E402
from licore_cli.worker import work_forever  # noqa: E402

A_RATE = 20.0


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return await reader.readexactly(length)


async def healthy(arrived: dict[str, float], expect: int,
                  all_came: asyncio.Event) -> asyncio.Server:
    """Answers 204 at once; notes when each platform id's event came."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                body = await _read_request(reader)
                arrived.setdefault(json.loads(body)["data"]["platform_id"], time.monotonic())
                if len(arrived) >= expect:
                    all_came.set()
                writer.write(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


async def silent() -> asyncio.Server:
    """Reads each request and never answers, until the sender gives up."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            await reader.read()  # returns when the sender closes the connection
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


def url(server: asyncio.Server) -> str:
    return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/hook"


async def run(b_events: int, send_timeout: float, with_b: bool,
              a_events: int = 100, bad_studios: int = 1) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        storage = open_storage(f"sqlite:///{tmp}/bench.db")
        await storage.migrate()
        deps = attrs.evolve(make_deps(storage), clock=SystemClock(),
                            webhooks=SignedSender(allow_private=True, timeout=send_timeout))
        uc = UseCases.of(deps)
        arrived: dict[str, float] = {}
        all_came = asyncio.Event()
        servers = [await healthy(arrived, a_events, all_came)]
        servers += [await silent() for _ in range(3 * bad_studios if with_b else 0)]
        try:
            a_world = await build_world(deps)
            a = ActingStudio(a_world.studio.id)
            await uc.webhooks.add(a, c.AddWebhook(url(servers[0]), ("license.granted",)))
            a_product = await uc.products.create(a, c.CreateProduct(title="A"))
            for i in range(bad_studios if with_b else 0):
                # build_world tells worlds apart by the length of their tag
                b = ActingStudio((await build_world(deps, "b" * (i + 1))).studio.id)
                b_product = await uc.products.create(b, c.CreateProduct(title=f"B{i}"))
                for server in servers[1 + 3 * i:4 + 3 * i]:
                    await uc.webhooks.add(b, c.AddWebhook(url(server), ("license.granted",)))
                for n in range(b_events):
                    await uc.lifecycle.change(b, c.ChangeLicense(
                        c.LicenseTarget(b_product.id, str(500_000 + n)), LicenseEvent.GRANT))
            worker = asyncio.create_task(work_forever(uc.delivery, 0.05))
            made: dict[str, float] = {}
            start = time.monotonic()
            for n in range(a_events):
                await asyncio.sleep(max(0.0, start + n / A_RATE - time.monotonic()))
                user = str(100_000 + n)
                made[user] = time.monotonic()
                await uc.lifecycle.change(a, c.ChangeLicense(
                    c.LicenseTarget(a_product.id, user), LicenseEvent.GRANT))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(all_came.wait(), 10 * send_timeout + 60)
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)
        finally:
            for server in servers:
                server.close()
            await storage.close()
    if len(arrived) < a_events:
        raise SystemExit(f"only {len(arrived)} of A's {a_events} events arrived")
    return sorted(arrived[u] - made[u] for u in made)


def p(latencies: list[float], q: float) -> float:
    return latencies[min(len(latencies) - 1, int(q * len(latencies)))]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100, help="B's queued events")
    parser.add_argument("--timeout", type=float, default=5.0, help="the webhook timeout")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, alternating")
    parser.add_argument("--bad-studios", type=int, default=1,
                        help="studios whose three endpoints each never answer")
    args = parser.parse_args()
    await run(0, args.timeout, with_b=False, a_events=20)  # warm-up: imports, the TLS context
    runs: dict[bool, list[list[float]]] = {False: [], True: []}
    for n in range(args.repeat):
        for with_b in ((False, True) if n % 2 == 0 else (True, False)):
            runs[with_b].append(await run(args.events, args.timeout, with_b,
                                          bad_studios=args.bad_studios))
    print(f"studio A: 100 events at {A_RATE:g}/s; {args.bad_studios} bad studios: 3 endpoints "
          f"each that never answer, {args.events} events each queued first; webhook timeout "
          f"{args.timeout:g} s; median of {args.repeat} runs each")
    print(f"{'':<28}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    got: dict[bool, tuple[float, float, float]] = {}
    for with_b, name in ((False, "baseline (A alone)"), (True, "A while theirs hang")):
        got[with_b] = (statistics.median(p(r, .5) for r in runs[with_b]),
                       statistics.median(p(r, .99) for r in runs[with_b]),
                       statistics.median(r[-1] for r in runs[with_b]))
        print(f"{name:<28}" + "".join(f"{v * 1000:>9.1f}" for v in got[with_b]))
    base, hung = got[False], got[True]
    print(f"ratio to baseline: p50 {hung[0] / base[0]:.2f}, p99 {hung[1] / base[1]:.2f}, "
          f"max {hung[2] / base[2]:.2f}")
    print(f"A's p99 within 2 s: {'yes' if hung[1] <= 2.0 else 'NO'}")


if __name__ == "__main__":
    asyncio.run(main())
