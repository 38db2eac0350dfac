"""Each storage port's own promises, through its methods alone, on every adapter: the
conflicts it answers as values, its compare-and-set, its orderings and filters, and the hot
path's facts. (The use-case level contract is in test_storage_contract.py.)"""

from __future__ import annotations

import asyncio

import attrs

from licore.device_flow import DeviceState
from licore.licenses import LicenseState
from licore.model import Client, DeviceAuthorization, Membership, Product
from licore.scopes import Permission
from licore.storage_ports import Storage
from tests.support.records import account, key, license, product, seed, studio


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


async def test_a_held_client_makes_a_concurrent_disable_see_the_key_issued_meanwhile(
        storage: Storage) -> None:
    # The device-flow poll holds its client while it issues a key; a disable racing it must
    # either come first (the poll sees it) or come after and revoke the new key too.
    async with storage.unit_of_work() as uow:
        await seed(uow)

    async def disable() -> int:
        async with storage.unit_of_work() as other:
            assert await other.clients.set_disabled("cli_1", True)
            return await other.api_keys.revoke_all_of_client("cli_1", 90)

    async with storage.unit_of_work() as uow:
        held = await uow.clients.hold("cli_1")
        assert held is not None and not held.disabled
        disabling = asyncio.create_task(disable())
        await asyncio.sleep(0.3)  # gives an unheld disable the time to commit first
        await uow.api_keys.add(key(7))
    assert await disabling == 1
    async with storage.unit_of_work() as uow:
        issued = await uow.api_keys.by_id("key_7")
        assert issued is not None and issued.revoked_at == 90


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
        assert await uow.licenses.by_ids([]) == {}
        assert await uow.licenses.by_ids(["lic_3", "lic_9", "lic_1", "lic_3"]) == {
            "lic_1": revoked, "lic_3": license(3, "prd_2", "7")}
        assert [lic.id for lic in (await uow.licenses.of_product("prd_2", None, None)).items
                ] == ["lic_2", "lic_3"]
        assert await uow.licenses.replace(license(2, "prd_2"), LicenseState.INACTIVE)
        library = (await uow.licenses.library_of("2", None, None)).items
        assert [(e.license.id, e.product.id, e.studio_name) for e in library] == [
            ("lic_2", "prd_2", "Studio 1")]


async def seed_runtime(storage: Storage) -> None:
    """License 1 of studio 1, user 66 blacklisted there, places g1 and g2 seen."""
    async with storage.unit_of_work() as uow:
        await seed(uow)
        assert await uow.licenses.add(license(1))
        await uow.abuse.blacklist.set("std_1", "66", True, 5)
        assert await uow.records.runtime.record_place("lic_1", "g1", 5) == 1
        assert await uow.records.runtime.record_place("lic_1", "g2", 6) == 2


async def test_runtime_read_counts_and_loads_the_facts(storage: Storage) -> None:
    await seed_runtime(storage)
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
        assert await uow.records.counters.count("k", 60) == 2
        assert not await uow.records.runtime.use_nonce("lic_1", "n1", 200, 30)


async def test_runtime_reads_past_a_full_batch_count_in_turn_and_get_their_own_facts(
        storage: Storage) -> None:
    await seed_runtime(storage)
    # 200 concurrent reads: on SQL a batch of MAX_BATCH (128) then the rest. Buckets repeat
    # across requests and within one, NULL game ids sit among others, some keys are unknown.
    games = (None, "g1", "g2", "g3")
    reads = [(["k", f"ip{i % 3}", *(["k"] if i % 5 == 0 else [])],
              "nobody" if i % 7 == 6 else "digest1", "66" if i % 2 else "2", games[i % 4])
             for i in range(200)]
    answers = await asyncio.gather(*(storage.runtime_read(buckets, 60, digest, user, game)
                                     for buckets, digest, user, game in reads))
    product_1 = await _product(storage, "prd_1")
    seen: dict[str, int] = {}
    for (buckets, digest, user, game), (counts, facts) in zip(reads, answers, strict=True):
        # Each request sees the counts as they stood when it came, its own hits included.
        expected = []
        for bucket in buckets:
            seen[bucket] = seen.get(bucket, 0) + 1
            expected.append(seen[bucket])
        assert counts == expected
        if digest == "nobody":
            assert facts.license is None and facts.product is None
            continue
        assert (facts.license, facts.product) == (license(1), product_1)
        assert (facts.place_limit, facts.blacklisted, facts.places_seen, facts.place_rank) == (
            3, user == "66", 2, {"g1": 1, "g2": 2}.get(game or ""))
    counts, _ = await storage.runtime_read(["k"], 2**40, "digest1", "2", None)  # a bigint window
    assert counts == [1]
    async with storage.unit_of_work() as uow:
        assert [await uow.records.counters.count(b, 60) for b in ("k", "ip0", "ip1", "ip2")] == [
            seen["k"], seen["ip0"], seen["ip1"], seen["ip2"]]
        assert await uow.records.counters.count("k", 2**40) == 1


