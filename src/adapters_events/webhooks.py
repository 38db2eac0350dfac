"""Webhooks signed per the Standard Webhooks specification (the `standardwebhooks`
package): headers `webhook-id` (the message id, the same on every retry), `webhook-timestamp`
(this attempt's time) and `webhook-signature` (`v1,<base64>` for each secret in use, space
separated, so a rotation overlaps without a gap).

Server-side request forgery: the host is resolved when the endpoint is saved and again at
every send, and none of the addresses it resolves to may be special-purpose
(`licore.addresses`: the IANA registries, IPv4 carried inside IPv6 included) unless the
operator allows private ones, and the request then goes to
the checked address itself (the `Host` header and TLS server name keep the original
name), so a second lookup answering differently (DNS rebinding) cannot redirect it.
Redirects are not followed.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

import httpx
from standardwebhooks.webhooks import Webhook

from licore.addresses import refusal
from licore.events import Delivered

TIMEOUT = 15.0
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every send. httpx makes a new one for each client it
    is not given one, loading the trusted certificates anew: about 65 ms of the event loop
    per send, which the concurrent sends all waited on."""
    return httpx.create_ssl_context()


class SignedSender:
    """`timeout` bounds a whole send, the address look-up included: the outbox's lease must
    outlast it (the settings refuse a lease that does not)."""

    def __init__(self, allow_private: bool = False, timeout: float = TIMEOUT) -> None:
        self.allow_private = allow_private
        self.timeout = timeout
        self._tls = tls_context()  # made now, at start, not on the first send

    async def _resolve(self, url: str) -> tuple[list[Address], str | None]:
        try:
            parts = urlsplit(url)
            hostname = parts.hostname
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            # An unbalanced "[" or a port out of range: urlsplit refuses what it cannot read.
            return [], "the webhook URL is not a valid address (its host or port)"
        if parts.scheme not in ("http", "https") or not hostname:
            return [], "the webhook URL must be an http:// or https:// address"
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                hostname, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError):
            return [], f"the host {hostname!r} does not resolve"
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
        if not addresses:
            return [], f"the host {hostname!r} does not resolve"
        if not self.allow_private:
            for address in addresses:
                why = refusal(address)
                if why is not None:
                    return [], (f"the host {hostname!r} resolves to {address}, which is "
                                f"{why}; the operator has not allowed special-purpose "
                                "addresses (LICORE_WEBHOOK_ALLOW_PRIVATE)")
        return addresses, None

    async def refusal(self, url: str) -> str | None:
        return (await self._resolve(url))[1]

    async def send(self, url: str, message_id: str, timestamp: int, body: str,
                   secrets: Sequence[str]) -> Delivered:
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.timeout):
                return await self._send(url, message_id, timestamp, body, secrets)
        except TimeoutError:
            return Delivered(False, error=f"no answer within {self.timeout:g} seconds",
                             duration_ms=int((time.monotonic() - started) * 1000))

    async def _send(self, url: str, message_id: str, timestamp: int, body: str,
                    secrets: Sequence[str]) -> Delivered:
        addresses, refused = await self._resolve(url)
        if refused is not None:
            return Delivered(False, error=refused)
        at = datetime.fromtimestamp(timestamp, UTC)
        signature = " ".join(Webhook(s).sign(message_id, at, body) for s in secrets)
        parts = urlsplit(url)
        host = parts.hostname
        assert host is not None
        pinned = str(addresses[0])
        netloc = f"[{pinned}]" if ":" in pinned else pinned
        if parts.port is not None:
            netloc += f":{parts.port}"
        target = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
        headers = {"content-type": "application/json", "user-agent": "licore-webhooks/1",
                   "host": parts.netloc.rsplit("@", 1)[-1], "webhook-id": message_id,
                   "webhook-timestamp": str(timestamp), "webhook-signature": signature}
        extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
        started = time.monotonic()
        try:
            # `send` bounds the whole attempt, look-up included; httpx's own limits apply to
            # each phase and only back that up, so they are never the ones that end it.
            async with httpx.AsyncClient(timeout=self.timeout + 1, verify=self._tls,
                                         follow_redirects=False) as http:
                response = await http.post(target, content=body.encode(), headers=headers,
                                           extensions=extensions)
        except httpx.HTTPError as exc:
            return Delivered(False, error=f"could not reach the endpoint "
                             f"({type(exc).__name__})",
                             duration_ms=int((time.monotonic() - started) * 1000))
        took = int((time.monotonic() - started) * 1000)
        status = response.status_code
        if 200 <= status < 300:
            return Delivered(True, status=status, duration_ms=took)
        retry = None
        if status == 429:
            try:
                retry = float(response.headers.get("retry-after", ""))
            except ValueError:
                retry = None
        return Delivered(False, status=status, error=f"the endpoint answered {status}",
                         duration_ms=took, retry_after=retry)
