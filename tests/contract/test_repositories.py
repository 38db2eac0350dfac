"""Each storage port's own promises, through its methods alone, on every adapter: the
conflicts it answers as values, its compare-and-set, its orderings and filters, and the hot
path's facts. (The use-case level contract is in test_storage_contract.py.)"""

from __future__ import annotations

import attrs

from licore.device_flow import DeviceState
from licore.licenses import LicenseState, Source
from licore.model import (
    Account,
    ApiKey,
    Client,
    DeviceAuthorization,
    License,
    Membership,
    Product,
    Studio,
)
from licore.ports import Storage, UnitOfWork
from licore.scopes import KeyKind, Permission


def account(n: int, username: str | None = None) -> Account:
    return Account(f"acc_{n}", str(n), username or f"user{n}", None, n)


def studio(n: int, owner: str = "acc_1", place_limit: int = 3) -> Studio:
    return Studio(f"std_{n}", f"Studio {n}", owner, place_limit, n)


def product(n: int, studio_id: str = "std_1", discoverable: bool = False) -> Product:
    return Product(id=f"prd_{n}", studio_id=studio_id, slug="", title=f"P{n}", tagline="",
                   description="", price_credit=0, discoverable=discoverable,
                   licensing_enabled=True, created_at=n, updated_at=n)


def license(n: int, product_id: str = "prd_1", platform_id: str = "2",
            state: LicenseState = LicenseState.ACTIVE) -> License:
    return License(id=f"lic_{n}", product_id=product_id, platform_id=platform_id,
                   source=Source.GRANT, state=state, verified_at=n, created_at=n,
                   key_digest=f"digest{n}")


def key(n: int, client_id: str = "cli_1", studio_id: str | None = "std_1",
        account_id: str = "acc_1") -> ApiKey:
    return ApiKey(f"key_{n}", f"kd{n}", KeyKind.STUDIO if studio_id else KeyKind.LIBRARY,
                  ("products:read",), client_id, account_id, studio_id, n, n)


async def seed(uow: UnitOfWork) -> None:
    """An owner (acc_1) with a studio (std_1), a buyer (acc_2), an app (cli_1), a product."""
    assert await uow.accounts.add(account(1))
    assert await uow.accounts.add(account(2))
    assert await uow.studios.add(studio(1))
    assert await uow.clients.add(Client("cli_1", "App", "", ("products:read",), False, 0))
    await uow.products.add(product(1), "p")


