"""The outbox worker loop (docs/events.md): one per server process, started with the
application, or alone with `licore worker`. Claims are leased in the database, so any number
of these, in any number of processes, share the work without sending a message twice at
once."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable

from licore.services.delivery import Delivery

log = logging.getLogger("licore.outbox")


def worker_name() -> str:
    """Unique per loop, readable in the table: host, process, random suffix."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


# How often a worker runs the scheduled sweeps (license expiry and reminders): well within
# the minute a seller is promised, and cheap (one indexed query) when nothing is due.
SCHEDULE_EVERY = 20.0


async def work_forever(delivery: Delivery, poll_seconds: float,
                       on_backlog: Callable[[int], None] | None = None,
                       scheduled: Callable[[], Awaitable[int]] | None = None) -> None:
    """`scheduled`: a sweep that writes outbox messages when their time comes (the license
    expiry sweep). Every worker runs it; it writes each message once however many do."""
    name = worker_name()
    next_schedule = 0.0
    while True:
        sent = 0
        try:
            if scheduled is not None and time.monotonic() >= next_schedule:
                next_schedule = time.monotonic() + SCHEDULE_EVERY
                sent += await scheduled()
            sent += await delivery.run_once(name)
            if on_backlog is not None:
                on_backlog(await delivery.backlog())
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the next round may work; the messages stay queued
            log.error("outbox round failed: %s", type(exc).__name__)
        if sent == 0:
            await asyncio.sleep(poll_seconds)
