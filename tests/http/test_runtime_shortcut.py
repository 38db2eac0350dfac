"""`RuntimeShortcut` sends a POST to a runtime call straight to the runtime app, with the
scope the `/runtime` mount gives it; everything else goes on through the route table."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.types import Receive, Scope, Send

from adapters_http.runtime import RuntimeApp, RuntimeShortcut


class Recorder:
    def __init__(self) -> None:
        self.scopes: list[Scope] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scopes.append(dict(scope))


def shortcut() -> tuple[RuntimeShortcut, Recorder, Recorder]:
    target = RuntimeApp(runtime=None)  # type: ignore[arg-type]  # never called here
    table, runtime = Recorder(), Recorder()
    cut = RuntimeShortcut(table, target)
    cut.target = runtime  # type: ignore[assignment]  # record what reaches the runtime app
    return cut, table, runtime


async def call(app: Any, method: str, path: str, root_path: str = "") -> None:
    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        pass

    await app({"type": "http", "method": method, "path": path, "root_path": root_path,
               "headers": []}, receive, send)


@pytest.mark.parametrize("call_path", ["/check", "/unlock", "/version", "/update",
                                       "/verify-source"])
async def test_a_post_to_each_runtime_call_goes_straight_to_the_runtime_app(
        call_path: str) -> None:
    cut, table, runtime = shortcut()
    await call(cut, "POST", "/runtime" + call_path)
    assert table.scopes == []
    (scope,) = runtime.scopes
    assert scope["root_path"] == "/runtime"  # as the mount sets it
    assert scope["path"] == "/runtime" + call_path


@pytest.mark.parametrize(("method", "path", "root_path"), [
    ("GET", "/runtime/unlock", ""),        # 405 from the route table
    ("POST", "/runtime/unlock/", ""),      # its redirect
    ("POST", "/runtime/nope", ""),         # its 404
    ("POST", "/v1/products", ""),
    ("POST", "/api/runtime/unlock", "/api"),  # served under a root path
])
async def test_anything_else_goes_through_the_route_table(method: str, path: str,
                                                           root_path: str) -> None:
    cut, table, runtime = shortcut()
    await call(cut, method, path, root_path)
    assert runtime.scopes == []
    assert len(table.scopes) == 1
