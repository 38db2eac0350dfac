"""The game platform's public HTTP APIs, behind the core's `Platform` port.

Two calls, both documented by the platform (docs/platform.md cites them):
- ownership of a game pass: `GET {inventory}/v1/users/{userId}/items/GamePass/{passId}`, whose
  `data` list is non-empty exactly when the user owns the pass;
- a user: `GET {users}/v1/users/{userId}` -> `{id, name, displayName}`, 404 for no such user.

Every failure (refused connection, timeout, 5xx, 429, a body of the wrong shape) ends as
`Ownership.UNKNOWN` / `NoUser.UNKNOWN` after a bounded number of tries, logged with the
call's shape and never its headers: nothing is granted and nothing refused by accident.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import httpx

from licore.ports import NoUser, Ownership, PlatformUser

log = logging.getLogger("licore.platform")

INVENTORY_URL = "https://inventory.roblox.com"
USERS_URL = "https://users.roblox.com"
_RETRIED = frozenset({429, 500, 502, 503, 504})


@attrs.frozen
class Retry:
    attempts: int = 3  # tries in all, the first included
    backoff: float = 0.25  # seconds before the second try, doubled after each
    max_wait: float = 5.0  # the longest Retry-After honoured; a longer one ends the call
    # Seconds for the whole call, every try and wait included: a platform that hangs costs a
    # buyer this once, then "try later", instead of one timeout per try.
    timeout: float = 5.0


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP date."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


class _Unanswered(Exception):
    """The platform gave no usable answer; the message says why (never a secret)."""


class RobloxPlatform:
    def __init__(self, *, inventory_url: str = INVENTORY_URL, users_url: str = USERS_URL,
                 retry: Retry = Retry(), client: httpx.AsyncClient | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.inventory_url = inventory_url.rstrip("/")
        self.users_url = users_url.rstrip("/")
        self.retry = retry
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(retry.timeout), follow_redirects=False,
            headers={"Accept": "application/json", "User-Agent": "licore"})
        self._sleep = sleep

    async def aclose(self) -> None:
        await self._client.aclose()

    async def owns_pass(self, platform_id: str, pass_id: str) -> Ownership:
        if not platform_id.isdigit() or not pass_id.isdigit():
            return Ownership.NOT_OWNED  # no such user or pass can exist on the platform
        url = f"{self.inventory_url}/v1/users/{platform_id}/items/GamePass/{pass_id}"
        try:
            status, body = await self._get(url, "inventory items/GamePass")
        except _Unanswered:
            return Ownership.UNKNOWN
        if status in (400, 404):
            return Ownership.NOT_OWNED  # the platform knows no such user or pass
        data = body.get("data") if isinstance(body, dict) else None
        if status != 200 or not isinstance(data, list):
            log.warning("platform answer not understood", extra={
                "call": "inventory items/GamePass", "status": status})
            return Ownership.UNKNOWN
        return Ownership.OWNED if data else Ownership.NOT_OWNED

    async def who(self, platform_id: str) -> PlatformUser | NoUser:
        if not platform_id.isdigit():
            return NoUser.NO_SUCH_USER
        try:
            status, body = await self._get(f"{self.users_url}/v1/users/{platform_id}",
                                           "users/{userId}")
        except _Unanswered:
            return NoUser.UNKNOWN
        if status in (400, 404):
            return NoUser.NO_SUCH_USER
        if status == 200 and isinstance(body, dict) and isinstance(body.get("name"), str):
            name = body["name"]
            shown = body.get("displayName")
            return PlatformUser(str(body.get("id", platform_id)), name,
                                shown if isinstance(shown, str) else name)
        log.warning("platform answer not understood", extra={"call": "users/{userId}",
                                                             "status": status})
        return NoUser.UNKNOWN

    async def _get(self, url: str, call: str) -> tuple[int, Any]:
        """The status and JSON body of a GET, retrying 5xx, 429 and transport failures, all
        within one deadline (`Retry.timeout`)."""
        deadline = asyncio.get_running_loop().time() + self.retry.timeout
        try:
            async with asyncio.timeout_at(deadline):
                return await self._tries(url, call, deadline)
        except TimeoutError:
            reason = f"no answer within {self.retry.timeout:g} s"
            log.error("platform gave no answer", extra={"call": call, "reason": reason})
            raise _Unanswered(reason) from None

    async def _tries(self, url: str, call: str, deadline: float) -> tuple[int, Any]:
        wait = self.retry.backoff
        reason = "no attempt"
        for attempt in range(1, self.retry.attempts + 1):
            delay: float | None = wait
            try:
                response = await self._client.get(url)
            except httpx.HTTPError as error:
                # The class name only: some transport errors echo the URL, none a secret,
                # but a short reason is all an operator needs.
                reason = type(error).__name__
            else:
                if response.status_code not in _RETRIED:
                    try:
                        return response.status_code, response.json()
                    except ValueError:
                        return response.status_code, None
                reason = f"HTTP {response.status_code}"
                asked = retry_after(response.headers.get("retry-after"), time.time())
                if asked is not None:
                    delay = asked if asked <= self.retry.max_wait else None
            log.warning("platform call failed", extra={
                "call": call, "attempt": attempt, "reason": reason})
            if attempt == self.retry.attempts:
                break
            if delay is None:
                reason += " (Retry-After beyond the wait cap)"
                break
            if asyncio.get_running_loop().time() + delay >= deadline:
                reason += " (no time left for another try)"
                break
            await self._sleep(delay)
            wait *= 2
        log.error("platform gave no answer", extra={"call": call, "reason": reason})
        raise _Unanswered(reason)
