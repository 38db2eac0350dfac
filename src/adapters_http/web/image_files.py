"""Product images' files, at an address named by the file's digest (`wire.IMAGES_PATH`):
the address never serves other bytes, so browsers and proxies may keep it for good, and a
copy they hold is checked with its ETag alone."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from adapters_http.wire import IMAGES_PATH
from licore.errors import NotFound
from licore.services.images import ProductImages

FOREVER = "public, max-age=31536000, immutable"


def matches(if_none_match: str, etag: str) -> bool:
    """RFC 9110 13.1.2: a list of tags or `*`, compared weakly (`W/` aside)."""
    sent = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in sent or etag in sent


def routes(images: ProductImages) -> list[Route]:
    async def image_file(request: Request) -> Response:
        try:
            found = await images.file(str(request.path_params["name"]))
        except NotFound:
            return PlainTextResponse("no such image", status_code=404)
        etag = f'"{found.sha256}"'
        headers = {"ETag": etag, "Cache-Control": FOREVER, "X-Content-Type-Options": "nosniff"}
        if matches(request.headers.get("if-none-match", ""), etag):
            return Response(status_code=304, headers=headers)
        return Response(found.data, media_type=found.content_type, headers=headers)

    return [Route(IMAGES_PATH + "{name}", image_file, methods=["GET"])]
