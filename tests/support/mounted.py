"""An embedder's application: a shop of its own at `/`, licore mounted at `/licensing` with
Starlette's `Mount`, as docs/embedding.md shows. Served by Hypercorn in the mounting tests
(`hypercorn tests.support.mounted:app`), configured from the environment like `licore serve`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route

from licore_cli.asgi import app as licore


@asynccontextmanager
async def lifespan(shop: Starlette) -> AsyncIterator[None]:
    # A mounted application's lifespan is not run by the one that mounts it: run licore's.
    # (the layers around licore's application hand its `router` on).
    router: Any = getattr(licore, "router")  # noqa: B009 - reached through the layers' __getattr__
    async with router.lifespan_context(licore):
        yield


async def shop_home(request: Request) -> Response:
    return PlainTextResponse("the shop's own page")


app = Starlette(routes=[Route("/", shop_home), Mount("/licensing", app=licore)],
                lifespan=lifespan)
