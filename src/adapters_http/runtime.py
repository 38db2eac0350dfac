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
from starlette.datastructures import URL
from starlette.exceptions import HTTPException
from starlette.responses import RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters_http import flat_json
from adapters_http.bodies import receive_json
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


async def _send_json(send: Send, body: J, status: int = 200,
                     headers: dict[str, str] | None = None) -> None:
    head = [(b"content-type", b"application/json")]
    head += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    cipher = body.get("cipher")
    if isinstance(cipher, str) and len(cipher) > STREAM_ABOVE:
        await send({"type": "http.response.start", "status": status, "headers": head})
        for piece in _pieces(body, cipher):
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    text = flat_json.dumps(body, flat_json.COMPACT).encode()
    head.append((b"content-length", b"%d" % len(text)))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": text})


def _pieces(body: J, cipher: str) -> Iterator[bytes]:
    """The same JSON text as `_send_json` writes, with the (hex, so never escaped) cipher
    sent in pieces instead of copied into one string twice over."""
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


class RuntimeApp:
    """The Runtime API as one plain ASGI app under `/runtime`: the call is found by its
    path in a dict, and the body read from the ASGI messages, without Starlette's route
    table, `Request` or `Response`. These are the hottest calls of the service and their
    answers are fixed, small JSON, so the general machinery was most of their cost
    (docs/performance.md). Anything that is not one of the calls is handed to the app's
    error handlers as Starlette's router would hand it: 404, 405 with `Allow`, or a 307 to
    the path without its trailing slash."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.endpoints = {e.path: e for e in ENDPOINTS}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"].removeprefix(scope.get("root_path", ""))  # under the mount
        e = self.endpoints.get(path)
        if e is None:
            if path.endswith("/") and path.rstrip("/") in self.endpoints:
                await RedirectResponse(URL(scope=scope).replace(
                    path=scope["path"].rstrip("/")))(scope, receive, send)
                return
            raise HTTPException(404)
        if scope["method"] != "POST":
            raise HTTPException(405, headers={"Allow": "POST"})
        scope["route"] = e  # the metrics label its path under the mount's
        await self._answer(e, scope, receive, send)

    async def _answer(self, e: RuntimeEndpoint, scope: Scope, receive: Receive,
                      send: Send) -> None:
        client = scope.get("client")
        ip = client[0] if client else "unknown"
        outcome = runtime_outcome(e.name, "malformed")
        try:
            body = await receive_json(scope, receive, e.max_body, e.max_string)
            answer = await e.call(self.runtime, body, ip)
            # /check answers `success`, the sealed calls and /verify-source answer `ok`
            passed = answer.get("success") or answer.get("ok")
            outcome = runtime_outcome(e.name, "success" if passed else "denied")
            await _send_json(send, answer)
        except (InvalidRequest, PayloadTooLarge):
            await _send_json(send, e.failure, e.malformed_status)
        except RateLimited as limited:
            outcome = runtime_outcome(e.name, "rate_limited")
            await _send_json(send, e.failure, 429, {"Retry-After": str(limited.retry_after)})
        except Unavailable as away:
            # The database is away: the failure body, with when to try again.
            outcome = runtime_outcome(e.name, "error")
            await _send_json(send, e.failure, 503, {"Retry-After": str(away.retry_after)})
        except Exception as exc:
            outcome = runtime_outcome(e.name, "error")
            log.error("runtime %s failed: %s", scope["path"], type(exc).__name__)
            await _send_json(send, e.failure, 500)
        finally:
            outcome.inc()


class RuntimeShortcut:
    """The innermost middleware: a POST to one of the runtime calls goes straight to the
    `RuntimeApp`, with the scope the `/runtime` mount would have given it, past Starlette's
    exception middleware, route table and mount (about a tenth of a runtime call's own
    cost). Anything else (another method, another path, a path under a root path) goes on
    through the route table, so a 404, 405 or redirect is answered exactly as before."""

    def __init__(self, app: ASGIApp, target: RuntimeApp, mount: str = "/runtime") -> None:
        self.app = app
        self.target = target
        self.mount = mount
        self.paths = frozenset(mount + path for path in target.endpoints)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] == "http" and scope["method"] == "POST"
                and scope["path"] in self.paths and not scope.get("root_path")):
            scope["app_root_path"] = scope.get("app_root_path", "")
            scope["root_path"] = self.mount
            await self.target(scope, receive, send)
            return
        await self.app(scope, receive, send)
