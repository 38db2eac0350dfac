"""What a chat role added to a product many people hold costs: the change itself (the roles
and one fan-out message, one transaction), and the workers' expansion of that message into
one hand-out per linked active holder, a page of 500 holders per transaction (docs/events.md).

Run from the repository root: `.venv/bin/python bench/role_fanout.py [--holders 5000]`.
It runs on SQLite in a temporary file and on the PostgreSQL of the tests (a fresh schema,
`LICORE_TEST_POSTGRES` or 127.0.0.1:5432/test), skipping PostgreSQL when it is not there.

The baseline, measured in the same run on the same database, is writing the same number of
outbox messages in one unit of work with nothing else: the cost the fan-out cannot avoid.
The expansion's pages are timed as the worker's transactions do their work (read a page of
holders, write their hand-outs and the next page's message), without sending the hand-outs.
"""

from __future__ import annotations

import argparse
import asyncio
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
from adapters_storage import open_storage  # noqa: E402
from licore import commands as c  # noqa: E402
from licore.actors import ActingStudio  # noqa: E402
from licore.events import FanOut, Message, MessageKind, MessageState, RoleChange  # noqa: E402
from licore.licenses import LicenseState, Source  # noqa: E402
from licore.model import License  # noqa: E402
from licore.services.wiring import UseCases  # noqa: E402
from licore.storage_ports import Storage  # noqa: E402


async def measure(storage: Storage, holders: int
                  ) -> tuple[float, float, float, int, float]:
    # The real clock: ids must sort by creation time across thousands of messages.
    deps = attrs.evolve(make_deps(storage), clock=SystemClock())
    uc = UseCases.of(deps)
    world = await build_world(deps)
    studio = ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct(title="Popular"))
    now = deps.clock.now()
    async with storage.unit_of_work() as uow:
        for n in range(holders):
            await uow.licenses.add(License(f"lic_b{n:08d}", product.id, str(10_000 + n),
                                           Source.GRANT, LicenseState.ACTIVE, now, now))
            await uow.hooks.link_chat(str(10_000 + n), str(900_000 + n), now)
    start = time.perf_counter()
    async with storage.unit_of_work() as uow:
        await uow.outbox.add([Message(
            f"msg_base{n:08d}", MessageKind.CHAT_ROLE, "chat_role.add", "std_elsewhere",
            "1/2", f"lic_b{n:08d}", RoleChange("1", "2", str(10_000 + n)),
            MessageState.PENDING, 0, now, now)
            for n in range(holders)])
    baseline = time.perf_counter() - start
    start = time.perf_counter()
    await uc.webhooks.set_roles(studio, c.SetChatRoles(product.id, (c.RoleName("1", "2"),)))
    change = time.perf_counter() - start
    pages, longest, start = 0, 0.0, time.perf_counter()
    async with storage.unit_of_work() as uow:
        (message,) = (await uow.outbox.of_studio(world.studio.id, MessageKind.FAN_OUT, 1,
                                                 None)).items
    while True:
        page_start = time.perf_counter()
        async with storage.unit_of_work() as uow:
            assert isinstance(message.payload, FanOut)
            await uc.delivery.announce.reach_holders(uow, message, message.payload)
            # The worker marks the page's message done in the same transaction.
            (newest,) = (await uow.outbox.of_studio(world.studio.id, MessageKind.FAN_OUT, 1,
                                                    None)).items
        pages += 1
        longest = max(longest, time.perf_counter() - page_start)
        if newest.id == message.id:
            break
        message = newest
    expansion = time.perf_counter() - start
    async with storage.unit_of_work() as uow:
        queued = await uow.outbox.of_studio(world.studio.id, MessageKind.CHAT_ROLE, None, None)
    assert len(queued.items) == holders, len(queued.items)
    return baseline, change, expansion, pages, longest


async def run(name: str, url: str, holders: int) -> None:
    storage = open_storage(url)
    await storage.migrate()
    try:
        baseline, change, expansion, pages, longest = await measure(storage, holders)
    finally:
        await storage.close()
    print(f"{name:10} {holders} holders: the change {change * 1000:5.1f} ms; expanded in "
          f"{expansion:5.2f} s over {pages} transactions (longest {longest:4.2f} s); "
          f"baseline (the messages in one transaction) {baseline:5.2f} s; "
          f"{expansion / baseline:4.2f}x")


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--holders", type=int, default=5000)
    opts = args.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run("SQLite", f"sqlite:///{tmp}/bench.db", opts.holders))
    try:
        from tests.conftest import fresh_pg_schema

        with fresh_pg_schema() as url:
            asyncio.run(run("PostgreSQL", url, opts.holders))
    except BaseException as exc:  # pytest's skip when there is no server is not an Exception
        if type(exc).__name__ != "Skipped":
            raise
        print(f"PostgreSQL skipped: {exc}")


if __name__ == "__main__":
    main()
