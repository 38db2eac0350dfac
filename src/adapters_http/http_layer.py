"""The preamble every ASGI layer of the adapter shares: it acts on HTTP requests only."""

from __future__ import annotations

import abc

from starlette.types import ASGIApp, Receive, Scope, Send


class HttpLayer(abc.ABC):
    """An ASGI middleware that acts on HTTP requests (`http`); anything else (lifespan,
    websocket) goes to the app under it untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    @abc.abstractmethod
    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One HTTP request through this layer."""
