"""Reading request bodies: JSON everywhere, and RFC 8628 form encoding on the device flow."""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, unquote

from starlette.requests import ClientDisconnect, Request
from starlette.types import Receive, Scope

from adapters_http.decoding import MAX_STRING, check_text, parse_json
from licore.errors import InvalidRequest, PayloadTooLarge

MAX_JSON_BYTES = 1024 * 1024
# Bodies larger than this are parsed on a worker thread so the event loop keeps serving
# (a 1 MiB body holds it 25 ms). The hop costs about 0.07 ms and parsing 64 KiB about 1.3 ms
# (bench/json_offload.py): below this size the hop would be a large share of the parse, and
# the usual body (a runtime call, a product) is a few hundred bytes.
INLINE_JSON_BYTES = 64 * 1024
FORM = "application/x-www-form-urlencoded"


async def read_bytes(request: Request, limit: int) -> bytes:
    raw = await _collect(request.headers.get("content-length"), request.stream(), limit)
    request.state.sent_body = raw  # for an Idempotency-Key's fingerprint (partner.py)
    return raw


async def _collect(declared: str | None, pieces: AsyncIterator[bytes], limit: int) -> bytes:
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"the body is larger than {limit} bytes")
    # One growing buffer rather than a list of the server's small pieces: a large body then
    # lives in one mapping the C allocator hands back whole (licore_cli/memory.py), where
    # thousands of 64 KiB pieces would be spread over the heap and stay with the process.
    body = bytearray()
    async for chunk in pieces:
        if len(body) + len(chunk) > limit:
            raise PayloadTooLarge(f"the body is larger than {limit} bytes")
        body += chunk
    return bytes(body)


async def _received(receive: Receive) -> AsyncIterator[bytes]:
    """The body's pieces straight from the ASGI messages (what `Request.stream` does, for
    endpoints that take no `Request`)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


def header(scope: Scope, name: bytes) -> str | None:
    """One request header from the ASGI scope (`name` in lower case, as servers give it)."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def media_type(request: Request) -> str:
    return _media_type(request.headers.get("content-type"))


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def is_json(request: Request) -> bool:
    return _is_json_type(media_type(request))


def _is_json_type(kind: str) -> bool:
    """`application/json`, or a `+json` type (`application/merge-patch+json`, ...)."""
    return kind == "application/json" or (kind.startswith("application/")
                                          and kind.endswith("+json"))


def require_json(request: Request) -> None:
    """Checked before the body is read: a body of another type is not taken for JSON
    (a browser's cross-site form post, for one, can only be `text/plain` or a form)."""
    _require_json_type(media_type(request))


def _require_json_type(kind: str) -> None:
    if not _is_json_type(kind):
        raise InvalidRequest("the body must be JSON, sent as Content-Type: application/json")


async def read_json(request: Request, limit: int = MAX_JSON_BYTES,
                    max_string: int = MAX_STRING) -> Any:
    """The body as parsed JSON, through the one decoder's parser."""
    require_json(request)
    request.state.sent_json = await _parsed(await read_bytes(request, limit), max_string)
    return request.state.sent_json


async def receive_json(scope: Scope, receive: Receive, limit: int = MAX_JSON_BYTES,
                       max_string: int = MAX_STRING) -> Any:
    """`read_json` for a plain ASGI endpoint: the same checks, in the same order."""
    _require_json_type(_media_type(header(scope, b"content-type")))
    raw = await _collect(header(scope, b"content-length"), _received(receive), limit)
    return await _parsed(raw, max_string)


async def _parsed(raw: bytes, max_string: int) -> Any:
    if len(raw) <= INLINE_JSON_BYTES:
        return parse_json(raw, max_string=max_string)
    return await asyncio.to_thread(parse_json, raw, max_string=max_string)


def is_form(request: Request) -> bool:
    return media_type(request) == FORM


def parse_form(raw: bytes) -> list[tuple[str, str]]:
    """A url-encoded form's pairs, every name and value checked as text."""
    try:
        pairs = parse_qsl(raw.decode(), keep_blank_values=True, strict_parsing=False,
                          errors="strict")
    except UnicodeDecodeError:
        raise InvalidRequest("the form must be UTF-8") from None
    for name, value in pairs:
        check_text("a form field name", name)
        check_text(name, value)
    return pairs


async def read_json_or_form(request: Request) -> tuple[dict[str, Any], bool]:
    """The body as a dict, and whether it came as a form (which earns OAuth leniency)."""
    if is_form(request):
        form: dict[str, Any] = {}
        for name, value in parse_form(await read_bytes(request, MAX_JSON_BYTES)):
            if name in form:
                raise InvalidRequest(f"{name} is repeated", name)  # RFC 6749 section 3.2
            form[name] = value
        return form, True
    if not is_json(request):
        raise InvalidRequest("the body must be JSON (Content-Type: application/json) or a "
                             "form (Content-Type: application/x-www-form-urlencoded)")
    body = await read_json(request)
    if not isinstance(body, dict):
        raise InvalidRequest("the body must be a JSON object")
    return body, False


def basic_client_id(request: Request) -> str | None:
    """The client id of HTTP Basic client authentication (the secret is empty and ignored)."""
    header = request.headers.get("authorization", "")
    if not header.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise InvalidRequest("malformed Basic authorization") from None
    # Decoded twice over (base64, then percent-encoding), so it may hold what a header
    # cannot: the same text rule as every other field (no zero byte, PostgreSQL refuses it).
    return check_text("client_id", unquote(decoded.split(":", 1)[0])) or None


def bearer(request: Request) -> tuple[str | None, bool]:
    """The bearer key, and whether any credentials were sent at all."""
    header = request.headers.get("authorization")
    if header is None:
        return None, False
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None, True
    return value.strip(), True
