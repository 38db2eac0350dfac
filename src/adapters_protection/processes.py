"""A build's scripts protected in several processes at once.

Protecting is Python and tree-sitter work that holds the interpreter lock throughout (parsing
included), so threads take turns: a 1 MiB build under `strong` costs a dozen seconds of one
core however many the machine has. Here a build's scripts are cut, in order, into parts of
similar size and handed to a pool of worker processes, each with its own `LuauProtector`
(the same watermark secret); the parts come back in order. A copy is byte for byte the one
protecting in this process makes: the output is a function of the script, the rules and the
license secret only.

The pool starts with the serving process (`warm`, on a thread, so the server answers meanwhile:
starting costs each worker about half a second, once), or at the first big build where nothing
warmed it, and is kept for the life of the process. A build under `_LEAST_BYTES` is protected
in this process: the hand-over would cost more than it saves. A single big script is one part:
protected in one worker, no faster, but off the serving process, whose event loop would
otherwise wait for the interpreter lock while it runs. Should a worker die (killed, out of
memory), the pool is dropped, the build is protected here instead, and the next big build
starts a new pool.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import multiprocessing.connection
import multiprocessing.util
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from adapters_protection.luau_protector import LuauProtector
from licore.protection import (
    Candidate,
    ProtectionProblem,
    ProtectionSettings,
    Trace,
)

log = logging.getLogger("licore.protection")

T = TypeVar("T")
Scripts = Sequence[tuple[str, str]]

_LEAST_BYTES = 64 << 10  # a build smaller than this is protected in the calling process
_PARTS_PER_PROCESS = 4  # parts of a build per worker: evens out scripts of unequal cost
_LEAST_PART = 4 << 10

# The protector of a worker process (set by `_start`).
_worker: LuauProtector | None = None


def _start(watermark_secret: bytes) -> None:
    global _worker
    _worker = LuauProtector(watermark_secret)
    # A terminal's Ctrl-C reaches the whole process group: the process that owns the pool
    # decides when it ends. SIGTERM keeps its default, whatever the owner inherited: the
    # pool stops the workers of a broken pool with it, and waits for them to end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), daemon=True).start()


def _exit_with(sentinel: int) -> None:
    """Ends the worker when the process that started it is gone, however it ended: a killed
    owner never sends the pool's stop message, and its workers would wait for work forever."""
    multiprocessing.connection.wait([sentinel])
    os._exit(0)


def _ready() -> None:
    """A worker's task that only says it has started (its initializer has run)."""


def _protect_part(scripts: Scripts, settings: ProtectionSettings,
                  license_secret: bytes, sealing: str) -> list[str]:
    assert _worker is not None
    with _no_cycle_collection():
        return _worker.protect_all(scripts, settings, license_secret, sealing=sealing)


def _check_part(scripts: Scripts, settings: ProtectionSettings) -> list[ProtectionProblem]:
    assert _worker is not None
    with _no_cycle_collection():
        return _worker.check(scripts, settings)


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cycle collector off while a worker protects a part (it does nothing else
    meanwhile): protecting makes millions of objects and frees them by their counts, and
    the collector's passes over the survivors were 4% of a 1 MiB script's time. Not done
    in a serving process, whose other threads would go without it."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def parts(scripts: Scripts, size: int) -> list[list[tuple[str, str]]]:
    """`scripts` cut, in order, into runs of about `size` characters (a script bigger than
    that is a part of its own)."""
    out: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    held = 0
    for path, source in scripts:
        if current and held + len(source) > size:
            out.append(current)
            current, held = [], 0
        current.append((path, source))
        held += len(source)
    if current:
        out.append(current)
    return out


