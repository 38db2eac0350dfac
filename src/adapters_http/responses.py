"""Answers in the specification's shapes: JSON bodies and `{ error, error_description }`."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from adapters_http.compression import FILES, GZIP_ABOVE, VARY, accepts_gzip, send_gzip, slices
from adapters_http.decoding import converter
from licore.errors import (
    InsufficientScope,
    InvalidToken,
    LicoreError,
    PlatformUnavailable,
    RateLimited,
    SlowDown,
    Unavailable,
)
from licore.services.builds import Download


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json.dumps(converter.unstructure(content), ensure_ascii=False,
                          separators=(",", ":")).encode()


def error_response(error: LicoreError, *, credentials_sent: bool = True) -> JSONResponse:
    body: dict[str, Any] = {"error": error.code, "error_description": error.description}
    headers: dict[str, str] = {}
    if isinstance(error, SlowDown):
        body["interval"] = error.interval
    if isinstance(error, RateLimited):
        headers["Retry-After"] = str(error.retry_after)
        if error.limit is not None:
            headers.update({"RateLimit-Limit": str(error.limit), "RateLimit-Remaining": "0",
                            "RateLimit-Reset": str(error.retry_after)})
    if isinstance(error, (Unavailable, PlatformUnavailable)):
        headers["Retry-After"] = str(error.retry_after)
    if isinstance(error, InvalidToken):
        # RFC 6750 section 3: no error attribute when the request carried no credentials.
        headers["WWW-Authenticate"] = (
            f'Bearer error="invalid_token", error_description="{error.description}"'
            if credentials_sent else "Bearer")
    elif isinstance(error, InsufficientScope):
        scope = f', scope="{error.scope}"' if error.scope else ""
        headers["WWW-Authenticate"] = f'Bearer error="insufficient_scope"{scope}'
    headers.setdefault("Cache-Control", "no-store")
    return JSONResponse(body, status_code=error.status, headers=headers)


_UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9._+-]")
_MEDIA = {"binary": "application/octet-stream", "xml": "application/xml",
          "nodes": "application/json"}
_SUFFIX = {"binary": "rbxm", "xml": "rbxmx", "nodes": "json"}
# A binary model's chunks are LZ4-compressed already: gzip took 12% off its bytes for eight
# times the CPU of sending it plain (docs/api.md), so it is sent as it is, with its length.
_COMPRESSIBLE = frozenset({"xml", "nodes"})


class FileResponse(Response):
    """A file, gzip-encoded on the way out when it is large, of a form that compresses, and
    the caller accepts gzip (decided here, from the request, so the routes that answer with
    a file need not)."""

    def __init__(self, content: bytes, *, compressible: bool, media_type: str,
                 headers: dict[str, str]) -> None:
        super().__init__(content, media_type=media_type, headers=headers)
        self.compressible = compressible

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if len(self.body) <= GZIP_ABOVE or not self.compressible:
            await super().__call__(scope, receive, send)
            return
        # A HEAD is answered plain: there is no body to compress.
        if scope.get("method") == "HEAD" or not accepts_gzip(scope["headers"]):
            self.raw_headers.append(VARY)
            await super().__call__(scope, receive, send)
            return
        await send_gzip(send, self.status_code, self.raw_headers, slices(self.body), FILES)


def file_response(got: Download) -> Response:
    """A buyer's copy as a file: named after its version label, never cached by others."""
    name = f"{_UNSAFE_IN_NAME.sub('', got.version) or 'build'}.{_SUFFIX[got.format]}"
    return FileResponse(got.data, compressible=got.format in _COMPRESSIBLE,
                        media_type=_MEDIA[got.format], headers={
        "X-Service-Version": got.version,
        "Content-Disposition": f'attachment; filename="{name}"',
        "Cache-Control": "private, no-store",
    })
