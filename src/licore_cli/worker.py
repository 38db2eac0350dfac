"""The outbox worker loop (docs/events.md): one per server process, started with the
application, or alone with `licore worker`. Claims are leased in the database, so any number
of these, in any number of processes, share the work without sending a message twice at
once."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Callable

from licore.services.delivery import Delivery

log = logging.getLogger("licore.outbox")


def worker_name() -> str:
    """Unique per loop, readable in the table: host, process, random suffix."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


async def work_forever(delivery: Delivery, poll_seconds: float,
                       on_backlog: Callable[[int], None] | None = None) -> None:
    name = worker_name()
    while True:
        sent = 0
        try:
            sent = await delivery.run_once(name)
            if on_backlog is not None:
                on_backlog(await delivery.backlog())
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the next round may work; the messages stay queued
            log.error("outbox round failed: %s", type(exc).__name__)
        if sent == 0:
            await asyncio.sleep(poll_seconds)
