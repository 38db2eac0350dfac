"""Licenses granted and looked up by a linked chat account (issue 45, item 6; docs/licenses.md
"By chat account"), on every storage: `chat_user` names the person who linked that chat
account, in place of `user`; an account nobody linked is not found; one linked by two people
is refused, naming the field; both at once is refused."""

from __future__ import annotations

import pytest

from licore import commands as c
from licore import license_commands as lc
from licore.actors import ActingStudio
from licore.errors import InvalidRequest, NotFound
from licore.licenses import LicenseEvent, LicenseState
from licore.model import Product
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps

CHAT = "112233445566778899"


async def _setup(storage: Storage) -> tuple[UseCases, ActingStudio, Product]:
    uc = UseCases.of(make_deps(storage, FakeClock()))
    await uc.operator.add_account("owner", "1001", None)
    studio = ActingStudio((await uc.operator.add_studio("Studio", "owner")).id)
    async with storage.unit_of_work() as uow:
        await uow.hooks.link_chat("4242", CHAT, 1)
    return uc, studio, await uc.products.create(studio, c.CreateProduct("Kit"))


async def test_a_grant_and_a_look_up_by_chat_account(storage: Storage) -> None:
    uc, studio, product = await _setup(storage)
    target = c.LicenseTarget(product.id, "", CHAT)
    granted = await uc.lifecycle.grant(studio, lc.GrantLicense(target))
    assert (granted.platform_id, granted.state) == ("4242", LicenseState.ACTIVE)
    found = await uc.licensing.list(studio, c.ListLicenses(product.id, chat_user=CHAT))
    assert [x.id for x in found.items] == [granted.id]
    revoked = await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.REVOKE))
    assert revoked.state is LicenseState.INACTIVE


async def test_an_unlinked_or_shared_chat_account_is_refused(storage: Storage) -> None:
    uc, studio, product = await _setup(storage)
    with pytest.raises(NotFound):
        await uc.lifecycle.grant(studio, lc.GrantLicense(c.LicenseTarget(
            product.id, "", "999")))
    async with storage.unit_of_work() as uow:
        await uow.hooks.link_chat("4343", CHAT, 2)
    with pytest.raises(InvalidRequest) as shared:
        await uc.lifecycle.grant(studio, lc.GrantLicense(c.LicenseTarget(product.id, "", CHAT)))
    assert shared.value.field == "chat_user"
    assert list((await uc.licensing.list(studio, c.ListLicenses(product.id))).items) == []


def test_user_or_chat_user_one_of_them() -> None:
    for user, chat in (("4242", CHAT), ("", None)):
        with pytest.raises(InvalidRequest) as refused:
            c.LicenseTarget("prd_x", user, chat)
        assert refused.value.field == "user"
    with pytest.raises(InvalidRequest) as shape:
        c.LicenseTarget("prd_x", "", "12ab")
    assert shape.value.field == "chat_user"
