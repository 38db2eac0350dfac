"""The outbox worker loop (docs/events.md): one per server process, started with the
application, or alone with `licore worker`. Claims are leased in the database, so any number
of these, in any number of processes, share the work without sending a message twice at
once.

A loop keeps up to `slots` sends running at once, each its own task, and claims again as soon
as any send ends (the end of one message may let the next of its lane go) or, idle, every
`poll_seconds`. A send still running after `SLOW_AFTER` seconds gives its slot back: it goes on
waiting for its answer (or the sender's timeout) beside the others, up to `PARKED` such sends a
slot. So studios whose endpoints hang (each holds at most its share of the claims,
`licore.lanes.STUDIO_SLOTS`) wait out their timeouts while a healthy studio's messages still
find a slot, as long as the slow sends fit (64 for 16 slots: 21 studios of three hanging
endpoints; `bench/outbox.py --bad-studios 7`). Which messages may go, one
per lane and in order, is the claim's business (`licore.lanes.plan`)."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable

from licore.events import Message
from licore.services.delivery import Delivery

log = logging.getLogger("licore.outbox")

SLOTS = 16
SLOW_AFTER = 1.0  # seconds: a send running longer holds no slot of its own
PARKED = 4  # slow sends a slot, at most: what a worker has in flight is bounded still


def worker_name() -> str:
    """Unique per loop, readable in the table: host, process, random suffix."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


async def _send(delivery: Delivery, message: Message, name: str) -> None:
    try:
        await delivery.deliver(message, name)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the lease runs out and the message is sent again later
        log.error("outbox delivery failed: %s", type(exc).__name__)


# How often a worker runs the scheduled sweeps (license expiry and reminders) unless told
# (`LICORE_OUTBOX_SWEEP_MS`): well within the minute a seller is promised, and cheap (one
# indexed query) when nothing is due.
SCHEDULE_EVERY = 20.0


def _free(running: dict[asyncio.Task[None], float], slots: int, now: float) -> int:
    """Slots for new sends: those the sends younger than `SLOW_AFTER` do not hold, within
    `PARKED` sends a slot in all."""
    young = sum(1 for started in running.values() if now - started < SLOW_AFTER)
    return max(0, min(slots - young, slots * PARKED - len(running)))


def _wait(running: dict[asyncio.Task[None], float], poll_seconds: float, now: float) -> float:
    """How long to wait for a send to end: a poll, or until the next send turns slow and
    gives its slot back."""
    turning = [started + SLOW_AFTER - now for started in running.values()
               if now - started < SLOW_AFTER]
    return max(0.01, min([poll_seconds, *turning]))


async def work_forever(delivery: Delivery, poll_seconds: float,
                       on_backlog: Callable[[int], None] | None = None,
                       slots: int = SLOTS,
                       scheduled: Callable[[], Awaitable[int]] | None = None,
                       schedule_every: float = SCHEDULE_EVERY) -> None:
    """`scheduled`: a sweep that writes outbox messages when their time comes (the license
    expiry sweep). Every worker runs it; it writes each message once however many do."""
    name = worker_name()
    running: dict[asyncio.Task[None], float] = {}  # each send and when it started
    loop = asyncio.get_running_loop()
    counted = -poll_seconds  # when the backlog was last counted: once a poll at most
    next_schedule = 0.0
    try:
        while True:
            free = _free(running, slots, loop.time())
            if free > 0:
                try:
                    if scheduled is not None and time.monotonic() >= next_schedule:
                        next_schedule = time.monotonic() + schedule_every
                        await scheduled()
                    for message in await delivery.claim(name, free):
                        running[asyncio.create_task(_send(delivery, message, name))] = (
                            loop.time())
                    if on_backlog is not None and loop.time() - counted >= poll_seconds:
                        counted = loop.time()
                        on_backlog(await delivery.backlog())
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # the next round may work; the messages stay queued
                    log.error("outbox round failed: %s", type(exc).__name__)
            if running:
                done, _ = await asyncio.wait(running, timeout=_wait(running, poll_seconds,
                                                                    loop.time()),
                                             return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    del running[task]
            else:
                await asyncio.sleep(poll_seconds)
    finally:
        # Stopping: sends in flight are abandoned; their leases run out and another worker
        # sends them again, with the same id.
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
