"""The bundled server's ASGI application: one process serving every interface family, or a
chosen subset (`--only runtime`), with the access log and the error shape in one place.

It is given the built use cases and the operator's settings, nothing else: no storage, clock
or other part (the composition root, `licore_cli.compose`, builds the use cases)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.types import Receive, Scope, Send

from adapters_http import device, partner, runtime, site, web
from adapters_http.edge import Edge
from adapters_http.observability import RequestContext, metrics
from adapters_http.openapi import openapi_document
from adapters_http.responses import JSONResponse, error_response
from licore.errors import InvalidRequest, LicoreError, NotFound
from licore.services.housekeeping import Housekeeping
from licore.services.settings import Settings
from licore.services.wiring import UseCases

FAMILIES = ("partner", "auth", "runtime", "web")


async def _licore_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, LicoreError)
    sent = getattr(request.state, "credentials_sent", True)
    response = error_response(exc, credentials_sent=sent)
    quota = getattr(request.state, "quota", None)
    if quota is not None:  # an authenticated Partner call that failed still paces its caller
        response.headers.update(partner.quota_headers(quota))
    return response


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(NotFound("no such endpoint"))
    if exc.status_code == 405:
        # Starlette's exception names the route's methods in `Allow` (RFC 9110 15.5.6).
        return JSONResponse({"error": "invalid_request",
                             "error_description": "method not allowed here"}, status_code=405,
                            headers=dict(exc.headers or {}))
    return error_response(InvalidRequest(str(exc.detail)))


async def _sweep_forever(housekeeping: Housekeeping) -> None:
    while True:
        await asyncio.sleep(housekeeping.every)
        try:
            await housekeeping.sweep()
        except Exception as exc:  # keep sweeping; the next round may work
            logging.getLogger("licore.housekeeping").error("sweep failed: %s",
                                                           type(exc).__name__)


def create_app(uc: UseCases, settings: Settings, only: tuple[str, ...] = FAMILIES,
               extra_routes: list[Route | Mount] | None = None,
               web_config: web.WebConfig | None = None,
               background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = ()
               ) -> LicoreApp:
    """`background`: long-running tasks the composition root adds (the outbox workers),
    started with the application and cancelled when it stops."""
    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def readyz(request: Request) -> Response:
        # The storage answers within about a second, whether the database is there or not.
        if not await uc.housekeeping.ready():
            return JSONResponse({"ok": False}, status_code=503,
                                headers={"Retry-After": "2", "Cache-Control": "no-store"})
        return JSONResponse({"ok": True}, headers={"Cache-Control": "no-store"})

    async def discovery(request: Request) -> Response:
        # RFC 8414: every URL under the issuer, which carries the prefix the app is served
        # under (docs/embedding.md, "Under a path").
        base = site.absolute(request.scope, settings.public_url, "")
        return JSONResponse({
            "issuer": base,
            "device_authorization_endpoint": f"{base}/auth/device/code",
            "token_endpoint": f"{base}/auth/device/token",
            "revocation_endpoint": f"{base}/auth/revoke",
            "grant_types_supported": [device.DEVICE_GRANT],
            "scopes_supported": list(_scopes()),
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            "response_types_supported": [],
        })

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document(
            site.absolute(request.scope, settings.public_url, "")))

    routes: list[Route | Mount] = [
        Route("/healthz", healthz), Route("/readyz", readyz),
        Route("/openapi.json", openapi), Route("/metrics", metrics),
    ]
    if "partner" in only:
        routes.append(Mount(partner.MOUNT, routes=partner.routes(uc.partner, settings)))
    if "auth" in only:
        routes.append(Mount(device.MOUNT, routes=device.routes(uc.device, uc.keys)))
        routes.append(Route("/.well-known/oauth-authorization-server", discovery))
    middleware = [Middleware(RequestContext), Middleware(Edge)]
    front: runtime.RuntimeFront | None = None
    if "runtime" in only:
        runtime_app = runtime.RuntimeApp(uc.runtime, settings)
        routes.append(Mount(runtime.MOUNT, app=runtime_app))
        front = runtime.RuntimeFront(runtime_app)
    routes += extra_routes or []
    if "web" in only:
        routes.append(web.mount(uc, settings, web_config or web.WebConfig()))  # last: it is at "/"

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Connect before serving: the first requests of a fresh worker must not race to.
        await uc.housekeeping.open()
        tasks = [asyncio.create_task(_sweep_forever(uc.housekeeping))]
        tasks += [asyncio.create_task(run()) for run in background]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await uc.housekeeping.close()

    # No handler for Exception: `Edge` answers an unexpected one (Starlette's own handler of
    # last resort would hand it on to Hypercorn, which logs the whole traceback).
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        LicoreError: _licore_error, HTTPException: _http_error}
    return LicoreApp(routes=routes, exception_handlers=handlers, middleware=middleware,
                     lifespan=lifespan, front=front)


class LicoreApp(Starlette):
    """Starlette, with the runtime calls answered in front of the middleware stack by one
    layer that does the stack's work for them (`runtime.RuntimeFront`)."""

    def __init__(self, *args: Any, front: runtime.RuntimeFront | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.front = front

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            site.enter(scope)  # the prefix it is served under, before its mounts add theirs
        front = self.front
        call = front.takes(scope) if front is not None else None
        if front is None or call is None:
            await super().__call__(scope, receive, send)
            return
        scope["app"] = self  # as Starlette sets it
        await front(call, scope, receive, send)


def _scopes() -> tuple[str, ...]:
    from licore.scopes import SCOPES

    return tuple(SCOPES)
