"""Many simultaneous requests, each on a connection of its own, for the race tests.

httpx's async client spent about 3.4 s of the test process's CPU on a thousand requests to
a loopback server (most of it its own per-request machinery, not the HTTP), several times
what the server spent answering a cheap route. These requests are written and read with h11,
the HTTP/1.1 state machine httpx itself uses, on plain asyncio streams: about 0.5 s for the
same thousand. Still real requests over real TCP to the real server, one connection each
(`Connection: close`), so a crowd spreads over a server's workers as before; the answers are
`httpx.Response` objects, so the tests read them as they always did.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import h11
import httpx

# path, JSON body (None: a GET), headers
Call = tuple[str, Any, dict[str, str] | None]


async def _one(host: str, port: int, call: Call) -> httpx.Response:
    path, body, headers = call
    payload = b"" if body is None else json.dumps(body).encode()
    fields = [("Host", f"{host}:{port}"), ("Connection", "close"), *(headers or {}).items()]
    if body is not None:
        fields += [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
    conn = h11.Connection(h11.CLIENT)
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(conn.send(h11.Request(method="GET" if body is None else "POST",
                                           target=path, headers=fields))
                     + conn.send(h11.Data(data=payload)) + conn.send(h11.EndOfMessage()))
        head: h11.Response | None = None
        chunks: list[bytes] = []
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Response):
                head = event
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
        assert head is not None
        return httpx.Response(head.status_code, headers=list(head.headers),
                              content=b"".join(chunks))
    finally:
        writer.close()


def crowd(url: str, calls: Sequence[Call], at_once: int | None = None,
          timeout: float = 120) -> list[httpx.Response | BaseException]:
    """Every call sent, `at_once` at a time (all at once by default); an answer or the
    exception that took its place, in the order of `calls`."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80

    async def go() -> list[httpx.Response | BaseException]:
        gate = asyncio.Semaphore(at_once or len(calls) or 1)

        async def gated(call: Call) -> httpx.Response:
            async with gate, asyncio.timeout(timeout):
                return await _one(host, port, call)

        return await asyncio.gather(*(gated(c) for c in calls), return_exceptions=True)

    return asyncio.run(go())
