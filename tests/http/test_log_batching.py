"""The server's log handler (adapters_http/observability.py): on the event loop the lines
of one loop iteration leave in one write, in order, before the loop goes round again; off
the loop each line leaves at once; nothing is kept back at shutdown."""

from __future__ import annotations

import asyncio
import io
import logging
import threading

from adapters_http.observability import JsonLines, LoopBatchedStream


class CountingStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def handler_and_logger(name: str) -> tuple[LoopBatchedStream, CountingStream, logging.Logger]:
    stream = CountingStream()
    handler = LoopBatchedStream()
    handler.setStream(stream)
    handler.setFormatter(JsonLines())
    log = logging.getLogger(name)
    log.handlers[:] = [handler]
    log.propagate = False
    log.setLevel(logging.INFO)
    return handler, stream, log


def messages(stream: CountingStream) -> list[str]:
    import json

    return [json.loads(line)["message"] for line in stream.getvalue().splitlines()]


async def test_lines_of_one_loop_iteration_leave_in_one_write_in_order() -> None:
    _, stream, log = handler_and_logger("test.batching.loop")
    for i in range(50):
        log.info("line %d", i)
    assert stream.writes == 0  # nothing yet: the loop has not gone round
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert messages(stream) == [f"line {i}" for i in range(50)]
    assert stream.writes == 1


def test_a_line_logged_off_the_loop_leaves_at_once() -> None:
    _, stream, log = handler_and_logger("test.batching.thread")
    log.info("before any loop")
    assert messages(stream) == ["before any loop"]
    worker = threading.Thread(target=log.info, args=("from a thread",))
    worker.start()
    worker.join()
    assert messages(stream) == ["before any loop", "from a thread"]


async def test_flush_writes_what_waits_and_the_loop_then_writes_nothing_twice() -> None:
    handler, stream, log = handler_and_logger("test.batching.shutdown")
    log.info("last words")
    handler.flush()  # what logging.shutdown does at exit
    assert messages(stream) == ["last words"]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert messages(stream) == ["last words"]