class ProcessProtector:
    """The Luau protector, with `check` and `protect_all` of big builds spread over
    `processes` worker processes (1 or 0: all in this process)."""

    def __init__(self, watermark_secret: bytes, processes: int) -> None:
        self.processes = processes
        self._local = LuauProtector(watermark_secret)
        self._watermark_secret = watermark_secret
        self._pool: ProcessPoolExecutor | None = None
        self._finalizer: multiprocessing.util.Finalize | None = None
        self._lock = threading.Lock()
        self._said_unspawnable = False

    def check(self, scripts: Scripts, settings: ProtectionSettings) -> list[ProtectionProblem]:
        return self._spread(scripts, lambda part: self._local.check(part, settings),
                            lambda pool, part: pool.submit(_check_part, part, settings))

    def protect(self, path: str, source: str, settings: ProtectionSettings,
                license_secret: bytes, *, sealing: str = "") -> str:
        return self._local.protect(path, source, settings, license_secret, sealing=sealing)

    def protect_all(self, scripts: Scripts, settings: ProtectionSettings,
                    license_secret: bytes, *, sealing: str = "") -> list[str]:
        return self._spread(
            scripts,
            lambda part: self._local.protect_all(part, settings, license_secret,
                                                 sealing=sealing),
            lambda pool, part: pool.submit(_protect_part, part, settings, license_secret,
                                           sealing))

    def trace(self, scripts: Scripts, candidates: Sequence[Candidate]) -> Trace:
        return self._local.trace(scripts, candidates)

    def warm(self) -> None:
        """Starts the pool, if big builds will use one here, and returns once each worker
        has started: the first download after a start then finds them ready instead of
        waiting the second or more they take to start (more on a busy host)."""
        if self.processes < 2 or not self._can_spawn():
            return
        pool = self._started()
        # A pool spawns a worker for each task it holds no idle worker for, so one task a
        # worker starts them all at once.
        futures = [pool.submit(_ready) for _ in range(self.processes)]
        try:
            for future in futures:
                future.result()
        except BrokenProcessPool:
            self._drop(pool)
            log.warning("a protection worker process ended as it started; the next big "
                        "build starts new workers")
            return
        log.info("%d protection worker processes ready", self.processes)

    def close(self) -> None:
        with self._lock:
            self._pool = None
            finalizer, self._finalizer = self._finalizer, None
        if finalizer is not None:
            finalizer()  # shuts the pool down, once

    @property
    def started(self) -> bool:
        """Whether the pool of worker processes is running."""
        return self._pool is not None

    def _spread(self, scripts: Scripts, here: Callable[[Scripts], list[T]],
                send: Callable[[ProcessPoolExecutor, Scripts], Future[list[T]]]) -> list[T]:
        total = sum(len(source) for _, source in scripts)
        # One big script goes to a worker too: it gains no speed there, but the serving
        # process's event loop is then not kept waiting for the interpreter lock.
        if self.processes < 2 or total < _LEAST_BYTES or not self._can_spawn():
            return here(scripts)
        cut = parts(scripts, max(total // (self.processes * _PARTS_PER_PROCESS), _LEAST_PART))
        pool = self._started()
        futures: list[Future[list[T]]] = []
        try:
            futures = [send(pool, part) for part in cut]
            # In order: the first failure to raise is that of the first script that fails,
            # as in one process.
            return [item for future in futures for item in future.result()]
        except BrokenProcessPool:
            self._drop(pool)
            log.warning("a protection worker process ended unexpectedly; this build is "
                        "protected in the serving process, and the next starts new workers")
            return here(scripts)
        finally:
            for future in futures:
                future.cancel()

    def _can_spawn(self) -> bool:
        """Whether spawned workers can start: each loads the program's main module again,
        by name, or from its file; a program read from stdin (`<stdin>`) or given as a
        string has neither, and every worker would die as it starts."""
        main = sys.modules.get("__main__")
        name = getattr(getattr(main, "__spec__", None), "name", None)
        path = getattr(main, "__file__", None)
        if name is not None or path is None:
            return True
        # Where a worker looks for it: relative to where this program started.
        started_in = getattr(multiprocessing.process, "ORIGINAL_DIR", None) or ""
        if os.path.exists(os.path.join(started_in, path)):
            return True
        if not self._said_unspawnable:
            self._said_unspawnable = True
            log.warning("protection worker processes cannot start: this program's main "
                        "module (%s) is not a file they could load again; big builds are "
                        "protected in this process", path)
        return False

    def _started(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # Spawned, not forked: the serving process runs threads (the event loop's
                # offload, database pools), and a fork copies their locks mid-use.
                self._pool = ProcessPoolExecutor(
                    self.processes, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start, initargs=(self._watermark_secret,))
                # A serving process that is itself a multiprocessing child (`licore serve`
                # with several workers) waits, as it exits, for its children to end before
                # the pool's own exit hook would stop them: they would wait for work, and it
                # for them, until the supervisor kills it. Finalizers run before that wait,
                # highest priority first: this one before the pool's queues close theirs
                # (priority 10), which would leave the stop message unsent.
                self._finalizer = multiprocessing.util.Finalize(
                    self, _stop, args=(self._pool,), exitpriority=100)
            return self._pool

    def _drop(self, pool: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
                finalizer, self._finalizer = self._finalizer, None
                if finalizer is not None:
                    finalizer.cancel()
        pool.shutdown(wait=False, cancel_futures=True)


def _stop(pool: ProcessPoolExecutor) -> None:
    pool.shutdown(wait=True, cancel_futures=True)