async def test_odd_text_in_a_batch_stays_as_it_was(storage: Storage) -> None:
    odd = ["NULL", "null", "", " a b ", 'say "hi"', "back\\slash\\", "{a,b}", "x,y", "é✓", "'q'",
           "%s", "?", "\\N"]
    async with storage.unit_of_work() as uow:
        await seed(uow)
        assert await uow.licenses.add(license(1))
        for n, game in enumerate(odd):
            assert await uow.records.runtime.record_place("lic_1", game, 5) == n + 1
    answers = await asyncio.gather(*(storage.runtime_read([text, text, "k"], 60, "digest1", "2",
                                                          text) for text in [*odd, *odd]))
    assert [counts for counts, _ in answers] == [
        [1, 2, i + 1] for i in range(len(odd))] + [[3, 4, len(odd) + i + 1]
                                                   for i in range(len(odd))]
    assert [facts.place_rank for _, facts in answers] == [*range(1, len(odd) + 1)] * 2
    # The string "NULL" is not a NULL game id (that has no place), nor "" one.
    (_, none), = [await storage.runtime_read(["k"], 60, "digest1", "2", None)]
    assert none.place_rank is None
    fresh = await asyncio.gather(*(storage.use_nonce("lic_1", text, 2_000, 1_000)
                                   for text in [*odd, *odd]))
    assert fresh == [True] * len(odd) + [False] * len(odd)


async def _product(storage: Storage, product_id: str) -> Product | None:
    async with storage.unit_of_work() as uow:
        return await uow.products.by_id(product_id)


async def test_operator_listings_passwords_and_app_descriptions(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        await seed(uow)
        assert await uow.accounts.add(account(3, "Zed"))
        assert await uow.accounts.add(account(4, "bea"))
        assert [a.username for a in await uow.accounts.all()] == ["bea", "user1", "user2",
                                                                  "Zed"]
        assert await uow.accounts.set_password("acc_3", "digest")
        assert not await uow.accounts.set_password("acc_none", "digest")
        assert (await uow.accounts.by_id("acc_3")) == attrs.evolve(account(3, "Zed"),
                                                                    password_digest="digest")
        assert await uow.studios.add(studio(0, owner="acc_2"))
        assert [s.id for s in await uow.studios.all()] == ["std_0", "std_1"]
        seat = Membership("std_1", "acc_2", frozenset({Permission.MANAGE_LICENSES}))
        await uow.studios.put_membership(Membership("std_1", "acc_1", frozenset(Permission)))
        await uow.studios.put_membership(seat)
        assert [m.account_id for m in await uow.studios.members("std_1")] == ["acc_1", "acc_2"]
        assert list(await uow.studios.members("std_0")) == []
        assert await uow.clients.add(Client("cli_0", "Zapper", "z", (), False, 1))
        assert [c.id for c in await uow.clients.all()] == ["cli_1", "cli_0"]
        assert (await uow.clients.by_name("zAPPER")) is not None
        assert await uow.clients.by_name("nobody") is None
        renamed = Client("cli_1", "Installer", "Installs", ("library:read",), True, 99)
        assert await uow.clients.describe(renamed)
        assert not await uow.clients.describe(attrs.evolve(renamed, id="cli_none"))
        # only the name, description and scopes change; disabled and created_at stay
        assert (await uow.clients.by_id("cli_1")) == Client(
            "cli_1", "Installer", "Installs", ("library:read",), False, 0)
