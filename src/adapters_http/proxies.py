"""The real client behind trusted reverse proxies, set once at the edge.

The outermost layer of the application: when the TCP peer is in one of the operator's
trusted networks (`LICORE_TRUSTED_PROXIES`), the request's scope is rewritten to name the
client the proxies report (`licore.forwarded`), and the scheme and host it asked for, before
anything else reads it. Every per-address limit, the sign-in lockout, the access log line
and every URL built from the request then see the real client, with nothing downstream
knowing proxies exist. With no trusted network, or from any other peer, the headers are
ignored and the scope is passed on as it came.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from licore.forwarded import Network, real_client

_DEFAULT_PORT = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class TrustedProxies:
    def __init__(self, app: ASGIApp, networks: Sequence[Network]) -> None:
        self.app = app
        self.networks = tuple(networks)

    def __getattr__(self, name: str) -> object:
        # The application it wraps stays reachable as before (its state, its routes).
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.networks and scope["type"] in ("http", "websocket"):
            scope = rewritten(scope, self.networks)
        await self.app(scope, receive, send)


def rewritten(scope: Scope, networks: Sequence[Network]) -> Scope:
    """The scope with the real client, scheme and host, or the scope itself."""
    peer = scope.get("client")
    if not peer:
        return scope
    try:
        found = real_client(str(peer[0]), scope.get("headers", ()), networks)
    except Exception:  # headers no proxy would write never turn into a 500: the peer stands
        return scope
    if found is None:
        return scope
    scope = dict(scope)
    scope["client"] = (found.address, 0)
    if found.proto is not None:
        secure = found.proto == "https"
        scope["scheme"] = ("wss" if secure else "ws") if scope["type"] == "websocket" \
            else found.proto
    if found.host is not None:
        _set_host(scope, found.host)
    return scope


def _set_host(scope: Scope, forwarded_host: str) -> None:
    """The forwarded host as the scope's server and its Host header."""
    host, _, port = forwarded_host.rpartition(":") if not forwarded_host.endswith("]") \
        else (forwarded_host, "", "")
    if not host or not port.isdigit():
        host, port = forwarded_host, ""
    scope["server"] = (host.strip("[]"), int(port) if port else
                       _DEFAULT_PORT.get(scope.get("scheme", "http"), 80))
    scope["headers"] = [(k, v) for k, v in scope.get("headers", ()) if k.lower() != b"host"]
    scope["headers"].append((b"host", forwarded_host.encode("latin-1")))