async def test_accounts_refuse_a_taken_username_in_any_case_or_platform_id(
        storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        assert await uow.accounts.add(account(1, "Alice"))
        assert not await uow.accounts.add(account(2, "aLICE"))
        assert not await uow.accounts.add(attrs.evolve(account(3), platform_id="1"))
        assert (await uow.accounts.by_username("ALICE")) == account(1, "Alice")
        assert (await uow.accounts.by_platform_id("1")) == account(1, "Alice")
        assert await uow.accounts.by_id("acc_2") is None


async def test_studios_keep_one_seat_per_person_listed_by_studio(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        assert not await uow.studios.add(attrs.evolve(studio(9), name="Studio 1"))
        assert await uow.studios.add(studio(0, owner="acc_2"))
        assert (await uow.studios.by_name("Studio 0")) == studio(0, owner="acc_2")
        everything = frozenset(Permission)
        await uow.studios.put_membership(Membership("std_1", "acc_2", everything))
        await uow.studios.put_membership(Membership("std_0", "acc_2", frozenset()))
        narrower = Membership("std_1", "acc_2", frozenset({Permission.MANAGE_LICENSES}))
        await uow.studios.put_membership(narrower)
        assert await uow.studios.membership("std_1", "acc_2") == narrower
        assert await uow.studios.membership("std_1", "acc_1") is None
        assert list(await uow.studios.memberships_of("acc_2")) == [
            Membership("std_0", "acc_2", frozenset()), narrower]


async def test_clients_and_device_authorizations_answer_conflicts(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        assert not await uow.clients.add(Client("cli_1", "Again", "", (), False, 1))
        assert not await uow.clients.set_disabled("cli_nope", True)
        assert await uow.clients.set_disabled("cli_1", True)
        assert (await uow.clients.by_id("cli_1")) == Client(
            "cli_1", "App", "", ("products:read",), True, 0)
        device = DeviceAuthorization("dev_1", "dc1", "ABCDEFGH", "cli_1", ("products:read",),
                                     DeviceState.PENDING, 0, 600, 5)
        assert await uow.devices.add(device)
        assert not await uow.devices.add(attrs.evolve(device, id="dev_2",
                                                      device_code_digest="dc2"))
        approved = attrs.evolve(device, state=DeviceState.APPROVED, studio_id="std_1",
                                account_id="acc_1", granted_scopes=("products:read",))
        assert await uow.devices.replace(approved, expected=DeviceState.PENDING)
        denied = attrs.evolve(device, state=DeviceState.DENIED)
        assert not await uow.devices.replace(denied, expected=DeviceState.PENDING)
        assert await uow.devices.by_code_digest("dc1") == approved
        assert await uow.devices.by_user_code("ABCDEFGH") == approved


async def test_api_keys_touch_forward_revoke_once_and_list_live_apps(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        assert await uow.clients.add(Client("cli_2", "Other", "", (), False, 0))
        for k in (key(3), key(1), key(2, studio_id=None, account_id="acc_2"),
                  key(4, client_id="cli_2"), key(5, client_id="cli_2")):
            await uow.api_keys.add(k)
        await uow.api_keys.touch("key_1", 50)
        await uow.api_keys.touch("key_1", 40)  # never back
        assert (await uow.api_keys.by_digest("kd1")) == attrs.evolve(key(1), last_used_at=50)
        assert await uow.api_keys.revoke("key_3", 60)
        assert not await uow.api_keys.revoke("key_3", 61)
        assert (await uow.api_keys.by_id("key_3")) == attrs.evolve(key(3), revoked_at=60)
        assert await uow.api_keys.revoke("key_5", 62)
        assert await uow.api_keys.revoke_all_of_client("cli_2", 70) == 1  # key_5 was gone
        studio_apps = await uow.api_keys.connected_apps(studio_id="std_1")
        assert [(a.key.id, a.client_name) for a in studio_apps] == [("key_1", "App")]
        library = await uow.api_keys.connected_apps(account_id="acc_2")
        assert [(a.key.id, a.client_name) for a in library] == [("key_2", "App")]


async def test_products_take_free_slugs_save_and_list_the_discoverable(
        storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        assert await uow.studios.add(studio(2))
        second = await uow.products.add(product(2, "std_2", discoverable=True), "p")
        third = await uow.products.add(product(3), "p")
        assert (second.slug, third.slug) == ("p-2", "p-3")
        first = await uow.products.by_id("prd_1")
        assert first is not None and first.slug == "p"
        await uow.products.save(attrs.evolve(first, title="Renamed", discoverable=True))
        assert [(p.id, p.title, name) for p, name in await uow.products.listed()] == [
            ("prd_1", "Renamed", "Studio 1"), ("prd_2", "P2", "Studio 2")]
        page = await uow.products.of_studio("std_1", 1, None)
        assert [p.id for p in page.items] == ["prd_1"]
        rest = await uow.products.of_studio("std_1", 1, page.next_cursor)
        assert [p.id for p in rest.items] == ["prd_3"] and rest.next_cursor is None


async def test_licenses_one_per_user_compare_and_set_and_library_of_active(
        storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        await uow.products.add(product(2), "q")
        assert await uow.licenses.add(license(1))
        assert not await uow.licenses.add(license(9))  # the same user and product
        assert await uow.licenses.add(license(2, "prd_2", state=LicenseState.INACTIVE))
        assert await uow.licenses.add(license(3, "prd_2", platform_id="7"))
        revoked = attrs.evolve(license(1), state=LicenseState.INACTIVE)
        assert await uow.licenses.replace(revoked, expected=LicenseState.ACTIVE)
        assert not await uow.licenses.replace(license(1), expected=LicenseState.ACTIVE)
        assert await uow.licenses.by_key_digest("digest1") == revoked
        assert await uow.licenses.for_user("prd_2", "7") == license(3, "prd_2", "7")
        assert await uow.licenses.by_id("lic_9") is None
        assert [lic.id for lic in (await uow.licenses.of_product("prd_2", None, None)).items
                ] == ["lic_2", "lic_3"]
        assert await uow.licenses.replace(license(2, "prd_2"), LicenseState.INACTIVE)
        library = (await uow.licenses.library_of("2", None, None)).items
        assert [(e.license.id, e.product.id, e.studio_name) for e in library] == [
            ("lic_2", "prd_2", "Studio 1")]


async def test_runtime_read_counts_and_loads_the_facts(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        assert await uow.licenses.add(license(1))
        await uow.blacklist.set("std_1", "66", True, 5)
        assert await uow.runtime.record_place("lic_1", "g1", 5) == 1
        assert await uow.runtime.record_place("lic_1", "g2", 6) == 2
    counts, facts = await storage.runtime_read(["k", "ip"], 60, "digest1", "66", "g2")
    assert counts == [1, 1]
    assert (facts.license, facts.product) == (license(1), await _product(storage, "prd_1"))
    assert (facts.place_limit, facts.blacklisted) == (3, True)
    assert (facts.places_seen, facts.place_rank) == (2, 2)
    counts, facts = await storage.runtime_read(["k"], 60, "digest1", "2", "g3")
    assert counts == [2]
    assert (facts.blacklisted, facts.places_seen, facts.place_rank) == (False, 2, None)
    counts, facts = await storage.runtime_read(["k"], 120, "nobody", "2", None)
    assert counts == [1] and facts.license is None and facts.product is None
    assert await storage.use_nonce("lic_1", "n1", 100, 10)
    assert not await storage.use_nonce("lic_1", "n1", 100, 20)
    async with storage.unit_of_work() as uow:
        assert await uow.counters.count("k", 60) == 2
        assert not await uow.runtime.use_nonce("lic_1", "n1", 200, 30)


async def _product(storage: Storage, product_id: str) -> Product | None:
    async with storage.unit_of_work() as uow:
        return await uow.products.by_id(product_id)
