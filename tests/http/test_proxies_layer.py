"""The trusted-proxies layer (adapters_http.proxies) rewrites the scope once, outermost: the
client, the scheme and the host every later layer reads; from an untrusted peer, nothing."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.types import Receive, Scope, Send

from adapters_http.proxies import TrustedProxies
from licore.forwarded import parse_networks

TRUSTED = parse_networks("127.0.0.1/32")


class Seen:
    """An app that answers with what its scope says."""

    scope: dict[str, Any]
    marker = "inner"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scope = dict(scope)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def seen(peer: str, headers: dict[str, str], networks: Any = TRUSTED) -> dict[str, Any]:
    inner = Seen()
    transport = httpx.ASGITransport(app=TrustedProxies(inner, networks), client=(peer, 5000))
    async with httpx.AsyncClient(transport=transport, base_url="http://internal:8000") as c:
        assert (await c.get("/x", headers=headers)).status_code == 204
    return inner.scope


async def test_a_trusted_peer_hands_on_the_client_scheme_and_host() -> None:
    scope = await seen("127.0.0.1", {"X-Forwarded-For": "198.51.100.1",
                                     "X-Forwarded-Proto": "https",
                                     "X-Forwarded-Host": "licore.example"})
    assert scope["client"] == ("198.51.100.1", 0)
    assert scope["scheme"] == "https"
    assert scope["server"] == ("licore.example", 443)
    assert [v for k, v in scope["headers"] if k == b"host"] == [b"licore.example"]


async def test_a_forwarded_host_with_a_port_and_an_ipv6_host() -> None:
    scope = await seen("127.0.0.1", {"Forwarded": "for=198.51.100.1;host=licore.example:8443"})
    assert scope["server"] == ("licore.example", 8443) and scope["scheme"] == "http"
    scope = await seen("127.0.0.1", {"Forwarded": 'for=198.51.100.1;host="[2001:db8::5]"'})
    assert scope["server"] == ("2001:db8::5", 80)


async def test_an_untrusted_peer_or_no_networks_changes_nothing() -> None:
    spoof = {"X-Forwarded-For": "198.51.100.1", "X-Forwarded-Proto": "https",
             "X-Forwarded-Host": "evil.example"}
    for scope in (await seen("192.0.2.9", spoof), await seen("127.0.0.1", spoof, ())):
        assert scope["client"][0] in ("192.0.2.9", "127.0.0.1")
        assert scope["scheme"] == "http"
        assert [v for k, v in scope["headers"] if k == b"host"] == [b"internal:8000"]


def test_the_wrapped_app_stays_reachable() -> None:
    assert TrustedProxies(Seen(), TRUSTED).marker == "inner"
