"""Every JSON answer an end-to-end test receives, held to the server's own `/openapi.json`.

`tests/http/conftest.py` wraps httpx's transports for each test: an answer of a documented
operation (its method and path template) with a documented status and a JSON body must
validate against that status's schema, or the test fails at its end naming the path, the
status and what differed. Answers the document does not describe (a status it does not list,
a path it does not have: pages, files, `/metrics`) are not judged here; the OpenAPI tests
(`test_openapi_e2e.py`, `test_openapi_tables.py`) hold the document's coverage."""

from __future__ import annotations

import contextlib
import re
import typing
from collections.abc import Iterator

import httpx
import jsonschema

from tests.support.server import SERVING

_patterns: dict[str, re.Pattern[str]] = {}


def _pattern(template: str) -> re.Pattern[str]:
    """`/v1/products/{id}` as a pattern a concrete path matches whole."""
    found = _patterns.get(template)
    if found is None:
        parts = re.split(r"\{[^/}]+\}", template)
        found = _patterns[template] = re.compile(
            "^" + "[^/]+".join(re.escape(part) for part in parts) + "$")
    return found


def problem(request: httpx.Request, response: httpx.Response) -> str | None:
    """What is wrong with a read answer against its server's document, or None."""
    url = request.url
    server = SERVING.get(f"{url.scheme}://{url.netloc.decode()}")
    doc = server.document() if server is not None else None
    if doc is None or not isinstance(doc.get("paths"), dict):
        return None  # a stand-in, or a server that has no document
    path = next((p for p in doc["paths"] if _pattern(p).match(url.path)), None)
    operation = doc["paths"].get(path, {}).get(request.method.lower()) if path else None
    answer = (operation or {}).get("responses", {}).get(str(response.status_code))
    media = (answer or {}).get("content", {}).get("application/json")
    if media is None:
        return None
    schema = {**media["schema"], "components": doc["components"]}
    try:
        jsonschema.Draft202012Validator(schema).validate(response.json())
    except jsonschema.ValidationError as wrong:
        return (f"{request.method} {path} {response.status_code}: {wrong.message} at "
                f"{'/'.join(map(str, wrong.absolute_path)) or 'the top'}")
    return None


def _json(response: httpx.Response) -> bool:
    media: str = response.headers.get("content-type", "")
    return media.split(";")[0] == "application/json"


def _judge(request: httpx.Request, response: httpx.Response, raw: bytes,
           found: list[str]) -> None:
    copy = httpx.Response(response.status_code, headers=response.headers, content=raw,
                          request=request)
    copy.read()
    wrong = problem(request, copy)
    if wrong is not None:
        found.append(wrong)


@contextlib.contextmanager
def judged() -> Iterator[list[str]]:
    """While it lasts, every answer httpx reads is judged; the problems found, in order."""
    found: list[str] = []
    sync_send = httpx.HTTPTransport.handle_request
    async_send = httpx.AsyncHTTPTransport.handle_async_request

    def handle(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
        response = sync_send(self, request)
        if _json(response):
            # Read here and put back as it came, so the caller may still read it raw.
            stream = typing.cast(httpx.SyncByteStream, response.stream)
            raw = b"".join(stream)
            stream.close()  # the connection goes back to its pool
            response.stream = httpx.ByteStream(raw)
            _judge(request, response, raw, found)
        return response

    async def handle_async(self: httpx.AsyncHTTPTransport,
                           request: httpx.Request) -> httpx.Response:
        response = await async_send(self, request)
        if _json(response):
            pieces = typing.cast(httpx.AsyncByteStream, response.stream)
            raw = b"".join([piece async for piece in pieces])
            await pieces.aclose()
            response.stream = httpx.ByteStream(raw)
            _judge(request, response, raw, found)
        return response

    httpx.HTTPTransport.handle_request = handle  # type: ignore[method-assign]
    httpx.AsyncHTTPTransport.handle_async_request = handle_async  # type: ignore[method-assign]
    try:
        yield found
    finally:
        httpx.HTTPTransport.handle_request = sync_send  # type: ignore[method-assign]
        httpx.AsyncHTTPTransport.handle_async_request = async_send  # type: ignore[method-assign]
