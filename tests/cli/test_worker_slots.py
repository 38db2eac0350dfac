"""Issue 46, item 3: a send still running after `SLOW_AFTER` gives its slot back
(licore_cli/worker.py), so sends that hang, more of them than the loop has slots, leave a
healthy message a slot; what a loop has in flight stays bounded (`PARKED` a slot). The loop
is the real one; the delivery it drives is a stand-in that hangs or answers at once."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, cast

from licore.services.delivery import Delivery
from licore_cli import worker


class Deliveries:
    """Hands out `hanging` messages that never end, then one that ends at once."""

    def __init__(self, hanging: int) -> None:
        self.queue = [f"hang-{i}" for i in range(hanging)] + ["healthy"]
        self.started: list[str] = []
        self.healthy_sent = asyncio.Event()

    async def claim(self, name: str, limit: int) -> list[str]:
        taken, self.queue = self.queue[:limit], self.queue[limit:]
        return taken

    async def deliver(self, message: str, name: str) -> None:
        self.started.append(message)
        if message == "healthy":
            self.healthy_sent.set()
            return
        await asyncio.Event().wait()  # a receiver that never answers

    async def backlog(self) -> int:
        return len(self.queue)


async def run(deliveries: Deliveries, slots: int) -> None:
    loop = asyncio.create_task(worker.work_forever(cast(Delivery, cast(Any, deliveries)),
                                                   0.05, slots=slots))
    try:
        await asyncio.wait_for(deliveries.healthy_sent.wait(), 30)
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop


async def test_hanging_sends_leave_a_healthy_message_a_slot() -> None:
    deliveries = Deliveries(hanging=3 * 2)  # three times the loop's two slots
    await run(deliveries, slots=2)
    assert deliveries.started[-1] == "healthy"
    assert len(deliveries.started) == 3 * 2 + 1


def test_what_a_loop_has_in_flight_stays_bounded() -> None:
    """Slots for new sends, at a moment: young sends hold theirs, slow ones do not, and the
    slow ones together stop at `PARKED` a slot."""
    def free(young: int, slow: int) -> int:
        started = [10.0] * young + [10.0 - 2 * worker.SLOW_AFTER] * slow
        running = cast(Any, {object(): at for at in started})
        return worker._free(running, 2, 10.0)

    assert (free(0, 0), free(1, 0), free(2, 0)) == (2, 1, 0)
    assert free(0, 6) == 2 and free(1, 6) == 1  # slow sends hold no slot
    assert free(0, 2 * worker.PARKED - 1) == 1 and free(0, 2 * worker.PARKED) == 0
