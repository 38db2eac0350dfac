"""The baseline: a bare Starlette app answering `{"success": true}` to any POST, served by
Hypercorn with the same settings as `licore serve`."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


async def answer(request: Request) -> Response:
    await request.body()
    return Response(b'{"success":true}', media_type="application/json")


app = Starlette(routes=[Route("/runtime/{name}", answer, methods=["POST"])])
