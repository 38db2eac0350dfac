"""The Runtime API at `{runtime_url}` = `/runtime` (spec 4.5, contract 5).

Every answer is either the success body or exactly the failure body: 200 for a denial, 400
for a malformed request (except /check, always 200), 429 when rate limited. Nothing else
ever leaves these endpoints, not even on a server fault, so a game cannot learn which check
failed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import attrs
from starlette.datastructures import URL
from starlette.exceptions import HTTPException
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.types import Message, Receive, Scope, Send

from adapters_http import api_doc as d
from adapters_http import json_text, site
from adapters_http.api_doc import Doc
from adapters_http.bodies import receive_json
from adapters_http.compression import GZIP_ABOVE, SEALED, VARY, accepts_gzip, send_gzip
from adapters_http.decoding import LENIENT, MAX_STRING, structure
from adapters_http.edge import BodyWatch, log_unhandled, zero_byte_in_url
from adapters_http.observability import (
    record_request,
    request_id,
    request_id_of,
    runtime_outcome,
)
from licore import bounds
from licore import commands as c
from licore.errors import InvalidRequest, PayloadTooLarge, RateLimited, Unavailable
from licore.services.runtime import Runtime
from licore.services.settings import Settings

MOUNT = "/runtime"  # where the app mounts these calls
MAX_BODY = 64 * 1024
log = logging.getLogger("licore.runtime")

J = dict[str, Any]
FAIL: J = {"ok": False}
CHECK_FAIL: J = {"success": False}


STREAM_ABOVE = 1 << 20  # a sealed answer with more cipher text than this is streamed
_PIECE = 1 << 20


async def _send_json(send: Send, body: J, status: int = 200,
                     headers: dict[str, str] | None = None, scope: Scope | None = None) -> None:
    head = [(b"content-type", b"application/json")]
    head += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    cipher = body.get("cipher")
    if isinstance(cipher, str) and len(cipher) > GZIP_ABOVE:
        # A large sealed answer (an /update): gzip-encoded when the caller accepts it.
        if scope is not None and accepts_gzip(scope["headers"]):
            await send_gzip(send, status, head, _pieces(body, cipher), SEALED)
            return
        head.append(VARY)
        if len(cipher) > STREAM_ABOVE:
            await send({"type": "http.response.start", "status": status, "headers": head})
            for piece in _pieces(body, cipher):
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
    text = json_text.dumps(body, json_text.COMPACT).encode()
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
    if got.file is not None:
        # An update as a file (extension, docs/runtime.md): its URL is filled in by the
        # app, which knows where files are served (`_file_url`).
        file: J = {"url": got.file.name, "sha256": got.file.sha256, "size": got.file.size}
        if got.file.compression is not None:
            file["compression"] = got.file.compression
        return {"ok": True, "exp": got.file.exp, "version": got.version, "update": True,
                "file": file, "cipher": got.sealed.cipher, "tag": got.sealed.tag}
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
    doc: Doc = attrs.field(kw_only=True)  # what /openapi.json says of the call

    @property
    def name(self) -> str:
        """The call's name in the metrics: `check`, `unlock`, ..."""
        return self.path.removeprefix("/")


ENDPOINTS = [
    RuntimeEndpoint("/check", check, CHECK_FAIL, 200, doc=d.RUNTIME_CHECK),
    RuntimeEndpoint("/unlock", unlock, FAIL, 400, doc=d.RUNTIME_UNLOCK),
    RuntimeEndpoint("/version", version, FAIL, 400, doc=d.RUNTIME_VERSION),
    RuntimeEndpoint("/update", update, FAIL, 400, doc=d.RUNTIME_UPDATE),
    # a whole script rides in the body, JSON-escaped (up to 6 bytes a character)
    RuntimeEndpoint("/verify-source", verify_source, FAIL, 400,
                    6 * bounds.SOURCE.max_len + MAX_BODY, bounds.SOURCE.max_len,
                    doc=d.RUNTIME_VERIFY_SOURCE),
]


FILES = "/files/"  # update files, under the mount: GET /runtime/files/{name}
# Immutable: a name is one content forever (licore.update_files), so any cache may keep it.
_FILE_CACHING = "public, max-age=31536000, immutable"


@attrs.frozen
class _Route:
    path: str  # what the metrics label the request with


_FILE_ROUTE = _Route(FILES + "{name}")


class _UpdateFileResponse(FileResponse):
    # Sent in pieces of 1 MiB: a 5 MiB file in five reads on the offload thread, not 80.
    chunk_size = 1 << 20


def _not_modified(scope: Scope, etag: str) -> bool:
    for name, value in scope["headers"]:
        if name == b"if-none-match":
            given = {v.strip().removeprefix("W/") for v in value.decode("latin-1").split(",")}
            return etag in given or "*" in given
    return False


