"""The community-chat service's REST API (Discord-shaped; docs/events.md), as a bot.

Roles: `PUT`/`DELETE /guilds/{guild}/members/{user}/roles/{role}` with `Authorization: Bot
<token>`; 204 is done, and so are "already has it" (the PUT is idempotent) and 404 with
error code 10007 "Unknown Member" (the member left: nothing to give or take). A 429 is
answered with `retry_after` (seconds, in the JSON body; `Retry-After` as a fallback) and
the message waits at least that long. When a response says a bucket is spent
(`X-RateLimit-Remaining: 0`) the client waits `X-RateLimit-Reset-After` before the next
call instead of earning a 429.

Linking: OAuth 2.0 authorization code with scope `identify`; the code is exchanged at
`/oauth2/token` and the account read from `GET /users/@me`.

The bot token and the client secret never reach a log line, an error text or a repr.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlencode

import attrs
import httpx

from adapters_events.webhooks import tls_context
from licore.events import Delivered

UNKNOWN_MEMBER = 10007
WAIT_INLINE = 5.0  # a spent bucket resetting sooner than this is waited out in place


@attrs.frozen
class ChatConfig:
    api_url: str = "https://discord.com/api/v10"
    authorize_url: str = "https://discord.com/oauth2/authorize"
    bot_token: str = attrs.field(default="", repr=False)
    client_id: str = ""
    client_secret: str = attrs.field(default="", repr=False)
    timeout: float = 10.0


def _seconds(text: str | None) -> float | None:
    try:
        return None if text is None else max(0.0, float(text))
    except ValueError:
        return None


class ChatClient:
    def __init__(self, config: ChatConfig) -> None:
        self.config = config
        self._not_before = 0.0  # monotonic time the spent bucket resets
        self._tls = tls_context()

    def __repr__(self) -> str:
        return f"ChatClient({self.config.api_url!r})"

    async def _pace(self) -> float | None:
        """Wait out a spent bucket if it resets soon; else how long the caller must wait."""
        wait = self._not_before - time.monotonic()
        if wait <= 0:
            return None
        if wait <= WAIT_INLINE:
            await asyncio.sleep(wait)
            return None
        return wait

    def _learn(self, response: httpx.Response) -> None:
        if response.headers.get("x-ratelimit-remaining") == "0":
            after = _seconds(response.headers.get("x-ratelimit-reset-after"))
            if after is not None:
                self._not_before = max(self._not_before, time.monotonic() + after)

    async def set_role(self, guild_id: str, user_id: str, role_id: str,
                       present: bool) -> Delivered:
        if not self.config.bot_token:
            return Delivered(False, error="no chat bot token is configured")
        wait = await self._pace()
        if wait is not None:
            return Delivered(False, error="the chat service's rate limit is spent",
                             retry_after=wait)
        url = f"{self.config.api_url}/guilds/{guild_id}/members/{user_id}/roles/{role_id}"
        started = time.monotonic()
        try:
            # httpx's limit is per phase (connect, each read); the whole call gets the same
            # bound, so a service trickling its answer holds a delivery slot no longer.
            async with asyncio.timeout(self.config.timeout), httpx.AsyncClient(
                    timeout=self.config.timeout, verify=self._tls) as http:
                response = await http.request(
                    "PUT" if present else "DELETE", url,
                    headers={"Authorization": f"Bot {self.config.bot_token}",
                             "X-Audit-Log-Reason": "licore: license "
                             + ("granted" if present else "ended")})
        except httpx.HTTPError as exc:
            return Delivered(False, error=f"could not reach the chat service "
                             f"({type(exc).__name__})")
        except TimeoutError:
            return Delivered(False, error=f"the chat service did not answer within "
                             f"{self.config.timeout:g} seconds",
                             duration_ms=int((time.monotonic() - started) * 1000))
        took = int((time.monotonic() - started) * 1000)
        self._learn(response)
        status = response.status_code
        if status in (200, 204):
            return Delivered(True, status=status, duration_ms=took)
        code = None
        body: object = None
        try:
            body = response.json()
            code = body.get("code") if isinstance(body, dict) else None
        except ValueError:
            pass
        if status == 404 and code == UNKNOWN_MEMBER:
            return Delivered(True, status=status, error="the member left the server",
                             duration_ms=took)
        if status == 429:
            after = (body.get("retry_after") if isinstance(body, dict) else None)
            retry = _seconds(str(after)) if after is not None else None
            if retry is None:
                retry = _seconds(response.headers.get("retry-after")) or 1.0
            return Delivered(False, status=429, error="rate limited by the chat service",
                             retry_after=retry, duration_ms=took)
        permanent = status in (400, 404)  # unknown guild or role: retrying will not help
        return Delivered(False, status=status, error=f"the chat service answered {status}"
                         + (f" (code {code})" if code is not None else ""),
                         duration_ms=took, permanent=permanent)

    def authorize_url(self, state: str, redirect_uri: str) -> str:
        query = urlencode({"response_type": "code", "client_id": self.config.client_id,
                           "scope": "identify", "state": state,
                           "redirect_uri": redirect_uri, "prompt": "consent"})
        return f"{self.config.authorize_url}?{query}"

    async def identify(self, code: str, redirect_uri: str) -> str | None:
        try:
            async with httpx.AsyncClient(timeout=self.config.timeout, verify=self._tls) as http:
                token = await http.post(
                    f"{self.config.api_url}/oauth2/token",
                    data={"grant_type": "authorization_code", "code": code,
                          "redirect_uri": redirect_uri},
                    auth=(self.config.client_id, self.config.client_secret))
                if token.status_code != 200:
                    return None
                access = token.json().get("access_token")
                if not isinstance(access, str):
                    return None
                me = await http.get(f"{self.config.api_url}/users/@me",
                                    headers={"Authorization": f"Bearer {access}"})
                if me.status_code != 200:
                    return None
                user = me.json().get("id")
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        return user if isinstance(user, str) and user.isdigit() else None
