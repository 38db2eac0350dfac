"""The Runtime API at `{runtime_url}` = `/runtime` (spec 4.5, contract 5).

Every answer is either the success body or exactly the failure body: 200 for a denial, 400
for a malformed request (except /check, always 200), 429 when rate limited. Nothing else
ever leaves these endpoints, not even on a server fault, so a game cannot learn which check
failed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from adapters_http.bodies import read_json
from adapters_http.decoding import LENIENT, MAX_STRING, structure
from adapters_http.observability import runtime_outcome
from licore import bounds
from licore import commands as c
from licore.errors import InvalidRequest, PayloadTooLarge, RateLimited, Unavailable
from licore.services.runtime import Runtime

MAX_BODY = 64 * 1024
log = logging.getLogger("licore.runtime")

J = dict[str, Any]
FAIL: J = {"ok": False}
CHECK_FAIL: J = {"success": False}


STREAM_ABOVE = 1 << 20  # a sealed answer with more cipher text than this is streamed
_PIECE = 1 << 20


def _json(body: J, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    cipher = body.get("cipher")
    if isinstance(cipher, str) and len(cipher) > STREAM_ABOVE:
        return StreamingResponse(_pieces(body, cipher), status_code=status, headers=headers,
                                 media_type="application/json")
    return Response(json.dumps(body, separators=(",", ":")), status_code=status,
                    headers=headers, media_type="application/json")


def _pieces(body: J, cipher: str) -> Iterator[bytes]:
    """The same JSON text as `_json` writes, with the (hex, so never escaped) cipher sent in
    pieces instead of copied into one string twice over."""
    marker = "\x00cipher\x00"
    head, tail = json.dumps({**body, "cipher": marker}, separators=(",", ":")).split(
        json.dumps(marker))
    yield (head + '"').encode()
    for start in range(0, len(cipher), _PIECE):
        yield cipher[start:start + _PIECE].encode("ascii")
    yield ('"' + tail).encode()


async def check(runtime: Runtime, body: object, ip: str) -> J:
    return {"success": await runtime.check(structure(body, c.Check, LENIENT), ip)}


async def unlock(runtime: Runtime, body: object, ip: str) -> J:
    got = await runtime.unlock(structure(body, c.Unlock, LENIENT), ip)
    if got is None:
        return FAIL
    return {"ok": True, "exp": got.exp, "cipher": got.sealed.cipher, "tag": got.sealed.tag}


async def version(runtime: Runtime, body: object, ip: str) -> J:
    got = await runtime.version(structure(body, c.AskVersion, LENIENT), ip)
    if got is None:
        return FAIL
    return {"ok": True, "latest": got.latest, "update": got.update, "fileId": got.file_id}


async def update(runtime: Runtime, body: object, ip: str) -> J:
    got = await runtime.update(structure(body, c.Update, LENIENT), ip)
    if got is None:
        return FAIL
    return {"ok": True, "version": got.version, "update": got.update,
            "cipher": got.sealed.cipher, "tag": got.sealed.tag}


async def verify_source(runtime: Runtime, body: object, ip: str) -> J:
    return {"ok": await runtime.verify_source(structure(body, c.VerifySource, LENIENT), ip)}


Call = Callable[[Runtime, object, str], Awaitable[J]]


@attrs.frozen
class RuntimeEndpoint:
    path: str
    call: Call
    failure: J
    malformed_status: int
    max_body: int = MAX_BODY
    max_string: int = MAX_STRING

    @property
    def name(self) -> str:
        """The call's name in the metrics: `check`, `unlock`, ..."""
        return self.path.removeprefix("/")


ENDPOINTS = [
    RuntimeEndpoint("/check", check, CHECK_FAIL, 200),
    RuntimeEndpoint("/unlock", unlock, FAIL, 400),
    RuntimeEndpoint("/version", version, FAIL, 400),
    RuntimeEndpoint("/update", update, FAIL, 400),
    # a whole script rides in the body, JSON-escaped (up to 6 bytes a character)
    RuntimeEndpoint("/verify-source", verify_source, FAIL, 400,
                    6 * bounds.SOURCE.max_len + MAX_BODY, bounds.SOURCE.max_len),
]


def _endpoint(runtime: Runtime, e: RuntimeEndpoint) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        ip = request.client.host if request.client else "unknown"
        outcome = runtime_outcome(e.name, "malformed")
        try:
            body = await read_json(request, e.max_body, e.max_string)
            answer = await e.call(runtime, body, ip)
            # /check answers `success`, the sealed calls and /verify-source answer `ok`
            passed = answer.get("success") or answer.get("ok")
            outcome = runtime_outcome(e.name, "success" if passed else "denied")
            return _json(answer)
        except (InvalidRequest, PayloadTooLarge):
            return _json(e.failure, e.malformed_status)
        except RateLimited as limited:
            outcome = runtime_outcome(e.name, "rate_limited")
            return _json(e.failure, 429, {"Retry-After": str(limited.retry_after)})
        except Unavailable as away:
            # The database is away: the failure body, with when to try again.
            outcome = runtime_outcome(e.name, "error")
            return _json(e.failure, 503, {"Retry-After": str(away.retry_after)})
        except Exception as exc:
            outcome = runtime_outcome(e.name, "error")
            log.error("runtime %s failed: %s", request.url.path, type(exc).__name__)
            return _json(e.failure, 500)
        finally:
            outcome.inc()

    return endpoint


def routes(runtime: Runtime) -> list[Route]:
    return [Route(e.path, _endpoint(runtime, e), methods=["POST"]) for e in ENDPOINTS]
