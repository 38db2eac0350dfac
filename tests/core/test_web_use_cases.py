"""The use cases behind the web pages: a session's server-side counters, and what a studio
seat may do (the failed sign-in limits: test_signin_limits.py)."""

from __future__ import annotations

import attrs
import pytest

from licore import scopes as sc
from licore.actors import ActingStudio
from licore.commands import ChangeLicense, CreateProduct, LicenseTarget
from licore.errors import InvalidRequest, LicoreError, NotFound
from licore.licenses import LicenseEvent
from licore.model import Account, Alert
from licore.scopes import Permission
from licore.services import housekeeping, signin
from licore.services.dashboard import AlertAction, MissingPermission
from licore.services.deps import Deps
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps
from tests.support.scenario import ALL_STUDIO, build_world, obtain_key


async def test_session_counters_live_on_the_server(storage: Storage) -> None:
    deps = make_deps(storage)
    for _ in range(7):
        await UseCases.of(deps).sessions.count_wrong_entry("sid-a")
    burned = await UseCases.of(deps).sessions.entry_attempts("sid-a", "BCDFGHJK")
    assert burned.burned and burned.linked_user_code == "BCDFGHJK"
    assert (await UseCases.of(deps).sessions.entry_attempts("sid-b", None)).wrong == 0
    assert not await UseCases.of(deps).sessions.session_ended("sid-a")
    await UseCases.of(deps).sessions.end_session("sid-a")
    assert await UseCases.of(deps).sessions.session_ended("sid-a")
    assert not await UseCases.of(deps).sessions.session_ended("sid-b")


async def _helper(deps: Deps, studio: str, *permissions: Permission) -> Account:
    helper = await UseCases.of(deps).operator.add_account("helper", "3003", None)
    await UseCases.of(deps).operator.set_collaborator(studio, helper.username,
                                                      frozenset(permissions))
    return helper


async def test_a_seat_acts_for_its_studio_only_within_its_permissions(
        storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps, "s")
    board = UseCases.of(deps).dashboard
    helper = await _helper(deps, world.studio.name, Permission.MANAGE_LICENSES)
    owner_seat = await board.take_seat(world.owner.id, world.studio.id)
    helper_seat = await board.take_seat(helper.id, world.studio.id)
    acting = ActingStudio(world.studio.id)
    assert all(owner_seat.require(p) == acting for p in Permission)
    assert helper_seat.require(Permission.MANAGE_LICENSES) == acting
    with pytest.raises(MissingPermission):
        await board.create_product(helper_seat, CreateProduct("Not mine to make"))
    made = await board.create_product(owner_seat, CreateProduct("Mine"))
    granted = await board.change_license(helper_seat, ChangeLicense(
        LicenseTarget(made.id, world.buyer.platform_id), LicenseEvent.GRANT))
    assert granted.product_id == made.id
    with pytest.raises(NotFound):
        await board.take_seat(world.buyer.id, world.studio.id)
    assert [s.studio.id for s in await board.seats_of(helper.id)] == [world.studio.id]


async def test_a_member_revokes_only_keys_they_could_have_approved(storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps, "r")
    helper = await _helper(deps, world.studio.name, Permission.MANAGE_LICENSES)
    await obtain_key(deps, world.client, "licenses:read", world.owner, world.studio.id)
    board = UseCases.of(deps).dashboard
    apps = await UseCases.of(deps).keys.connected_apps(studio_id=world.studio.id)
    by_scopes = {a.key.scopes: a.key.id for a in apps}
    products_key = by_scopes[tuple(s for s in sc.SCOPES if s in ALL_STUDIO.split())]
    licenses_key = by_scopes[("licenses:read",)]
    seat = await board.take_seat(helper.id, world.studio.id)

    with pytest.raises(MissingPermission):
        await board.revoke_app(seat, products_key)
    await board.revoke_app(seat, licenses_key)
    left = {a.key.id for a in await UseCases.of(deps).keys.connected_apps(
        studio_id=world.studio.id)}
    assert left == {products_key}
    with pytest.raises(NotFound):
        await board.revoke_app(seat, licenses_key)  # already gone


