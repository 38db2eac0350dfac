"""The approval step's code entry: five wrong codes burn the session and the authorization
it was opened for (contract section 6)."""

from __future__ import annotations

import pytest

from licore.errors import ExpiredToken
from licore.services import device
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import make_deps
from tests.support.scenario import ALL_LIBRARY, build_world


async def test_entering_the_right_code_shows_the_app_and_never_the_device_code(
        storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    flow = UseCases.of(deps).device
    started = await flow.start(world.client.id, "library:read", "1.1.1.1")
    view, attempts = await flow.look_up(started.user_code.lower().replace("-", " "),
                                        device.EntryAttempts(), "1.1.1.1")
    assert view is not None and attempts.wrong == 0
    assert view.client_name == "Installer" and view.requested == ("library:read",)
    assert view.user_code == started.user_code
    assert started.device_code not in repr(view)


async def test_five_wrong_codes_burn_the_session_and_its_linked_authorization(
        storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    flow = UseCases.of(deps).device
    started = await flow.start(world.client.id, ALL_LIBRARY, "1.1.1.1")
    attempts = device.EntryAttempts(linked_user_code=started.user_code)
    for wrong in ("BBBB-BBBB", "CCCC-CCCC", "nonsense", "DDDD-DDDD", "FFFF-FFFF"):
        view, attempts = await flow.look_up(wrong, attempts, "1.1.1.1")
        assert view is None
    assert attempts.burned
    with pytest.raises(device.SessionBurned):
        await flow.look_up(started.user_code, attempts, "1.1.1.1")
    with pytest.raises(ExpiredToken):
        await flow.poll(started.device_code, None)
    with pytest.raises(ExpiredToken):
        await flow.decide(world.buyer.id, started.user_code, True)


async def test_four_wrong_codes_do_not_burn(storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    flow = UseCases.of(deps).device
    started = await flow.start(world.client.id, ALL_LIBRARY, "1.1.1.1")
    attempts = device.EntryAttempts(linked_user_code=started.user_code)
    for _ in range(4):
        _, attempts = await flow.look_up("BBBB-BBBB", attempts, "1.1.1.1")
    view, attempts = await flow.look_up(started.user_code, attempts, "1.1.1.1")
    assert view is not None and not attempts.burned
