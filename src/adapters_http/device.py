"""The device flow at `{auth_url}` = `/auth` (spec 4.1, contract 6), JSON or form bodies."""

from __future__ import annotations

import contextlib

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters_http.bodies import basic_client_id, read_json_or_form
from adapters_http.decoding import structure
from adapters_http.partner import Authenticate
from adapters_http.responses import JSONResponse
from licore import tokens
from licore.commands import PollToken, RevokeToken, StartAuthorization
from licore.errors import InvalidRequest, InvalidToken, UnsupportedGrantType
from licore.services.device import DeviceFlow

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
# Stock OAuth 2.0 clients send these beside the specification's fields (contract 6); a
# form body earns that leniency, a JSON body (the specification's shape) is held strictly.
OAUTH_EXTRAS = ("client_secret", "grant_type", "client_id")
FORM_EXTRAS = (*OAUTH_EXTRAS, "scope")


def _client_ip(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def routes(flow: DeviceFlow, authenticate: Authenticate) -> list[Route]:
    async def device_code(request: Request) -> Response:
        body, form = await read_json_or_form(request)
        asked = structure(body, StartAuthorization, extra=OAUTH_EXTRAS if form else ())
        client_id = asked.client_id or basic_client_id(request)
        if not client_id:
            raise InvalidRequest("client_id is required", "client_id")
        started = await flow.start(client_id, asked.scope, _client_ip(request))
        return JSONResponse(started, headers={"Cache-Control": "no-store"})

    async def device_token(request: Request) -> Response:
        body, form = await read_json_or_form(request)
        poll = structure(body, PollToken,
                         extra=("client_secret", "scope") if form else ("client_secret",))
        if poll.grant_type is not None and poll.grant_type != DEVICE_GRANT:
            raise UnsupportedGrantType(f"grant_type must be {DEVICE_GRANT}")
        client_id = poll.client_id or basic_client_id(request)
        token = await flow.poll(poll.device_code, client_id)
        return JSONResponse(token, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    async def revoke(request: Request) -> Response:
        if request.headers.get("authorization", "").lower().startswith("bearer"):
            await flow.revoke_key(await authenticate(request))
            return JSONResponse({"ok": True})
        # RFC 7009 shape (extension): `token` in a form body; 200 whatever the token.
        body, _ = await read_json_or_form(request)
        asked = structure(body, RevokeToken,
                          extra=("token_type_hint", "client_id", "client_secret"))
        # Unknown or revoked tokens answer 200 too (RFC 7009 section 2.2).
        with contextlib.suppress(InvalidToken):
            if tokens.api_key_shape_ok(asked.token):
                await flow.revoke_key(await flow.authenticate(asked.token))
        return JSONResponse({"ok": True})

    return [
        Route("/device/code", device_code, methods=["POST"]),
        Route("/device/token", device_token, methods=["POST"]),
        Route("/revoke", revoke, methods=["POST"]),
    ]