class RuntimeApp:
    """The Runtime API as one plain ASGI app under `/runtime`: the call is found by its
    path in a dict, and the body read from the ASGI messages, without Starlette's route
    table, `Request` or `Response`. These are the hottest calls of the service and their
    answers are fixed, small JSON, so the general machinery was most of their cost
    (docs/performance.md). Anything that is not one of the calls is handed to the app's
    error handlers as Starlette's router would hand it: 404, 405 with `Allow`, or a 307 to
    the path without its trailing slash."""

    def __init__(self, runtime: Runtime, settings: Settings | None = None) -> None:
        self.runtime = runtime
        self.settings = settings or Settings()
        self.endpoints = {e.path: e for e in ENDPOINTS}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"].removeprefix(scope.get("root_path", ""))  # under the mount
        e = self.endpoints.get(path)
        if e is None and path.startswith(FILES):
            scope["route"] = _FILE_ROUTE
            if scope["method"] not in ("GET", "HEAD"):
                raise HTTPException(405, headers={"Allow": "GET, HEAD"})
            await self.file(path.removeprefix(FILES), scope, receive, send)
            return
        if e is None:
            if path.endswith("/") and path.rstrip("/") in self.endpoints:
                await RedirectResponse(URL(scope=scope).replace(
                    path=scope["path"].rstrip("/")))(scope, receive, send)
                return
            raise HTTPException(404)
        scope["route"] = e  # the metrics label its path under the mount's
        if scope["method"] != "POST":
            raise HTTPException(405, headers={"Allow": "POST"})
        await self.answer(e, scope, receive, send)

    async def answer(self, e: RuntimeEndpoint, scope: Scope, receive: Receive,
                      send: Send) -> None:
        client = scope.get("client")
        ip = client[0] if client else "unknown"
        outcome = runtime_outcome(e.name, "malformed")
        try:
            body = await receive_json(scope, receive, e.max_body, e.max_string)
            answer = await e.call(self.runtime, body, ip)
            if isinstance(answer.get("file"), dict):
                answer["file"]["url"] = self._file_url(scope, answer["file"]["url"])
            # /check answers `success`, the sealed calls and /verify-source answer `ok`
            passed = answer.get("success") or answer.get("ok")
            outcome = runtime_outcome(e.name, "success" if passed else "denied")
            await _send_json(send, answer, scope=scope)
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


    def _file_url(self, scope: Scope, name: str) -> str:
        """Where a caller fetches the file: under the operator's base URL (a CDN, say),
        else this server's own path for it, which the caller takes from the origin it
        called (so it holds behind any proxy and under any site prefix)."""
        if self.settings.update_files_url is not None:
            return f"{self.settings.update_files_url}/{name}"
        return f"{scope.get('root_path', '')}{FILES}{name}"

    async def file(self, name: str, scope: Scope, receive: Receive, send: Send) -> None:
        """An update file: immutable, with its digest as ETag, ranges, and HEAD; handed to
        the proxy (X-Accel-Redirect) where one serves the folder."""
        path = await self.runtime.update_file(name)
        if path is None:
            raise HTTPException(404)
        etag = f'"{name.split("-", 1)[0]}"'
        headers = {"ETag": etag, "Cache-Control": _FILE_CACHING}
        if _not_modified(scope, etag):
            await Response(status_code=304, headers=headers)(scope, receive, send)
            return
        accel = self.settings.update_files_accel
        if accel is not None:
            await Response(media_type="application/octet-stream", headers={
                **headers, "X-Accel-Redirect": f"{accel}{name[:2]}/{name}"})(
                    scope, receive, send)
            return
        await _UpdateFileResponse(path, media_type="application/octet-stream",
                                  headers=headers)(scope, receive, send)


class RuntimeFront:
    """A runtime call's whole edge in one layer, in front of the middleware stack.

    The app hands it a POST to one of the five calls (under the site's prefix, if it has
    one; with no zero byte in the query string); it does for that call what `RequestContext`
    and `Edge` do for every request (request id in and out, metrics and the access line,
    `Connection: close` and draining when the body was not read to its end, an unexpected
    exception logged as its type) and answers through the `RuntimeApp` with the scope the
    `/runtime` mount would have given it. Three layers of wrapped `send` and `receive` were
    a tenth of a call's cost (docs/performance.md). Anything else goes through the stack
    and the route table, so a 404, 405, redirect or refusal is answered exactly as before."""

    def __init__(self, target: RuntimeApp, mount: str = MOUNT) -> None:
        self.target = target
        self.mount = mount
        self.endpoints = {mount + path: e for path, e in target.endpoints.items()}

    def takes(self, scope: Scope) -> RuntimeEndpoint | None:
        """The call this request is for, when it is one this layer answers."""
        if scope["type"] != "http" or scope["method"] != "POST" or zero_byte_in_url(scope):
            return None
        # The path below the site's prefix (`site.enter` has made the path whole), as the
        # route table matches it.
        return self.endpoints.get(site.local_path(scope))

    async def __call__(self, e: RuntimeEndpoint, scope: Scope, receive: Receive,
                       send: Send) -> None:
        rid = request_id_of(scope)
        token = request_id.set(rid)
        start = time.perf_counter()
        root = site.root(scope)
        scope["app_root_path"] = scope.get("app_root_path", root)
        scope["root_path"] = root + self.mount
        scope["route"] = e
        watch = BodyWatch(scope, receive)
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                # The message is the runtime app's own, made for this answer alone.
                if watch.answering():
                    message["headers"].append((b"connection", b"close"))
                message["headers"].append((b"x-request-id", rid.encode()))
            await send(message)

        try:
            await self.target.answer(e, scope, watch.receive, sending)
        except Exception as exc:  # the answer could not be sent (the app answers the rest)
            log_unhandled(scope, exc)
        finally:
            await watch.finish()
            record_request(scope, status, time.perf_counter() - start)
            request_id.reset(token)
