"""Where the application is served: the path prefix it is mounted under, from the ASGI scope.

One mechanism for every address the service writes: an ASGI server's `root_path` (Hypercorn's
`--root-path`, `LICORE_ROOT_PATH` for `licore serve`) or a mount in an embedder's application
(Starlette's `Mount("/licensing", app)`) both arrive as the scope's `root_path`. The
application notes it once, on entry (`enter`), before its own routes and mounts lengthen it;
links, asset addresses, redirects, the session cookie's path, the OAuth metadata and the
device flow's `verification_uri` are all built from that one value (`url`, `absolute`).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

_KEY = "licore.root_path"


def enter(scope: Scope) -> None:
    """Note the prefix the application is served under, once, at its entry.

    The ASGI specification has `path` include `root_path`; a server given a root path behind
    a proxy that strips the prefix sends it without, and that path is made whole here so
    every route below matches either way."""
    if _KEY in scope:
        return
    root = str(scope.get("root_path", "")).rstrip("/")
    path = str(scope.get("path", ""))
    if root and path != root and not path.startswith(root + "/"):
        scope["path"] = root + path
        if "raw_path" in scope:
            scope["raw_path"] = root.encode() + bytes(scope["raw_path"] or path.encode())
    scope[_KEY] = root


def root(scope: Scope) -> str:
    """The prefix, without a trailing slash: `""` at the top of a host, else like `/licensing`."""
    return str(scope.get(_KEY, ""))


def local_path(scope: Scope) -> str:
    """The request's path as the application's own routes name it, without the prefix."""
    prefix, path = root(scope), str(scope["path"])
    if prefix and path.startswith(prefix + "/"):
        return path[len(prefix):]
    return "/" if prefix and path == prefix else path


def url(scope: Scope, path: str) -> str:
    """A path of this site (starting with `/`) as the browser must ask for it."""
    return root(scope) + path


def absolute(scope: Scope, public_url: str, path: str) -> str:
    """A full address of this site: the public origin, the prefix, then the path."""
    return public_url.rstrip("/") + url(scope, path)


class ServedUnder:
    """The operator's root path (`LICORE_ROOT_PATH`) as the scope's `root_path`, for a server
    that was not given one itself: behind a proxy that forwards `/licensing/...` to this
    process, every address the service writes then starts with `/licensing`."""

    def __init__(self, app: ASGIApp, root_path: str) -> None:
        self.app = app
        self.root_path = root_path.rstrip("/")

    def __getattr__(self, name: str) -> object:
        return getattr(self.app, name)  # the application it wraps stays reachable

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (self.root_path and scope["type"] in ("http", "websocket")
                and not scope.get("root_path")):
            scope = {**scope, "root_path": self.root_path}
        await self.app(scope, receive, send)
