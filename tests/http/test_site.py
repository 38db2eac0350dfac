"""adapters_http/site.py: the prefix a request is served under, noted once as it enters."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.types import Message

from adapters_http import site


def entered(path: str, root_path: str = "", **more: Any) -> dict[str, Any]:
    scope: dict[str, Any] = {"type": "http", "path": path, "root_path": root_path, **more}
    site.enter(scope)
    return scope


@pytest.mark.parametrize(("path", "root_path", "root", "local", "whole"), [
    ("/dashboard", "", "", "/dashboard", "/dashboard"),
    ("/licensing/dashboard", "/licensing", "/licensing", "/dashboard", "/licensing/dashboard"),
    ("/licensing/", "/licensing/", "/licensing", "/", "/licensing/"),
    ("/licensing", "/licensing", "/licensing", "/", "/licensing"),
    # a proxy that stripped the prefix: the path is made whole, as the specification has it
    ("/dashboard", "/licensing", "/licensing", "/dashboard", "/licensing/dashboard"),
    # a path that only starts with the prefix's letters is not under it
    ("/licensingx/a", "/licensing", "/licensing", "/licensingx/a", "/licensing/licensingx/a"),
])
def test_the_prefix_and_the_local_path(path: str, root_path: str, root: str, local: str,
                                       whole: str) -> None:
    scope = entered(path, root_path)
    assert site.root(scope) == root
    assert site.local_path(scope) == local
    assert scope["path"] == whole
    assert site.url(scope, "/signin") == f"{root}/signin"
    assert site.absolute(scope, "https://shop.example/", "/device") == \
        f"https://shop.example{root}/device"


def test_the_prefix_is_noted_once_not_lengthened_by_licores_own_mounts() -> None:
    scope = entered("/licensing/auth/device/code", "/licensing")
    scope["root_path"] = "/licensing/auth"  # as the /auth mount sets it below
    site.enter(scope)
    assert site.root(scope) == "/licensing"


async def test_served_under_sets_a_root_path_only_where_the_server_gave_none() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope.get("root_path", ""))

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        pass

    wrapped = site.ServedUnder(app, "/licensing/")
    await wrapped({"type": "http", "path": "/x", "root_path": ""}, receive, send)
    await wrapped({"type": "http", "path": "/x", "root_path": "/given"}, receive, send)
    await wrapped({"type": "lifespan"}, receive, send)
    assert seen == ["/licensing", "/given", ""]
