"""Request ids made by `RequestContext`: 16 hex digits, distinct, and distinct between a
forked worker and its parent (the generator is reseeded in the child)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from starlette.types import Receive, Scope, Send

from adapters_http.observability import RequestContext


async def ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def made_ids(count: int) -> list[str]:
    app = RequestContext(ok)
    ids: list[str] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            ids.append(dict(message["headers"])[b"x-request-id"].decode())

    async def receive() -> Any:
        return {"type": "http.request", "body": b""}

    async def run() -> None:
        for _ in range(count):
            await app({"type": "http", "method": "GET", "path": "/healthz", "headers": []},
                      receive, send)

    asyncio.run(run())
    return ids


def test_made_ids_are_sixteen_hex_digits_and_distinct() -> None:
    ids = made_ids(5000)
    assert all(len(i) == 16 and int(i, 16) >= 0 for i in ids)
    assert len(set(ids)) == len(ids)


def test_a_forked_worker_does_not_repeat_its_parents_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        try:
            os.write(write, ",".join(made_ids(20)).encode())
        finally:
            os._exit(0)
    os.close(write)
    parent = made_ids(20)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = pipe.read().split(",")
    assert len(child) == 20
    assert not set(child) & set(parent)
