"""The failed sign-in limits (docs/web.md, docs/operators.md): a failure slows and then
blocks its source (an IPv4 address, an IPv6 network), never the account's owner at an
address that never failed, and a guesser's checked passwords stay bounded however many
networks they come from."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping

import attrs
import pytest

from licore.model import Account
from licore.services import signin
from licore.services.signin import Sessions
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps
from tests.support.scenario import build_world

START = 1_800_000_000 - 1_800_000_000 % signin.FAILURE_WINDOW  # a window's first second


class CountingPasswords:
    """A sign-in method that knows one name and password, and counts the passwords it
    checks (optionally taking its time, as a real hash does)."""

    def __init__(self, account: Account, password: str, pause: float = 0) -> None:
        self.account, self.password, self.pause = account, password, pause
        self.checked = 0

    async def identify(self, fields: Mapping[str, str]) -> Account | None:
        self.checked += 1
        if self.pause:
            await asyncio.sleep(self.pause)
        if (fields.get("username"), fields.get("password")) == (self.account.username,
                                                                self.password):
            return self.account
        return None


class Attempts:
    def __init__(self, sessions: Sessions, method: CountingPasswords, clock: FakeClock) -> None:
        self.sessions, self.method, self.clock = sessions, method, clock
        self.right = {"username": method.account.username, "password": method.password}

    async def wrong(self, source: str, name: str | None = None) -> str:
        fields = {"username": name or self.right["username"], "password": "wrong"}
        try:
            await self.sessions.sign_in(self.method, fields, source)
        except signin.SignInLocked as locked:
            return f"locked: {locked.limit}"
        except signin.SignInRefused:
            return "refused"
        return "signed in"

    async def owner(self, source: str) -> Account:
        return (await self.sessions.sign_in(self.method, self.right, source)).account


async def attempts(storage: Storage, ipv6_prefix: int = 64,
                   pause: float = 0) -> tuple[Attempts, FakeClock]:
    clock = FakeClock(t=START)
    deps = make_deps(storage, clock)
    world = await build_world(deps)
    sessions = attrs.evolve(UseCases.of(deps).sessions, ipv6_prefix=ipv6_prefix)
    return Attempts(sessions, CountingPasswords(world.owner, "right", pause), clock), clock


async def test_a_failure_slows_its_source_then_five_block_it_for_the_name(
        storage: Storage) -> None:
    tries, clock = await attempts(storage)
    assert await tries.wrong("10.0.0.1") == "refused"
    # Slowed: the same source waits for the next ten-second window, even with the right
    # password, and that refusal is not counted (it checks nothing).
    with pytest.raises(signin.SignInLocked) as paced:
        await tries.owner("10.0.0.1")
    assert (paced.value.limit, paced.value.retry_after) == ("pace", signin.PACE_WINDOW)
    assert "try again in 10 seconds" in paced.value.description
    for _ in range(signin.FAILURES_PER_NAME_AND_SOURCE - 1):
        clock.advance(signin.PACE_WINDOW)
        assert await tries.wrong("10.0.0.1") == "refused"
    clock.advance(signin.PACE_WINDOW)
    with pytest.raises(signin.SignInLocked) as blocked:
        await tries.owner("10.0.0.1")
    assert blocked.value.limit == "name-source"
    assert blocked.value.retry_after == signin.FAILURE_WINDOW - 5 * signin.PACE_WINDOW
    assert "try again in 15 minutes" in blocked.value.description
    # Blocked retries are neither checked nor counted, and the name is case-blind.
    for _ in range(100):
        assert await tries.wrong("10.0.0.1", tries.right["username"].upper()) == (
            "locked: name-source")
    assert tries.method.checked == signin.FAILURES_PER_NAME_AND_SOURCE
    # The owner, from an address that never failed, gets in meanwhile; the source's own
    # block ends with its window.
    assert await tries.owner("10.0.0.2") == tries.method.account
    clock.advance(signin.FAILURE_WINDOW)
    assert await tries.owner("10.0.0.1") == tries.method.account


async def test_ipv6_addresses_of_one_network_are_one_source(storage: Storage) -> None:
    tries, clock = await attempts(storage)
    for i in range(signin.FAILURES_PER_NAME_AND_SOURCE):
        assert await tries.wrong(f"2001:db8:1:2::{i + 1:x}") == "refused"
        clock.advance(signin.PACE_WINDOW)
    # Any other address of that /64 is the same source; the next /64 is another.
    assert await tries.wrong("2001:db8:1:2:ffff::9") == "locked: name-source"
    assert await tries.owner("2001:db8:1:3::1") == tries.method.account
    # An IPv4-mapped address is the IPv4 address it carries.
    for _ in range(signin.FAILURES_PER_NAME_AND_SOURCE):
        assert await tries.wrong("::ffff:192.0.2.7") == "refused"
        clock.advance(signin.PACE_WINDOW)
    assert await tries.wrong("192.0.2.7") == "locked: name-source"


async def test_the_ipv6_prefix_setting_sets_the_network_counted(storage: Storage) -> None:
    tries, clock = await attempts(storage, ipv6_prefix=128)
    for _ in range(signin.FAILURES_PER_NAME_AND_SOURCE):
        assert await tries.wrong("2001:db8:1:2::1") == "refused"
        clock.advance(signin.PACE_WINDOW)
    assert await tries.wrong("2001:db8:1:2::1") == "locked: name-source"
    assert await tries.wrong("2001:db8:1:2::2") == "refused"


@pytest.mark.parametrize("addresses", [
    [f"2001:db8:5:6::{i + 1:x}" for i in range(11)],
    [f"198.51.100.{i + 1}" for i in range(11)],
], ids=["one /64", "IPv4"])
async def test_eleven_sources_with_five_wrong_passwords_each_never_lock_the_owner_out(
        storage: Storage, addresses: list[str]) -> None:
    """The audit's attack: 11 addresses x 5 wrong passwords left the name locked
    everywhere (429 for its owner with the right password)."""
    tries, clock = await attempts(storage)
    for _ in range(signin.FAILURES_PER_NAME_AND_SOURCE):
        for address in addresses:
            await tries.wrong(address)
        clock.advance(signin.PACE_WINDOW)
    assert await tries.owner("203.0.113.9") == tries.method.account
    assert await tries.owner("2001:db8:ffff::1") == tries.method.account


async def test_a_guesser_with_many_networks_is_bounded_per_name(storage: Storage) -> None:
    """Ten sources use up the name's 50 failures; past them, each further source gets one
    guess (it had never failed), then is blocked for the name; the owner still gets in."""
    tries, clock = await attempts(storage)
    sources = [f"10.{i}.0.1" for i in range(15)]
    for source in sources:
        for _ in range(signin.FAILURES_PER_NAME_AND_SOURCE):
            await tries.wrong(source)
            clock.advance(signin.PACE_WINDOW)
    assert clock.now() - START < signin.FAILURE_WINDOW  # all in one window
    ten = signin.FAILURES_PER_NAME // signin.FAILURES_PER_NAME_AND_SOURCE
    assert tries.method.checked == signin.FAILURES_PER_NAME + (len(sources) - ten)
    assert await tries.wrong(sources[-1]) == "locked: name"
    assert await tries.owner("198.51.100.7") == tries.method.account


async def test_simultaneous_wrong_passwords_from_one_source_check_one(
        storage: Storage) -> None:
    """Each attempt is counted before its password is checked, so 60 wrong passwords at
    once from one source check one (the pace), and every other one is told to wait (those
    counted beside it, by whichever limit they reached)."""
    tries, _ = await attempts(storage, pause=0.05)
    answers = await asyncio.gather(*(tries.wrong("10.1.0.1") for _ in range(60)))
    assert tries.method.checked == 1 and answers.count("refused") == 1
    assert all(a.startswith("locked") for a in answers if a != "refused")


async def test_failures_from_one_source_block_it_for_every_name(storage: Storage) -> None:
    tries, _ = await attempts(storage)
    for i in range(signin.FAILURES_PER_SOURCE):
        assert await tries.wrong("10.9.9.9", f"guess{i}") == "refused"
    assert await tries.wrong("10.9.9.9", "guess-more") == "locked: source"
    with pytest.raises(signin.SignInLocked):
        await tries.owner("10.9.9.9")
    assert await tries.owner("10.9.9.10") == tries.method.account


async def test_a_success_is_not_a_failure(storage: Storage) -> None:
    tries, clock = await attempts(storage)
    for _ in range(3 * signin.FAILURES_PER_NAME_AND_SOURCE):
        assert await tries.owner("10.2.0.1") == tries.method.account
    with contextlib.suppress(signin.SignInRefused):
        await tries.wrong("10.2.0.1")
    clock.advance(signin.PACE_WINDOW)
    assert await tries.owner("10.2.0.1") == tries.method.account
