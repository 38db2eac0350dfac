"""Issue 13, item 13: a large JSON body is parsed on a worker thread, not on the event loop;
a small one is parsed inline (the hop would cost more than the parse)."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from adapters_http import bodies
from adapters_http.decoding import parse_json
from licore.errors import InvalidRequest

JSON = {"content-type": "application/json"}


def _client(monkeypatch: pytest.MonkeyPatch) -> tuple[httpx.AsyncClient, dict[str, bool]]:
    """A one-route app reading its body with `read_json`, and where the parse ran."""
    seen: dict[str, bool] = {}
    loop_thread = threading.get_ident()  # the test's event loop serves the app

    def recording_parse(raw: bytes | str, **kwargs: int) -> object:
        seen["on_loop"] = threading.get_ident() == loop_thread
        return parse_json(raw, **kwargs)

    monkeypatch.setattr(bodies, "parse_json", recording_parse)

    async def echo(request: Request) -> JSONResponse:
        return JSONResponse({"fields": len(await bodies.read_json(request))})

    app = Starlette(routes=[Route("/", echo, methods=["POST"])])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t"), seen


@pytest.mark.parametrize(("fields", "on_loop"), [(10, True), (4000, False)])
async def test_json_bodies_over_64_kib_are_parsed_off_the_event_loop(
        monkeypatch: pytest.MonkeyPatch, fields: int, on_loop: bool) -> None:
    client, seen = _client(monkeypatch)
    raw = json.dumps({f"f{i}": "x" * 40 for i in range(fields)}).encode()
    assert (len(raw) > bodies.INLINE_JSON_BYTES) is not on_loop
    async with client:
        answer = await client.post("/", content=raw, headers=JSON)
    assert answer.json() == {"fields": fields}
    assert seen["on_loop"] is on_loop


async def test_a_refusal_from_the_worker_thread_is_the_same_refusal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    client, seen = _client(monkeypatch)
    raw = b'{"a": "' + b"x" * 100_000 + b'", "a": 1}'
    async with client:
        with pytest.raises(InvalidRequest, match="duplicate key"):
            await client.post("/", content=raw, headers=JSON)
    assert seen["on_loop"] is False
