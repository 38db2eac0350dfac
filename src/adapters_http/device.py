"""The device flow at `{auth_url}` = `/auth` (spec 4.1, contract 6), JSON or form bodies: one
route table."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters_http import api_doc as d
from adapters_http import site
from adapters_http.api_doc import Doc
from adapters_http.bodies import basic_client_id, read_json_or_form
from adapters_http.decoding import OAUTH, structure
from adapters_http.partner import noting, sent_bearer
from adapters_http.responses import JSONResponse
from licore.commands import PollToken, RevokeToken, StartAuthorization
from licore.errors import InvalidRequest, UnsupportedGrantType
from licore.services.device import DeviceFlow
from licore.services.keys import Keys

MOUNT = "/auth"  # where the app mounts these routes
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
# Parameters these endpoints do not know (`resource`, `client_secret`, `audience`, ...) are
# ignored, JSON or form alike, as RFC 6749 section 3.2 asks; the ones they know are held to
# their types and bounds (docs/api.md).


def _client_ip(request: Request) -> str:
    return request.client.host if request.client else "unknown"


async def device_code(flow: DeviceFlow, keys: Keys, request: Request) -> Response:
    body, _ = await read_json_or_form(request)
    asked = structure(body, StartAuthorization, OAUTH)
    client_id = asked.client_id or basic_client_id(request)
    if not client_id:
        raise InvalidRequest("client_id is required", "client_id")
    started = await flow.start(client_id, asked.scope, _client_ip(request),
                               site.root(request.scope))
    return JSONResponse(started, headers={"Cache-Control": "no-store"})


async def device_token(flow: DeviceFlow, keys: Keys, request: Request) -> Response:
    body, _ = await read_json_or_form(request)
    poll = structure(body, PollToken, OAUTH)
    if poll.grant_type is not None and poll.grant_type != DEVICE_GRANT:
        raise UnsupportedGrantType(f"grant_type must be {DEVICE_GRANT}")
    client_id = poll.client_id or basic_client_id(request)
    token = await flow.poll(poll.device_code, client_id)
    return JSONResponse(token, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})


async def revoke(flow: DeviceFlow, keys: Keys, request: Request) -> Response:
    if request.headers.get("authorization", "").lower().startswith("bearer"):
        await keys.revoke_bearer(sent_bearer(request), noting(request))
        return JSONResponse({"ok": True})
    # RFC 7009 shape (extension): `token` in a form body; 200 whatever the token.
    body, _ = await read_json_or_form(request)
    asked = structure(body, RevokeToken, OAUTH)
    # Unknown or revoked tokens answer 200 too (RFC 7009 section 2.2).
    await keys.revoke_token(asked.token)
    return JSONResponse({"ok": True})


Handler = Callable[[DeviceFlow, Keys, Request], Awaitable[Response]]


@attrs.frozen
class DeviceEndpoint:
    method: str
    path: str
    handler: Handler
    doc: Doc = attrs.field(kw_only=True)  # what /openapi.json says of the call
    bearer: bool = attrs.field(default=False, kw_only=True)  # acts on the key it is sent


ENDPOINTS = [
    DeviceEndpoint("POST", "/device/code", device_code, doc=d.START_DEVICE_AUTHORIZATION),
    DeviceEndpoint("POST", "/device/token", device_token, doc=d.POLL_DEVICE_TOKEN),
    DeviceEndpoint("POST", "/revoke", revoke, doc=d.REVOKE_KEY, bearer=True),
]


def routes(flow: DeviceFlow, keys: Keys) -> list[Route]:
    def bound(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await handler(flow, keys, request)

        return endpoint

    return [Route(e.path, bound(e.handler), methods=[e.method]) for e in ENDPOINTS]
