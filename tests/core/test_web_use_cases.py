"""The use cases behind the web pages: the failed sign-in limit, a session's server-side
counters, and what a studio seat may do."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from licore import scopes as sc
from licore.errors import NotFound
from licore.model import Account
from licore.ports import Storage
from licore.scopes import Permission
from licore.services import dashboard, device, housekeeping, operator, signin
from licore.services.deps import Deps
from tests.support.fakes import FakeClock, make_deps
from tests.support.scenario import ALL_STUDIO, build_world, obtain_key


class Passwords:
    """A sign-in method that knows one name and password."""

    def __init__(self, account: Account, password: str) -> None:
        self.account, self.password = account, password

    async def identify(self, fields: Mapping[str, str]) -> Account | None:
        if (fields.get("username"), fields.get("password")) == (self.account.username,
                                                                self.password):
            return self.account
        return None


async def test_five_failures_lock_a_name_until_the_window_ends(storage: Storage) -> None:
    clock = FakeClock(t=1_800_000_000 - 1_800_000_000 % signin.FAILURE_WINDOW)
    deps = make_deps(storage, clock)
    world = await build_world(deps)
    method = Passwords(world.owner, "right")
    right = {"username": world.owner.username, "password": "right"}
    wrong = {**right, "password": "wrong"}
    for _ in range(signin.FAILURES_PER_NAME):
        with pytest.raises(signin.SignInRefused):
            await signin.sign_in(deps, method, wrong, "10.0.0.1")
    with pytest.raises(signin.SignInLocked) as locked:
        await signin.sign_in(deps, method, right, "10.0.0.2")
    assert locked.value.retry_after == signin.FAILURE_WINDOW
    # The name's count is case-blind, like usernames themselves.
    with pytest.raises(signin.SignInLocked):
        await signin.sign_in(deps, method, {**right, "username": world.owner.username.upper()},
                             "10.0.0.2")
    clock.advance(signin.FAILURE_WINDOW)
    assert await signin.sign_in(deps, method, right, "10.0.0.2") == world.owner


async def test_failures_from_one_address_lock_it_for_every_name(storage: Storage) -> None:
    deps = make_deps(storage, FakeClock(t=1_800_000_000 - 1_800_000_000 % signin.FAILURE_WINDOW))
    world = await build_world(deps)
    method = Passwords(world.owner, "right")
    for i in range(signin.FAILURES_PER_IP):
        with pytest.raises(signin.SignInRefused):
            await signin.sign_in(deps, method, {"username": f"guess{i}", "password": "x"},
                                 "10.9.9.9")
    right = {"username": world.owner.username, "password": "right"}
    with pytest.raises(signin.SignInLocked):
        await signin.sign_in(deps, method, right, "10.9.9.9")
    assert await signin.sign_in(deps, method, right, "10.9.9.10") == world.owner


async def test_session_counters_live_on_the_server(storage: Storage) -> None:
    deps = make_deps(storage)
    for _ in range(7):
        await signin.count_wrong_entry(deps, "sid-a")
    burned = await signin.entry_attempts(deps, "sid-a", "BCDFGHJK")
    assert burned.burned and burned.linked_user_code == "BCDFGHJK"
    assert (await signin.entry_attempts(deps, "sid-b", None)).wrong == 0
    assert not await signin.session_ended(deps, "sid-a")
    await signin.end_session(deps, "sid-a")
    assert await signin.session_ended(deps, "sid-a")
    assert not await signin.session_ended(deps, "sid-b")


async def _helper(deps: Deps, studio: str, *permissions: Permission) -> Account:
    helper = await operator.add_account(deps, "helper", "3003", None)
    await operator.set_collaborator(deps, studio, helper.username, frozenset(permissions))
    return helper


async def test_a_seat_acts_with_the_scopes_its_permissions_could_grant(
        storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps, "s")
    helper = await _helper(deps, world.studio.name, Permission.MANAGE_LICENSES)
    owner_seat = await dashboard.take_seat(deps, world.owner.id, world.studio.id)
    helper_seat = await dashboard.take_seat(deps, helper.id, world.studio.id)
    assert set(owner_seat.acting_key(0).scopes) == set(ALL_STUDIO.split())
    assert helper_seat.acting_key(0).scopes == ("licenses:read", "licenses:write")
    assert helper_seat.acting_key(0).studio_id == world.studio.id
    with pytest.raises(dashboard.MissingPermission):
        await dashboard.save_product(deps, helper_seat, {"title": "Not mine to make"})
    with pytest.raises(NotFound):
        await dashboard.take_seat(deps, world.buyer.id, world.studio.id)
    assert [s.studio.id for s in await dashboard.seats_of(deps, helper.id)] == [world.studio.id]


async def test_a_member_revokes_only_keys_they_could_have_approved(storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps, "r")
    helper = await _helper(deps, world.studio.name, Permission.MANAGE_LICENSES)
    await obtain_key(deps, world.client, "licenses:read", world.owner, world.studio.id)
    apps = await device.connected_apps(deps, studio_id=world.studio.id)
    by_scopes = {a.key.scopes: a.key.id for a in apps}
    products_key = by_scopes[tuple(s for s in sc.SCOPES if s in ALL_STUDIO.split())]
    licenses_key = by_scopes[("licenses:read",)]
    seat = await dashboard.take_seat(deps, helper.id, world.studio.id)

    with pytest.raises(dashboard.MissingPermission):
        await dashboard.revoke_app(deps, seat, products_key)
    await dashboard.revoke_app(deps, seat, licenses_key)
    left = {a.key.id for a in await device.connected_apps(deps, studio_id=world.studio.id)}
    assert left == {products_key}
    with pytest.raises(NotFound):
        await dashboard.revoke_app(deps, seat, licenses_key)  # already gone


async def test_housekeeping_keeps_sign_outs_and_the_sign_in_lock(storage: Storage) -> None:
    """The sweep must not undo what a web session's counters remember: a signed-out cookie
    stays signed out, and failed sign-ins stay counted for their whole window."""
    clock = FakeClock()
    deps = make_deps(storage, clock)
    await signin.end_session(deps, "sid-1")
    window = clock.now() - clock.now() % signin.FAILURE_WINDOW
    async with storage.unit_of_work() as uow:
        await uow.counters.hit(["signin-fail:name:bob"], window)
    clock.advance(signin.FAILURE_WINDOW - 1)
    await housekeeping.sweep(deps)
    assert await signin.session_ended(deps, "sid-1")
    async with storage.unit_of_work() as uow:
        assert await uow.counters.count("signin-fail:name:bob", window) == 1
    clock.advance(housekeeping.COUNTER_RETENTION + 1)
    await housekeeping.sweep(deps)
    assert await signin.session_ended(deps, "sid-1")  # never forgotten
    async with storage.unit_of_work() as uow:
        assert await uow.counters.count("signin-fail:name:bob", window) == 0
