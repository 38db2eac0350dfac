"""A big upload's check in a process of its own.

Checking a model is Python work that holds the interpreter lock throughout; on a thread of
the serving process, the event loop waits for the lock while it runs, and every other request
of that worker waits with it (a 56 MiB legal XML file: 32 s of checking, other answers' p99
from 23 ms to 569 ms; docs/performance.md, "Checking an upload"). From `LEAST_BYTES` up, the
check runs in a spawned process that lives for that one check, so its memory goes back to
the system when it ends; the serving process only waits on a pipe. Smaller files, a program
no spawned process could load again, and a process that died mid-check (killed, out of
memory) are checked here, as before.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from adapters_formats.codec import RobloxModelCodec
from licore.builds.tree import CheckedModel, Model, Sources
from licore.ports import ModelCodec

log = logging.getLogger("licore.uploads")

LEAST_BYTES = 4 << 20  # below it a check costs less than starting a process


def _check(data: bytes) -> CheckedModel:
    return RobloxModelCodec().check(data)


def can_spawn() -> bool:
    """Whether a spawned process can start: it loads the program's main module again, by
    name or from its file; a program read from stdin or given as a string has neither."""
    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None) is not None:
        return True
    path = getattr(main, "__file__", None)
    started_in = getattr(multiprocessing.process, "ORIGINAL_DIR", None) or ""
    return path is None or os.path.exists(os.path.join(started_in, path))


class OffProcessChecks:
    """`codec`, with the checks of files of `least_bytes` or more in a process each."""

    def __init__(self, codec: ModelCodec, least_bytes: int = LEAST_BYTES) -> None:
        self.codec = codec
        self.least_bytes = least_bytes

    def check(self, data: bytes) -> CheckedModel:
        if len(data) < self.least_bytes or not can_spawn():
            return self.codec.check(data)
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            try:
                return pool.submit(_check, data).result()
            except BrokenProcessPool:
                log.warning("the process checking an upload ended before it answered; the "
                            "upload is checked in the serving process")
        return self.codec.check(data)

    def read(self, data: bytes) -> Model:
        return self.codec.read(data)

    def write(self, model: Model) -> bytes:
        return self.codec.write(model)

    def read_sources(self, data: bytes) -> Sources:
        return self.codec.read_sources(data)

    def write_sources(self, build: Sources) -> bytes:
        return self.codec.write_sources(build)
