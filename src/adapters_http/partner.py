"""The Partner API at `{base_url}` = `/v1` (spec 4.2 to 4.4, contract 3), as a route table."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters_http.bodies import bearer, read_bytes, read_json
from adapters_http.responses import JSONResponse, file_response
from licore import scopes as sc
from licore.errors import InvalidToken
from licore.licenses import LicenseEvent
from licore.model import ApiKey
from licore.services import builds, device, limits, packages, partner
from licore.services.deps import Deps

Handler = Callable[[Deps, ApiKey, Request], Awaitable[dict[str, Any] | Response]]
STUDIO, LIBRARY = sc.KeyKind.STUDIO, sc.KeyKind.LIBRARY


@attrs.frozen
class Endpoint:
    method: str
    path: str
    scope: str
    handler: Handler

    @property
    def kind(self) -> sc.KeyKind:
        return sc.SCOPES[self.scope][0]


async def _query(fn: Callable[[Deps, ApiKey, Any], Awaitable[dict[str, Any]]],
                 deps: Deps, key: ApiKey, request: Request) -> dict[str, Any]:
    return await fn(deps, key, request.query_params)


async def _body(fn: Callable[[Deps, ApiKey, Any], Awaitable[dict[str, Any]]],
                deps: Deps, key: ApiKey, request: Request) -> dict[str, Any]:
    return await fn(deps, key, await read_json(request))


def q(fn: Callable[[Deps, ApiKey, Any], Awaitable[dict[str, Any]]]) -> Handler:
    return lambda deps, key, request: _query(fn, deps, key, request)


def b(fn: Callable[[Deps, ApiKey, Any], Awaitable[dict[str, Any]]]) -> Handler:
    return lambda deps, key, request: _body(fn, deps, key, request)


async def _upload(deps: Deps, key: ApiKey, request: Request) -> dict[str, Any]:
    data = await read_bytes(request, deps.settings.max_upload_bytes)
    return await packages.upload_version(deps, key, request.query_params, data)


async def _download(deps: Deps, key: ApiKey, request: Request) -> Response:
    return file_response(await builds.download(deps, key, request.query_params))


def _pause(deps: Deps, key: ApiKey, body: Any) -> Awaitable[dict[str, Any]]:
    return partner.pause_or_resume(deps, key, body, LicenseEvent.PAUSE)


def _resume(deps: Deps, key: ApiKey, body: Any) -> Awaitable[dict[str, Any]]:
    return partner.pause_or_resume(deps, key, body, LicenseEvent.RESUME)


ENDPOINTS: list[Endpoint] = [
    Endpoint("GET", "/products", "products:read", q(partner.list_products)),
    Endpoint("POST", "/products", "products:write", b(partner.save_product)),
    Endpoint("GET", "/licenses", "licenses:read", q(partner.list_licenses)),
    Endpoint("POST", "/licenses", "licenses:write", b(partner.grant)),
    Endpoint("DELETE", "/licenses", "licenses:write", q(partner.revoke)),
    Endpoint("POST", "/licenses/pause", "licenses:write", b(_pause)),
    Endpoint("POST", "/licenses/resume", "licenses:write", b(_resume)),
    Endpoint("GET", "/alerts", "licenses:read", q(partner.alerts)),
    Endpoint("GET", "/library", "library:read", q(partner.library)),
    Endpoint("GET", "/packages", "packages:read", q(packages.list_packages)),
    Endpoint("POST", "/packages/settings", "packages:write", b(packages.settings)),
    Endpoint("GET", "/packages/versions", "packages:read", q(packages.list_versions)),
    Endpoint("POST", "/packages/versions", "packages:write", _upload),
    Endpoint("POST", "/packages/publish", "packages:write", b(packages.publish)),
    Endpoint("GET", "/library/download", "library:download", _download),
]


async def authenticate(deps: Deps, request: Request) -> ApiKey:
    """Bearer key, then the per-key rate limit; the key id is kept for the access log and
    what is left of the limit for the answer's headers."""
    plain, sent = bearer(request)
    request.state.credentials_sent = sent
    if plain is None:
        raise InvalidToken("this call needs Authorization: Bearer <API_KEY>")
    key = await device.authenticate(deps, plain)
    request.state.key_id = key.id
    request.state.quota = await limits.hit(deps, f"key:{key.id}",
                                           deps.settings.partner_rate_limit)
    return key


def quota_headers(quota: limits.Quota) -> dict[str, str]:
    """The IETF draft's names (RateLimit-*), which API clients and gateways read."""
    return {"RateLimit-Limit": str(quota.limit), "RateLimit-Remaining": str(quota.remaining),
            "RateLimit-Reset": str(quota.reset)}


def routes(deps: Deps, endpoints: list[Endpoint] = ENDPOINTS) -> list[Route]:
    by_path: dict[str, dict[str, Endpoint]] = {}
    for e in endpoints:
        by_path.setdefault(e.path, {})[e.method] = e

    def make(methods: dict[str, Endpoint]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            e = methods[request.method]
            key = await authenticate(deps, request)
            sc.require(frozenset(key.scopes), key.kind, e.kind, e.scope)
            answer = await e.handler(deps, key, request)
            response = answer if isinstance(answer, Response) else JSONResponse(answer)
            response.headers.update(quota_headers(request.state.quota))
            return response

        return endpoint

    return [Route(path, make(methods), methods=list(methods)) for path, methods in by_path.items()]