async def test_housekeeping_keeps_sign_outs_and_the_sign_in_lock(storage: Storage) -> None:
    """The sweep must not undo what a web session's counters remember: a signed-out cookie
    stays signed out, and failed sign-ins stay counted for their whole window."""
    clock = FakeClock()
    deps = make_deps(storage, clock)
    await UseCases.of(deps).sessions.end_session("sid-1")
    window = clock.now() - clock.now() % signin.FAILURE_WINDOW
    async with storage.unit_of_work() as uow:
        await uow.records.counters.hit(["signin-fail:name:bob"], window)
    clock.advance(signin.FAILURE_WINDOW - 1)
    await UseCases.of(deps).housekeeping.sweep()
    assert await UseCases.of(deps).sessions.session_ended("sid-1")
    async with storage.unit_of_work() as uow:
        assert await uow.records.counters.count("signin-fail:name:bob", window) == 1
    clock.advance(housekeeping.COUNTER_RETENTION + 1)
    await UseCases.of(deps).housekeeping.sweep()
    assert await UseCases.of(deps).sessions.session_ended("sid-1")  # never forgotten
    async with storage.unit_of_work() as uow:
        assert await uow.records.counters.count("signin-fail:name:bob", window) == 0


async def test_an_alert_row_acts_on_its_license_or_user_within_the_seats_permission(
        storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps, "a")
    other = await build_world(deps, "bb")
    uc = UseCases.of(deps)
    board = uc.dashboard
    owner = await board.take_seat(world.owner.id, world.studio.id)
    products_only = await board.take_seat(
        (await _helper(deps, world.studio.name, Permission.MANAGE_PRODUCTS)).id,
        world.studio.id)
    made = await board.create_product(owner, CreateProduct("Watched"))
    held = await board.change_license(owner, ChangeLicense(
        LicenseTarget(made.id, world.buyer.platform_id), LicenseEvent.GRANT))
    alert = Alert(id="alr_row", studio_id=world.studio.id, kind="leaked_key",
                  product_id=made.id, license_id=held.id, platform_id="9555",
                  key_owner_platform_id=world.buyer.platform_id, game_id="1",
                  script_name=None, count=1, first_seen_at=1, last_seen_at=1)
    async with storage.unit_of_work() as uow:
        await uow.abuse.alerts.record(alert, 3600)
        await uow.abuse.alerts.record(attrs.evolve(alert, id="alr_anon", kind="leaked_key",
                                                   game_id="2", license_id=None,
                                             platform_id=None), 3600)

    with pytest.raises(MissingPermission):
        await board.act_on_alert(products_only, "alr_row", AlertAction.REVOKE)
    stranger = await board.take_seat(other.owner.id, other.studio.id)
    with pytest.raises(NotFound):  # another studio's alert does not exist for it
        await board.act_on_alert(stranger, "alr_row", AlertAction.REVOKE)
    for action in (AlertAction.BLACKLIST, AlertAction.REKEY):
        with pytest.raises(InvalidRequest):  # no user, no license: nothing to act on
            await board.act_on_alert(owner, "alr_anon", action)

    acted = await board.act_on_alert(owner, "alr_row", AlertAction.REVOKE)
    assert acted.subject == world.buyer.platform_id
    seen = await board.overview(owner)
    assert seen.alert_licenses[held.id] == "inactive"
    blacklisted = await board.act_on_alert(owner, "alr_row", AlertAction.BLACKLIST)
    assert blacklisted.subject == "9555"
    assert "9555" in {user for user, _ in (await board.overview(owner)).blacklist or ()}
    with pytest.raises(LicoreError):  # a revoked license has nothing to pause
        await board.act_on_alert(owner, "alr_row", AlertAction.PAUSE)
