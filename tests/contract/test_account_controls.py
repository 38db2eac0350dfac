"""The operator's controls on people, as each storage adapter keeps them: an account
disabled and enabled, a seat taken away, and the keys an account approved revoked (all of
them, or those of one studio)."""

from __future__ import annotations

from licore.model import Membership
from licore.scopes import Permission
from licore.storage_ports import Storage
from tests.support.records import key, seed, studio


async def test_an_account_is_disabled_and_enabled(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        assert await uow.accounts.set_disabled("acc_2", 1234)
        assert not await uow.accounts.set_disabled("acc_nope", 1234)
    async with storage.unit_of_work() as uow:
        found = await uow.accounts.by_username("user2")
        assert found is not None and found.disabled_at == 1234
        assert [a.disabled_at for a in await uow.accounts.all()] == [None, 1234]
        assert await uow.accounts.set_disabled("acc_2", None)
        again = await uow.accounts.by_id("acc_2")
        assert again is not None and again.disabled_at is None


async def test_a_seat_is_removed_once(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        await uow.studios.put_membership(Membership("std_1", "acc_2",
                                                    frozenset({Permission.MANAGE_LICENSES})))
        assert await uow.studios.remove_membership("std_1", "acc_2")
        assert not await uow.studios.remove_membership("std_1", "acc_2")
        assert await uow.studios.membership("std_1", "acc_2") is None


async def test_an_accounts_keys_are_revoked_all_or_for_one_studio(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        assert await uow.studios.add(studio(2))
        await uow.api_keys.add(key(1, "cli_1", "std_1", "acc_2"))
        await uow.api_keys.add(key(2, "cli_1", "std_2", "acc_2"))
        await uow.api_keys.add(key(3, "cli_1", None, "acc_2"))
        await uow.api_keys.add(key(4, "cli_1", "std_1", "acc_1"))
        assert await uow.api_keys.revoke_all_of_account("acc_2", 50, "std_1") == 1
        assert await uow.api_keys.revoke_all_of_account("acc_2", 60) == 2
        assert await uow.api_keys.revoke_all_of_account("acc_2", 70) == 0
        revoked = {k: (await uow.api_keys.by_id(f"key_{k}")) for k in (1, 2, 3, 4)}
    assert {k: v.revoked_at for k, v in revoked.items() if v is not None} == {
        1: 50, 2: 60, 3: 60, 4: None}
