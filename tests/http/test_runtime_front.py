"""`RuntimeFront` answers a POST to a runtime call in front of the middleware stack and does
the stack's work for it; everything else goes through the stack and the route table."""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

import pytest

from adapters_http import site
from adapters_http.app import LicoreApp
from adapters_http.runtime import RuntimeApp, RuntimeFront
from adapters_storage import MemoryStorage
from licore_cli.compose import app_of
from tests.support.fakes import make_deps

CALLS = ["/check", "/unlock", "/version", "/update", "/verify-source"]
JSON = [(b"content-type", b"application/json")]


def scope(method: str, path: str, root_path: str = "", query: bytes = b"",
          headers: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "root_path": root_path,
            "query_string": query, "headers": headers or [], "client": ("127.0.0.1", 1)}


@pytest.mark.parametrize("call", CALLS)
def test_the_front_takes_a_post_to_each_runtime_call(call: str) -> None:
    front = RuntimeFront(RuntimeApp(runtime=None))  # type: ignore[arg-type]  # not called
    taken = front.takes(scope("POST", "/runtime" + call))
    assert taken is not None and taken.path == call


@pytest.mark.parametrize(("method", "path", "root_path", "query"), [
    ("GET", "/runtime/unlock", "", b""),          # 405 from the route table
    ("POST", "/runtime/unlock/", "", b""),        # its redirect
    ("POST", "/runtime/nope", "", b""),           # its 404
    ("POST", "/v1/products", "", b""),
    ("POST", "/apix/runtime/unlock", "/api", b""),  # not under the root path: a 404
    ("POST", "/api/runtime/nope", "/api", b""),
    ("POST", "/runtime/unlock", "", b"a=%00"),    # the edge's zero-byte refusal
    ("POST", "/runtime/unlock", "", b"a=\x00"),
])
def test_anything_else_is_left_to_the_stack(method: str, path: str, root_path: str,
                                            query: bytes) -> None:
    front = RuntimeFront(RuntimeApp(runtime=None))  # type: ignore[arg-type]
    request = scope(method, path, root_path, query)
    site.enter(request)
    assert front.takes(request) is None


@pytest.mark.parametrize("path", ["/api/runtime/check", "/runtime/check"])
def test_the_front_takes_a_call_under_the_sites_prefix(path: str) -> None:
    # The proxy passes the prefix on, or strips it: `site.enter` makes the path whole.
    front = RuntimeFront(RuntimeApp(runtime=None))  # type: ignore[arg-type]
    request = scope("POST", path, "/api")
    site.enter(request)
    taken = front.takes(request)
    assert taken is not None and taken.path == "/check"


@pytest.mark.parametrize("path", ["/api/runtime/check", "/runtime/check", "/api/runtime/nope"])
async def test_under_a_prefix_the_front_answers_as_the_stack_would(
        path: str, access: Lines) -> None:
    # The same request to an app with the front and to one without (its stack answers):
    # the same answer, the same access line (route, status, path).
    answers, lines = [], []
    for with_front in (True, False):
        access.records.clear()
        app = app_of(make_deps(MemoryStorage()))
        if not with_front:
            app.front = None
        sent, _ = await serve(app, scope("POST", path, "/api", headers=JSON), [b"{}"])
        answers.append((sent[0]["status"], sent[1]["body"]))
        lines.append([(r.route, r.status, r.path)  # type: ignore[attr-defined]
                      for r in access.records])
        assert (app.middleware_stack is None) == (with_front and "nope" not in path)
    assert answers[0] == answers[1] and lines[0] == lines[1]
    assert lines[0][0][2] == "/api" + path.removeprefix("/api")


async def serve(app: LicoreApp, request: dict[str, Any], pieces: list[bytes]
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run one request; the messages sent, and those the app did not read."""
    left = [{"type": "http.request", "body": b, "more_body": i < len(pieces) - 1}
            for i, b in enumerate(pieces)] + [{"type": "http.disconnect"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return left.pop(0)

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    await app(request, receive, send)
    return sent, left


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def access() -> Any:
    handler = Lines()
    log = logging.getLogger("licore.access")
    level = log.level
    log.setLevel(logging.INFO)
    log.addHandler(handler)
    yield handler
    log.removeHandler(handler)
    log.setLevel(level)


async def test_a_runtime_call_never_enters_the_middleware_stack(access: Lines) -> None:
    app = app_of(make_deps(MemoryStorage()))
    sent, _ = await serve(app, scope("POST", "/runtime/unlock", headers=JSON), [b"{nope"])
    assert sent[0]["status"] == 400 and sent[1]["body"] == b'{"ok":false}'
    assert app.middleware_stack is None  # Starlette builds it on the first call it sees
    await serve(app, scope("GET", "/healthz"), [b""])
    assert app.middleware_stack is not None


async def test_the_front_stamps_the_request_id_and_writes_the_access_line(
        access: Lines) -> None:
    app = app_of(make_deps(MemoryStorage()))
    given = [*JSON, (b"x-request-id", b"trace-7")]
    sent, _ = await serve(app, scope("POST", "/runtime/check", headers=given), [b"{}"])
    assert (b"x-request-id", b"trace-7") in sent[0]["headers"]
    made, _ = await serve(app, scope("POST", "/runtime/check", headers=JSON), [b"{}"])
    rid = dict(made[0]["headers"])[b"x-request-id"].decode()
    assert len(rid) == 16 and int(rid, 16) >= 0
    lines = [(r.route, r.status, r.path) for r in access.records]  # type: ignore[attr-defined]
    assert lines == [("/runtime/check", 200, "/runtime/check")] * 2


async def test_a_body_left_unread_closes_the_connection_and_is_drained(
        access: Lines) -> None:
    app = app_of(make_deps(MemoryStorage()))
    declared = [*JSON, (b"content-length", b"999999")]
    sent, left = await serve(app, scope("POST", "/runtime/unlock", headers=declared),
                             [b"x" * 1000] * 5)
    assert sent[0]["status"] == 400
    assert (b"connection", b"close") in sent[0]["headers"]
    assert left == []  # every piece the client sent was read and dropped
    read, left = await serve(app, scope("POST", "/runtime/unlock", headers=JSON), [b"{}"])
    assert (b"connection", b"close") not in read[0]["headers"]
    assert left == [{"type": "http.disconnect"}]


async def test_the_metrics_label_is_the_call_or_unmatched_never_the_mount_twice(
        access: Lines) -> None:
    # Requests the front leaves to the route table: a wrong method on a call is labelled
    # with the call; a path the /runtime mount has nothing for is unmatched, as a path no
    # route has (it was labelled "/runtime/runtime").
    app = app_of(make_deps(MemoryStorage()))
    await serve(app, scope("GET", "/runtime/unlock"), [b""])
    await serve(app, scope("POST", "/runtime/nope", headers=JSON), [b"{}"])
    await serve(app, scope("POST", "/nowhere", headers=JSON), [b"{}"])
    lines = [(r.route, r.status) for r in access.records]  # type: ignore[attr-defined]
    assert lines == [("/runtime/unlock", 405), ("unmatched", 404), ("unmatched", 404)]
