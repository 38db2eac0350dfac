"""What the service says about itself: one JSON log line a request with a request id, and
Prometheus metrics at `/metrics`.

The request id comes from `X-Request-ID` when the caller sends a sane one (so a trace can
cross services) and is made here otherwise; it is returned on every answer and stamped on
every log line written while the request runs, through a context variable.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import os
import random
import re
import secrets
import time
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.types import Message, Receive, Scope, Send

from adapters_http import json_text, site
from adapters_http.http_layer import HttpLayer
from licore.audit import REQUEST_ID

ACCESS_LOGGER = "licore.access"
access_log = logging.getLogger(ACCESS_LOGGER)

# The core's: the audit trail writes it beside each change (docs/audit.md).
request_id: contextvars.ContextVar[str | None] = REQUEST_ID

# A request id names a request in the logs; it guards nothing, so it needs to be unique, not
# unpredictable. Drawn from a generator seeded once from the system: a fresh draw from the
# system for every request was a system call costing a runtime call 2 to 4% of its time.
# Reseeded in a forked worker, or workers would repeat each other's ids.
_ids = random.Random(secrets.randbits(128))
os.register_at_fork(after_in_child=lambda: _ids.seed(secrets.randbits(128)))

# Printable and short: a caller's id is copied into logs and headers, so it must not carry
# line breaks, quotes or a payload.
_SANE_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")

REQUESTS = Counter("licore_http_requests", "HTTP requests answered",
                   ["route", "method", "status"])
LATENCY = Histogram("licore_http_request_duration_seconds", "Time to answer a request",
                    ["route", "method"],
                    buckets=(.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30))
RATE_LIMITED = Counter("licore_rate_limit_refusals", "Requests refused with 429", ["route"])
# Every worker measures the same table, so across processes the largest recent value is it.
OUTBOX_BACKLOG = Gauge("licore_outbox_backlog", "Outbox messages due and not yet delivered",
                       multiprocess_mode="livemax")
RUNTIME_OUTCOMES = Counter("licore_runtime_outcomes", "Runtime API answers by outcome",
                           ["call", "outcome"])
# Why: "wrong" (a wrong name or password), or the limit that held the source back ("pace",
# "name-source", "source", "name": licore.services.signin).
SIGNIN_REFUSALS = Counter("licore_signin_refusals", "Sign-ins refused, by why", ["reason"])


# `labels()` validates, locks and looks the child up on every call, which cost as much as
# the rest of a runtime call's bookkeeping; a label set's child never changes, so it is
# looked up once. Bounded, because a client chooses the method.
@functools.lru_cache(maxsize=1024)
def _request_metrics(route: str, method: str, status: int) -> tuple[Any, Any]:
    return REQUESTS.labels(route, method, str(status)), LATENCY.labels(route, method)


def signin_refused(reason: str) -> None:
    SIGNIN_REFUSALS.labels(reason).inc()


@functools.lru_cache(maxsize=64)
def runtime_outcome(call: str, outcome: str) -> Any:
    """The `licore_runtime_outcomes` counter of one call and outcome."""
    return RUNTIME_OUTCOMES.labels(call, outcome)


def route_template(scope: Scope) -> str:
    """The matched route as written in the route table (`/v1/licenses/{license_id}`), never
    the concrete path: ids in label values would make one time series a request."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str) or isinstance(route, Mount):
        # A mount that matched nothing under it is no more a route than no match at all.
        return "unmatched"
    mounted = str(scope.get("root_path", "")).removeprefix(site.root(scope))
    return f"{mounted}{path}" or "/"


def request_id_of(scope: Scope) -> str:
    """The caller's `X-Request-ID` when it is sane, else a fresh one."""
    given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
    return given if _SANE_ID.fullmatch(given) else f"{_ids.getrandbits(64):016x}"


def record_request(scope: Scope, status: int, elapsed: float) -> None:
    """A request's metrics and its access log line, once it has been answered."""
    route = route_template(scope)
    count, latency = _request_metrics(route, scope["method"], status)
    count.inc()
    latency.observe(elapsed)
    if status == 429:
        RATE_LIMITED.labels(route).inc()
    state = scope.get("state", {})
    client = scope.get("client")
    fields = {
        "client": client[0] if client else None,
        "method": scope["method"], "path": scope["path"], "route": route,
        "status": status, "duration_ms": round(elapsed * 1000, 2),
        "key_id": state.get("key_id"),
    }
    handler = _ours_alone()
    if handler is None:
        access_log.info("request", extra=fields)
        return
    # The line `JsonLines` would write for this record, without making the record: a
    # LogRecord and the logging module's path to the handler were most of the access
    # line's cost, itself a tenth of a runtime call's.
    line: dict[str, Any] = {"timestamp": _timestamp(int(time.time())), "level": "INFO",
                            "logger": ACCESS_LOGGER, "message": "request",
                            "request_id": request_id.get()}
    line.update(fields)
    handler.put(json_text.dumps(line, default=str))


