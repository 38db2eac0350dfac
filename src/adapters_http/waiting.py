"""A server that started before its database answered: it listens at once, says it is alive
(`/healthz` 200) and not ready (`/readyz` 503), and answers every other call 503 with
`Retry-After`, until `prepare` returns (the database answers, is migrated, and holds this
process's key). Only then does the application it wraps start (its lifespan: the pools,
the outbox workers) and serve; nothing restarts.

The server is told the application has started at once, so it does not give up waiting for
a database that is late: the wrapped application's own start is what waits."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapters_http.responses import JSONResponse, error_response
from licore.errors import Unavailable

log = logging.getLogger("licore.serve")


class WaitingForDatabase:
    def __init__(self, app: ASGIApp, prepare: Callable[[], Awaitable[None]],
                 retry_after: int) -> None:
        self.app = app
        self.prepare = prepare
        self.retry_after = retry_after
        self.ready = False
        self._inbox: asyncio.Queue[Message] = asyncio.Queue()
        self._started = asyncio.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self.app, name)  # the application it wraps stays reachable

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
        elif self.ready or scope["type"] != "http":
            await self.app(scope, receive, send)
        else:
            await self._not_yet(scope)(scope, receive, send)

    def _not_yet(self, scope: Scope) -> JSONResponse:
        path = scope["path"].removeprefix(scope.get("root_path", "")) or "/"
        if path == "/healthz":
            return JSONResponse({"ok": True}, headers={"Cache-Control": "no-store"})
        if path == "/readyz":
            return JSONResponse({"ok": False}, status_code=503, headers={
                "Retry-After": str(self.retry_after), "Cache-Control": "no-store"})
        return error_response(Unavailable(self.retry_after))

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        await send({"type": "lifespan.startup.complete"})
        starting = asyncio.create_task(self._start(scope))
        while (await receive())["type"] != "lifespan.shutdown":
            pass
        if not self.ready:
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
        else:  # the wrapped application stops as it would have without this
            await self._inbox.put({"type": "lifespan.shutdown"})
            await starting
        await send({"type": "lifespan.shutdown.complete"})

    async def _start(self, scope: Scope) -> None:
        await self.prepare()
        await self._inbox.put({"type": "lifespan.startup"})

        async def told(message: Message) -> None:
            if message["type"] == "lifespan.startup.complete":
                self.ready = True
                self._started.set()
            elif message["type"] == "lifespan.startup.failed":
                log.error("the application did not start: %s", message.get("message", ""))
                self._started.set()

        async def run() -> None:
            await self.app(scope, self._inbox.get, told)

        running = asyncio.create_task(run())
        await self._started.wait()
        if self.ready:
            log.info("the database answers: serving")
        await running

