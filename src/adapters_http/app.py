"""The bundled server's ASGI application: one process serving every interface family, or a
chosen subset (`--only runtime`), with the access log and the error shape in one place."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from adapters_http import device, partner, runtime, web
from adapters_http.observability import RequestContext, metrics
from adapters_http.openapi import openapi_document
from adapters_http.responses import JSONResponse, error_response
from licore.errors import InvalidRequest, LicoreError, NotFound, ServerError
from licore.services import housekeeping
from licore.services.deps import Deps
from licore.services.wiring import UseCases

error_log = logging.getLogger("licore.error")

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
        return JSONResponse({"error": "invalid_request",
                             "error_description": "method not allowed here"}, status_code=405)
    return error_response(InvalidRequest(str(exc.detail)))


async def _unexpected(request: Request, exc: Exception) -> Response:
    # The log gets the exception type and path only: a message could quote a secret.
    error_log.error("unhandled %s on %s %s", type(exc).__name__, request.method,
                    request.url.path)
    return error_response(ServerError("the server failed; retry the request"))


async def _sweep_forever(deps: Deps) -> None:
    while True:
        await asyncio.sleep(housekeeping.SWEEP_EVERY)
        try:
            await housekeeping.sweep(deps.storage, deps.clock)
        except Exception as exc:  # keep sweeping; the next round may work
            logging.getLogger("licore.housekeeping").error("sweep failed: %s",
                                                           type(exc).__name__)


def create_app(deps: Deps, only: tuple[str, ...] = FAMILIES,
               extra_routes: list[Route | Mount] | None = None,
               web_config: web.WebConfig | None = None) -> Starlette:
    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def readyz(request: Request) -> Response:
        try:
            async with deps.storage.unit_of_work() as uow:
                await uow.clients.by_id("readiness-probe")
        except Exception:
            return JSONResponse({"ok": False}, status_code=503)
        return JSONResponse({"ok": True})

    base = deps.settings.public_url.rstrip("/")
    uc = UseCases.of(deps)
    authenticate = partner.Authenticate(uc.device, deps.storage, deps.clock,
                                        deps.settings.partner_rate_limit)

    async def discovery(request: Request) -> Response:
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
        return JSONResponse(openapi_document(base))

    routes: list[Route | Mount] = [
        Route("/healthz", healthz), Route("/readyz", readyz),
        Route("/openapi.json", openapi), Route("/metrics", metrics),
    ]
    if "partner" in only:
        routes.append(Mount("/v1", routes=partner.routes(authenticate, uc)))
    if "auth" in only:
        routes.append(Mount("/auth", routes=device.routes(uc.device, authenticate)))
        routes.append(Route("/.well-known/oauth-authorization-server", discovery))
    if "runtime" in only:
        routes.append(Mount("/runtime", routes=runtime.routes(uc.runtime)))
    routes += extra_routes or []
    if "web" in only:
        routes.append(web.mount(deps, uc, web_config or web.WebConfig()))  # last: it is at "/"

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(_sweep_forever(deps))
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            await deps.storage.close()

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        LicoreError: _licore_error, HTTPException: _http_error, Exception: _unexpected}
    return Starlette(routes=routes, exception_handlers=handlers,
                     middleware=[Middleware(RequestContext)], lifespan=lifespan)


def _scopes() -> tuple[str, ...]:
    from licore.scopes import SCOPES

    return tuple(SCOPES)
