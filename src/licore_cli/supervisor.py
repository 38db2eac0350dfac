"""`licore serve --workers N`: worker processes on listening sockets of their own (one
address, SO_REUSEPORT), kept alive, and drained on shutdown.

Hypercorn's own multi-worker runner stops the whole server when one worker dies (a `kill -9`,
an out-of-memory kill) and, on SIGTERM, terminates the workers still draining as soon as the
first one has exited, so in-flight requests were cut. This supervisor replaces a worker that
dies while the server runs, and on SIGTERM or SIGINT asks every worker to stop accepting and
finish its in-flight requests (Hypercorn's `graceful_timeout`), killing only the ones still
busy after the grace period.
"""

from __future__ import annotations

import importlib
import logging
import signal
import threading
import time
from collections import deque
from multiprocessing import get_context
from multiprocessing.connection import wait
from multiprocessing.context import ForkContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any

from hypercorn.asyncio.run import asyncio_worker
from hypercorn.config import Config, Sockets

log = logging.getLogger("licore.serve")

RESTART_WINDOW = 60.0  # seconds
RESTARTS_PER_WINDOW = 10  # more deaths than this in a window: something is wrong, stop
EXIT_SLACK = 5.0  # seconds past the grace period for a worker to close down


# What every worker imports before it serves (licore_cli.asgi's own imports, which build
# nothing at import time). Imported once here and forked, a worker starts with them in place:
# a 4-worker start took 2.9-3.6 s of CPU spawned afresh and 1.4 s forked (the same machine,
# one after the other). licore_cli.asgi itself is not imported here: importing it builds the
# app (keys, database), which each worker must do for itself.
PRELOAD = ("licore_cli.compose", "adapters_http.app", "hypercorn.asyncio.run")


def _listening(config: Config, workers: int) -> list[Sockets]:
    """The listening sockets of each worker: a set of its own for each (bound to the same
    address with SO_REUSEPORT, which Hypercorn sets when told of several workers), so the
    kernel spreads new connections over the workers by their addresses. On one shared
    socket whichever worker woke first took them: all 32 keep-alive connections of a load
    landed on one worker in a fifth to three quarters of the rounds measured. A port the
    system picks (0) would differ for each set: those workers share one."""
    if workers < 2 or any(b.rsplit(":", 1)[-1] == "0" for b in config.bind):
        return [config.create_sockets()] * workers
    slots = [config.create_sockets() for _ in range(workers)]
    for sockets in slots:
        for sock in (*sockets.secure_sockets, *sockets.insecure_sockets):
            # Listening from now on, not from when its worker has started: the kernel hashes
            # only over listening sockets, and a connection for a worker still starting
            # waits in its own queue instead of going to the first one up.
            sock.listen(config.backlog)
    return slots


def supervise(config: Config, workers: int) -> int:
    # Forking is safe only from a process with one thread (a lock held by another thread
    # at the fork stays held in the child forever). licore_cli.main closes what it opened to
    # check the database before this runs; should a library ever leave a thread behind, the
    # workers are spawned afresh instead, slower but safe.
    for module in PRELOAD:
        importlib.import_module(module)
    ctx: SpawnContext | ForkContext = (get_context("fork") if threading.active_count() == 1
                                       else get_context("spawn"))
    log.debug("workers start by %s", ctx.get_start_method())
    slots = _listening(config, workers)
    shutdown = ctx.Event()
    stopping = False

    def stop(signum: int | None = None, *_: Any) -> None:
        nonlocal stopping
        if signum is not None and not stopping:
            log.info("licore stopping on %s: workers finish the requests in flight (up to "
                     "%s s)", signal.Signals(signum).name, config.graceful_timeout)
        stopping = True
        shutdown.set()

    def spawn(slot: int) -> BaseProcess:
        # Workers ignore SIGINT and SIGTERM (inherited across the spawn): a terminal's Ctrl-C
        # or a service manager signalling the whole group reaches this process, which asks
        # each worker to drain; a worker signalled directly would die mid-request.
        previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            process = ctx.Process(target=asyncio_worker,
                                  kwargs={"config": config, "sockets": slots[slot],
                                          "shutdown_event": shutdown})
            process.start()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        assert isinstance(process, BaseProcess)
        return process

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    processes = [spawn(slot) for slot in range(workers)]
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    deaths: deque[float] = deque()
    exitcode = 0
    while not stopping:
        wait([p.sentinel for p in processes], timeout=1.0)
        for i, process in enumerate(processes):
            if process.exitcode is None or stopping:
                continue
            process.join()
            now = time.monotonic()
            deaths.append(now)
            while deaths and deaths[0] < now - RESTART_WINDOW:
                deaths.popleft()
            if len(deaths) > RESTARTS_PER_WINDOW:
                log.error("workers keep dying (%d in %d s); stopping", len(deaths),
                          RESTART_WINDOW)
                exitcode = 1
                stop()
                break
            log.error("worker %s exited with code %s; starting another", process.pid,
                      process.exitcode)
            processes[i] = spawn(i)  # on the sockets of the worker it replaces
    deadline = time.monotonic() + config.graceful_timeout + EXIT_SLACK
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            log.error("worker %s still busy after the grace period; killing it", process.pid)
            process.kill()
            process.join()
    for sockets in slots:
        for sock in (*sockets.secure_sockets, *sockets.insecure_sockets):
            sock.close()  # a set shared by every worker is closed again: closing is idempotent
    return exitcode
