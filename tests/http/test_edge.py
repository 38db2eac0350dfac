"""The edge of every request (adapters_http/edge.py), around a stand-in application that
fails: the answer is the family's 500 and the log one line with the error's type and the
path, never the message or a traceback (either could quote a secret)."""

from __future__ import annotations

import logging

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from adapters_http.edge import Edge

SECRET = "lck_do-not-log-me"


async def failing(scope: Scope, receive: Receive, send: Send) -> None:
    raise ValueError(f"the license key {SECRET} was wrong")


@pytest.mark.parametrize(("path", "status", "body"), [
    ("/v1/products", 500, {"error": "server_error",
                           "error_description": "the server failed; retry the request"}),
    ("/runtime/check", 500, {"success": False}),
    ("/runtime/unlock", 500, {"ok": False}),
])
async def test_an_unexpected_error_is_answered_and_logged_without_a_traceback(
        caplog: pytest.LogCaptureFixture, path: str, status: int, body: object) -> None:
    transport = httpx.ASGITransport(app=Edge(failing))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        with caplog.at_level(logging.INFO):
            r = await client.post(path, json={"key": SECRET})
    assert (r.status_code, r.json()) == (status, body)
    records = [rec for rec in caplog.records if rec.name == "licore.error"]
    assert len(records) == 1
    assert records[0].getMessage() == f"unhandled ValueError on POST {path}"
    assert records[0].exc_info is None
    assert SECRET not in caplog.text and "Traceback" not in caplog.text


async def test_a_zero_byte_in_the_address_never_reaches_the_application() -> None:
    transport = httpx.ASGITransport(app=Edge(failing))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        r = await client.get("/v1/products?product_id=%00")
        assert (r.status_code, r.json()["error"]) == (400, "invalid_request")
        r = await client.get("/dashboard/a%00")
        assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
