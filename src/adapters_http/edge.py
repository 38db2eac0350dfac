"""The outer edge of every request, before any route: what must hold whatever the route.

- A zero byte in the path or the query string is refused at once, in the shape of the
  family the path belongs to (PostgreSQL cannot store one, and no name or id holds one).
- An unexpected exception is answered `500 server_error` and logged as its type and the
  path only, never a traceback (a traceback can quote a secret from a local variable).
- A request whose body was not read to its end (refused by `Content-Length`, cut at the
  limit, or not wanted at all) is answered with `Connection: close`, and what the client
  is still sending is read and dropped while the answer goes out. Without this the server
  stops reading, the client blocks writing the body and never sees the answer (Python's
  `requests` and `httpx` wait for their write timeout), and the server keeps the connection
  and the queued pieces of the body for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from starlette.types import Message, Receive, Scope, Send

from adapters_http import site
from adapters_http.http_layer import HttpLayer
from licore.errors import printable

error_log = logging.getLogger("licore.error")

DRAIN_FOR = 30.0  # seconds at most to read and drop what a refused client still sends


def _json(status: int, body: object) -> tuple[int, bytes, bytes]:
    return status, b"application/json", json.dumps(body, separators=(",", ":")).encode()


def refusal_for(path: str, description: str) -> tuple[int, bytes, bytes]:
    """Status, media type and body of a bad-request refusal, in the path's family's shape."""
    if path == "/runtime/check":
        return _json(200, {"success": False})  # spec 7: /check is always HTTP 200
    if path.startswith("/runtime/"):
        return _json(400, {"ok": False})
    if path.startswith(("/v1/", "/auth/", "/openapi.json", "/metrics", "/.well-known/")):
        return _json(400, {"error": "invalid_request",
                           "error_description": printable(description)})
    page = ("<!doctype html><html lang=en><meta charset=utf-8><title>Bad request</title>"
            f"<h1>Bad request</h1><p>{description}.</p><p><a href=\"/\">Home</a></p></html>")
    return 400, b"text/html; charset=utf-8", page.encode()


def _server_error(path: str) -> tuple[int, bytes, bytes]:
    if path == "/runtime/check":
        return _json(500, {"success": False})
    if path.startswith("/runtime/"):
        return _json(500, {"ok": False})
    return _json(500, {"error": "server_error",
                       "error_description": "the server failed; retry the request"})


def has_body(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
        if name == b"transfer-encoding":
            return True
    return False


def zero_byte_in_url(scope: Scope) -> bool:
    query: bytes = scope.get("query_string", b"")
    return "\x00" in scope["path"] or b"\x00" in query or b"%00" in query


async def drop_the_rest(receive: Receive) -> None:
    """Read and drop what the client still sends, for at most DRAIN_FOR seconds."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(DRAIN_FOR):
            while (await receive())["type"] == "http.request":
                pass  # each piece is dropped as it comes; the disconnect ends it


class BodyWatch:
    """Whether the client is still sending the request's body: the app reads through
    `receive`; when an answer starts before the body was read to its end, `answering` says
    the connection must close and starts reading and dropping the rest, which `finish`
    waits for."""

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.unread = has_body(scope)
        self._receive = receive
        self._drain: asyncio.Task[None] | None = None

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.disconnect" or not message.get("more_body", False):
            self.unread = False
        return message

    def answering(self) -> bool:
        if self.unread and self._drain is None:
            self._drain = asyncio.create_task(drop_the_rest(self._receive))
        return self.unread

    async def finish(self) -> None:
        if self._drain is not None:
            await self._drain


def log_unhandled(scope: Scope, exc: Exception) -> None:
    # Type and path only: the message or a traceback could quote a secret.
    error_log.error("unhandled %s on %s %s", type(exc).__name__, scope["method"],
                    scope["path"])


async def _answer(send: Send, answer: tuple[int, bytes, bytes], close: bool) -> None:
    status, kind, body = answer
    headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()),
               (b"cache-control", b"no-store")]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Edge(HttpLayer):
    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        watch = BodyWatch(scope, receive)
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if watch.answering() or message["status"] == 413:
                    message = {**message, "headers": [
                        *(h for h in message.get("headers", []) if h[0].lower()
                          != b"connection"), (b"connection", b"close")]}
            await send(message)

        try:
            if zero_byte_in_url(scope):
                await _answer(sending, refusal_for(site.local_path(scope),
                                                   "the address must not contain a zero byte"),
                              close=watch.unread)
                return
            await self.app(scope, watch.receive, sending)
        except Exception as exc:
            log_unhandled(scope, exc)
            if not started:
                await _answer(sending, _server_error(site.local_path(scope)), close=watch.unread)
        finally:
            await watch.finish()