def _ours_alone() -> LoopBatchedStream | None:
    """The handler `configure_logging` installed, when an access line would reach it and
    nothing else: the root's only handler, the access logger enabled for INFO with no
    handler or filter of its own. Anything an operator or an embedding application changed
    since sends the line through `logging` as usual."""
    handler = _configured[0]
    root = logging.root
    if (handler is None or root.handlers != [handler] or access_log.handlers
            or access_log.filters or not access_log.propagate
            or not access_log.isEnabledFor(logging.INFO)
            or handler.level > logging.INFO or handler.filters != [_stamp]
            or root.filters):
        return None
    return handler


class RequestContext(HttpLayer):
    """Request id in and out, one access log line, request metrics."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        rid = request_id_of(scope)
        token = request_id.set(rid)
        start = time.perf_counter()
        status = 500

        async def stamped(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message,
                           "headers": [*message.get("headers", []),
                                       (b"x-request-id", rid.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, stamped)
        finally:
            record_request(scope, status, time.perf_counter() - start)
            request_id.reset(token)


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


# What every LogRecord carries; anything else on a record came in `extra` and is written.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message", "asctime", "request_id", "taskName"}


@functools.lru_cache(maxsize=4)
def _timestamp(second: int) -> str:
    # Every line of a busy second shares its stamp; formatting it is a local-time lookup.
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(second))


class LoopBatchedStream(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler that, on the event loop's thread, writes the lines of one loop
    iteration in one write when the iteration's ready callbacks have run, instead of one
    write and flush (a system call) per line. Off the loop (a thread, start-up, shutdown) it
    writes at once. A line waits at most until the loop next looks for I/O."""

    def __init__(self) -> None:
        super().__init__()
        self._lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self.put(text)

    def put(self, text: str) -> None:
        """Write one formatted line (batched on the loop's thread, as `emit`)."""
        text += self.terminator
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None:
            self._lines.append(text)
            self.flush()
            return
        if not self._lines:
            loop.call_soon(self.flush)
        self._lines.append(text)

    def flush(self) -> None:
        self.acquire()
        try:
            if self._lines:
                text, self._lines = "".join(self._lines), []
                self.stream.write(text)
            super().flush()
        except Exception:
            self.handleError(logging.makeLogRecord({"msg": "log write failed"}))
        finally:
            self.release()


_stamp = RequestIdFilter()
# The handler configure_logging installed last (see `_ours_alone`).
_configured: list[LoopBatchedStream | None] = [None]


class JsonLines(logging.Formatter):
    """One JSON object a line: timestamp, level, logger, message, request id, then the
    `extra` fields, then `exc_info` / `stack_info` when present. Written by hand (one dict,
    one `json.dumps`) because the access line is written for every request, and a general
    JSON formatter cost as much as a runtime call's own work."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "timestamp": _timestamp(int(record.created)),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS:
                line[key] = value
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack_info"] = self.formatStack(record.stack_info)
        return json_text.dumps(line, default=str)


def configure_logging(level: str = "INFO") -> None:
    """JSON lines on stderr for every logger: timestamp, level, logger, message, request id,
    and any `extra` fields the caller gave."""
    handler = LoopBatchedStream()
    handler.setFormatter(JsonLines())
    handler.addFilter(_stamp)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    _configured[0] = handler
    # The lines carry none of these, and collecting them (the caller's file and line above
    # all, found by walking the stack) cost a runtime call a sixth of its own time, once
    # per access line. The logging documentation's "Optimization" section names each.
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None


def metrics_registry() -> CollectorRegistry | None:
    """With several worker processes each counts in its own memory; prometheus-client's
    multiprocess mode (files in PROMETHEUS_MULTIPROC_DIR, set by `licore serve`) sums them so
    any worker answers for all."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return None
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return registry


async def metrics(request: Request) -> Response:
    registry: Any = metrics_registry()
    body = generate_latest(registry) if registry is not None else generate_latest()
    return Response(body, media_type=CONTENT_TYPE_LATEST)
