"""The Runtime API at `{runtime_url}` = `/runtime` (spec 4.5, contract 5).

Every answer is either the success body or exactly the failure body: 200 for a denial, 400
for a malformed request (except /check, always 200), 429 when rate limited. Nothing else
ever leaves these endpoints, not even on a server fault, so a game cannot learn which check
failed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters_http.bodies import read_bytes
from adapters_http.observability import RUNTIME_OUTCOMES
from licore.errors import InvalidRequest, PayloadTooLarge, RateLimited
from licore.services import runtime
from licore.services.deps import Deps

MAX_BODY = 64 * 1024
log = logging.getLogger("licore.runtime")

Call = Callable[[Deps, Any, str], Awaitable[dict[str, Any]]]


def _json(body: dict[str, Any], status: int = 200,
          headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body, separators=(",", ":")), status_code=status,
                    headers=headers, media_type="application/json")


def _endpoint(deps: Deps, name: str, call: Call, failure: dict[str, Any], malformed_status: int,
              max_body: int) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        ip = request.client.host if request.client else "unknown"
        outcome = RUNTIME_OUTCOMES.labels(name, "malformed")
        try:
            raw = await read_bytes(request, max_body)
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                return _json(failure, malformed_status)
            answer = await call(deps, body, ip)
            outcome = RUNTIME_OUTCOMES.labels(name, "success" if answer.get("success")
                                              else "denied")
            return _json(answer)
        except (InvalidRequest, PayloadTooLarge):
            return _json(failure, malformed_status)
        except RateLimited as limited:
            outcome = RUNTIME_OUTCOMES.labels(name, "rate_limited")
            return _json(failure, 429, {"Retry-After": str(limited.retry_after)})
        except Exception as exc:
            outcome = RUNTIME_OUTCOMES.labels(name, "error")
            log.error("runtime %s failed: %s", request.url.path, type(exc).__name__)
            return _json(failure, 500)
        finally:
            outcome.inc()

    return endpoint


def routes(deps: Deps) -> list[Route]:
    table: list[tuple[str, Call, dict[str, Any], int, int]] = [
        ("/check", runtime.check, {"success": False}, 200, MAX_BODY),
        ("/unlock", runtime.unlock, runtime.FAIL, 400, MAX_BODY),
        ("/version", runtime.version, runtime.FAIL, 400, MAX_BODY),
        ("/update", runtime.update, runtime.FAIL, 400, MAX_BODY),
        # a whole script rides in the body, JSON-escaped (up to 6 bytes a character)
        ("/verify-source", runtime.verify_source, runtime.FAIL, 400,
         6 * runtime.SOURCE_MAX + MAX_BODY),
    ]
    return [Route(path, _endpoint(deps, path[1:], call, failure, status, limit), methods=["POST"])
            for path, call, failure, status, limit in table]
