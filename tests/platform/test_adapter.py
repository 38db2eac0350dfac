"""The platform adapter against a stand-in of the platform's APIs on loopback: real HTTP,
real retries; only the waiting is recorded instead of slept, so no test waits or times."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from adapters_platform import Retry, RobloxPlatform, retry_after
from licore.ports import NoUser, Ownership, PlatformUser
from tests.support.platform_standin import Platform, free_port_url, running_platform


@pytest.fixture
def platform() -> Iterator[Platform]:
    with running_platform() as p:
        yield p


class Waits:
    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


def client(platform_url: str, waits: Waits, **retry: float) -> RobloxPlatform:
    return RobloxPlatform(inventory_url=platform_url, users_url=platform_url,
                          retry=Retry(**retry), sleep=waits)  # type: ignore[arg-type]


async def test_owned_and_not_owned(platform: Platform) -> None:
    platform.own("100", "555")
    adapter = client(platform.url, Waits())
    try:
        assert await adapter.owns_pass("100", "555") is Ownership.OWNED
        assert await adapter.owns_pass("100", "556") is Ownership.NOT_OWNED
        assert await adapter.owns_pass("101", "555") is Ownership.NOT_OWNED
    finally:
        await adapter.aclose()
    assert "GET /v1/users/100/items/GamePass/555" in platform.calls


async def test_platform_down_is_unknown_never_owned_or_not(platform: Platform,
                                                          caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    platform.own("100", "555")
    platform.fail(503, -1)
    waits = Waits()
    adapter = client(platform.url, waits, attempts=3, backoff=0.5)
    with caplog.at_level(logging.WARNING, logger="licore.platform"):
        assert await adapter.owns_pass("100", "555") is Ownership.UNKNOWN
    await adapter.aclose()
    assert platform.inventory_calls() == 3  # retried, then gave up
    assert waits.asked == [0.5, 1.0]  # backing off between tries
    assert any(r.getMessage() == "platform gave no answer" for r in caplog.records)


async def test_429_waits_what_retry_after_says_then_answers(platform: Platform) -> None:
    platform.own("100", "555")
    platform.fail(429, 2, retry_after="2")
    waits = Waits()
    adapter = client(platform.url, waits, attempts=3, backoff=0.1)
    assert await adapter.owns_pass("100", "555") is Ownership.OWNED
    await adapter.aclose()
    assert waits.asked == [2.0, 2.0]
    assert platform.inventory_calls() == 3


async def test_retry_after_beyond_the_cap_gives_up_at_once(platform: Platform) -> None:
    platform.own("100", "555")
    platform.fail(429, 1, retry_after="3600")
    waits = Waits()
    adapter = client(platform.url, waits, attempts=3, max_wait=5)
    assert await adapter.owns_pass("100", "555") is Ownership.UNKNOWN
    await adapter.aclose()
    assert waits.asked == []
    assert platform.inventory_calls() == 1


async def test_nobody_listening_is_unknown() -> None:
    waits = Waits()
    adapter = client(free_port_url(), waits, attempts=2)
    assert await adapter.owns_pass("100", "555") is Ownership.UNKNOWN
    assert await adapter.who("100") is NoUser.UNKNOWN
    await adapter.aclose()


async def test_ids_that_cannot_exist_are_not_asked(platform: Platform) -> None:
    adapter = client(platform.url, Waits())
    assert await adapter.owns_pass("../admin", "555") is Ownership.NOT_OWNED
    assert await adapter.who("1/../2") is NoUser.NO_SUCH_USER
    await adapter.aclose()
    assert platform.calls == []


async def test_who(platform: Platform) -> None:
    platform.users["100"] = "builderman"
    adapter = client(platform.url, Waits())
    assert await adapter.who("100") == PlatformUser("100", "builderman", "Builderman")
    assert await adapter.who("101") is NoUser.NO_SUCH_USER
    await adapter.aclose()


def test_retry_after_forms() -> None:
    assert retry_after("7", 0) == 7.0
    assert retry_after("Thu, 01 Jan 1970 00:01:40 GMT", 40.0) == 60.0
    assert retry_after("soon", 0) is None
    assert retry_after(None, 0) is None


async def test_a_hanging_platform_costs_one_deadline_not_one_per_try(
        platform: Platform) -> None:
    """One deadline (`Retry.timeout`) for the whole call, its tries included: a platform
    that never answers is asked once, then the answer is "unknown" (the buyer's "try
    later"), where three tries each waited out their own timeout (issue 30)."""
    platform.own("100", "555")
    platform.hanging = True
    waits = Waits()
    adapter = client(platform.url, waits, attempts=3, timeout=0.5)
    try:
        assert await adapter.owns_pass("100", "555") is Ownership.UNKNOWN
        assert await adapter.who("100") is NoUser.UNKNOWN
    finally:
        await adapter.aclose()
    assert platform.inventory_calls() == 1
    assert sum(1 for c in platform.calls if c == "GET /v1/users/100") == 1
    assert waits.asked == []  # no try was left time for, so none was waited for
