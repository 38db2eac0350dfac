"""The storage ports' contract, run against every adapter (in memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import attrs
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters_storage import MemoryStorage, PostgresStorage, SqliteStorage, open_storage
from adapters_storage.sql.common import array_literal
from licore import commands as c
from licore.actors import ActingStudio
from licore.errors import AlreadyOwned, ExpiredToken, LicoreError, Unavailable
from licore.licenses import LicenseEvent, LicenseState
from licore.model import Alert, Page, Product, Version
from licore.services import device
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from licore.update_files import FileForm, FileOwner, UpdateFile
from tests.conftest import PG_URL, _postgres_or_skip
from tests.support.fakes import FakeClock, make_deps
from tests.support.scenario import ALL_STUDIO, build_world


async def test_migrations_run_twice_and_concurrently(database_url: str) -> None:
    stores = [open_storage(database_url) for _ in range(3)]
    try:
        await asyncio.gather(*(s.migrate() for s in stores))
        await stores[0].migrate()
        async with stores[1].unit_of_work() as uow:
            assert await uow.accounts.by_username("nobody") is None
    finally:
        for s in stores:
            await s.close()


async def test_unit_of_work_rolls_back_everything_on_error(storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    created = await UseCases.of(deps).products.create(ActingStudio(world.studio.id),
                                                      c.CreateProduct("Sword"))
    with pytest.raises(RuntimeError):
        async with storage.unit_of_work() as uow:
            product = await uow.products.by_id(created.id)
            assert product is not None
            import attrs

            await uow.products.save(attrs.evolve(product, title="Changed"))
            raise RuntimeError("boom")
    async with storage.unit_of_work() as uow:
        product = await uow.products.by_id(created.id)
    assert product is not None and product.title == "Sword"


async def test_concurrent_grants_give_one_license_and_one_already_owned(storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Gun"))
    grant = c.ChangeLicense(c.LicenseTarget(product.id, world.buyer.platform_id),
                            LicenseEvent.GRANT)
    results = await asyncio.gather(*(uc.lifecycle.change(studio, grant) for _ in range(2)),
                                   return_exceptions=True)
    oks = [r for r in results if not isinstance(r, BaseException)]
    owned = [r for r in results if isinstance(r, AlreadyOwned)]
    assert len(oks) == 1 and len(owned) == 1, results
    listed = await uc.licensing.list(studio, c.ListLicenses(product.id))
    assert len(listed.items) == 1


async def test_concurrent_creations_with_one_title_get_distinct_slugs(storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    results = await asyncio.gather(
        *(uc.products.create(studio, c.CreateProduct("Café Racer!")) for _ in range(4)))
    slugs = sorted(r.slug for r in results)
    assert slugs == ["cafe-racer", "cafe-racer-2", "cafe-racer-3", "cafe-racer-4"]


class CountingExecutor:
    """The statements a repository sends, counted."""

    def __init__(self, db: Any) -> None:
        self.db, self.statements = db, 0

    async def rows(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        self.statements += 1
        return list(await self.db.rows(sql, params))

    async def run(self, sql: str, params: Any = ()) -> int:
        self.statements += 1
        return int(await self.db.run(sql, params))


@pytest.mark.parametrize("twins", [1, 60])
async def test_a_slug_costs_the_same_whatever_the_number_of_twins(
        storage: Storage, twins: int) -> None:
    """Issue 13, case 11: the slug of a product whose title is taken by any number of
    others is one counter bump and one insert; a number taken by another title's slug is
    skipped, and the unique index is still the guard."""
    deps = make_deps(storage)
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    for _ in range(twins):
        await uc.products.create(studio, c.CreateProduct("Twin"))
    if isinstance(storage, MemoryStorage):
        made = await uc.products.create(studio, c.CreateProduct("Twin"))
    else:
        from adapters_storage.sql.catalog import SqlProducts

        async with storage.unit_of_work() as uow:
            counting = CountingExecutor(uow.db)  # type: ignore[attr-defined]
            made = await SqlProducts(counting).add(
                attrs.evolve(made_from(world.studio.id), id="prd_00000000twinlast"), "twin")
        assert counting.statements == 2
    assert made.slug == f"twin-{twins + 1}"
    # "Twin 2" takes its own base's first number, which another title's twin already holds.
    if twins >= 2:
        other = await uc.products.create(studio, c.CreateProduct("Twin 2"))
        assert other.slug == "twin-2-2"
    again = await uc.products.create(studio, c.CreateProduct("Twin"))
    assert again.slug == f"twin-{twins + 2}"


def made_from(studio_id: str) -> Product:
    return Product(id="", studio_id=studio_id, slug="", title="Twin", tagline="",
                   description="", price_credit=0, discoverable=False,
                   licensing_enabled=True, created_at=1, updated_at=1)


async def test_concurrent_claims_of_one_approved_code_return_the_key_once(
        storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    start = await UseCases.of(deps).device.start(world.client.id, ALL_STUDIO, "10.0.0.1")
    await UseCases.of(deps).device.decide(world.owner.id, start.user_code, True, world.studio.id)
    results = await asyncio.gather(
        *(UseCases.of(deps).device.poll(start.device_code, None) for _ in range(3)),
        return_exceptions=True)
    tokens = [r for r in results if isinstance(r, device.TokenResponse)]
    refused = [r for r in results if isinstance(r, ExpiredToken)]
    assert len(tokens) == 1 and len(refused) == 2, results


async def test_alerts_repeat_within_an_hour_bump_the_count(storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    product = await UseCases.of(deps).products.create(ActingStudio(world.studio.id),
                                                      c.CreateProduct("Boat"))
    base = Alert(id="alr_1", studio_id=world.studio.id, kind="leaked_key",
                 product_id=product.id, license_id="lic_x", platform_id="9",
                 key_owner_platform_id="8", game_id="55", script_name=None, count=1,
                 first_seen_at=1000, last_seen_at=1000)
    async with storage.unit_of_work() as uow:
        first = await uow.abuse.alerts.record(base, 3600)
        again = await uow.abuse.alerts.record(
            attrs_evolve(base, id="alr_2", first_seen_at=2000, last_seen_at=2000), 3600)
        other_place = await uow.abuse.alerts.record(
            attrs_evolve(base, id="alr_3", game_id="56", last_seen_at=2100), 3600)
        later = await uow.abuse.alerts.record(
            attrs_evolve(base, id="alr_4", first_seen_at=9000, last_seen_at=9000), 3600)
    assert first.id == again.id == "alr_1" and again.count == 2
    assert other_place.id == "alr_3" and later.id == "alr_4"
    async with storage.unit_of_work() as uow:
        assert await uow.abuse.alerts.by_id(world.studio.id, "alr_1") == again
        assert await uow.abuse.alerts.by_id("std_other", "alr_1") is None  # another studio's
        assert await uow.abuse.alerts.by_id(world.studio.id, "alr_9") is None


def attrs_evolve(obj: Any, **changes: Any) -> Any:
    import attrs

    return attrs.evolve(obj, **changes)


async def test_nonce_is_used_once_until_it_expires(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        assert await uow.records.runtime.use_nonce("lic_1", "abc", expires_at=400, now=100)
        assert not await uow.records.runtime.use_nonce("lic_1", "abc", expires_at=500, now=200)
        assert await uow.records.runtime.use_nonce("lic_2", "abc", expires_at=500, now=200)
        assert await uow.records.runtime.use_nonce("lic_1", "abc", expires_at=900, now=400)


async def test_rate_counters_count_per_bucket_and_window(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        counts = [(await uow.records.counters.hit(["k1"], 60))[0] for _ in range(3)]
        both = await uow.records.counters.hit(["k2", "k1"], 60)
        next_window = await uow.records.counters.hit(["k1"], 120)
    assert counts == [1, 2, 3] and both == [1, 4] and next_window == [1]


async def test_reading_a_rate_counter_does_not_add_to_it(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        assert await uow.records.counters.count("k1", 60) == 0
        await uow.records.counters.hit(["k1", "k1"], 60)
        assert [await uow.records.counters.count("k1", 60) for _ in range(2)] == [2, 2]
        assert await uow.records.counters.count("k1", 120) == 0


async def test_blacklist_lists_what_was_added_and_not_what_was_removed(
        storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    async with storage.unit_of_work() as uow:
        await uow.abuse.blacklist.set(world.studio.id, "42", True, 10)
        await uow.abuse.blacklist.set(world.studio.id, "7", True, 11)
        await uow.abuse.blacklist.set(world.studio.id, "42", True, 12)
        await uow.abuse.blacklist.set(world.studio.id, "9", True, 13)
        await uow.abuse.blacklist.set(world.studio.id, "9", False, 14)
        assert await uow.abuse.blacklist.of_studio(world.studio.id) == [("42", 10), ("7", 11)]


async def test_places_are_counted_distinctly(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        assert await uow.records.runtime.record_place("lic_1", "1", 10) == 1
        assert await uow.records.runtime.record_place("lic_1", "1", 11) == 1
        assert await uow.records.runtime.record_place("lic_1", "2", 12) == 2
        assert await uow.records.runtime.record_place("lic_2", "2", 12) == 1
        assert await uow.records.runtime.record_place("lic_1", "1", 13) == 1


async def test_pagination_walks_every_item_once(storage: Storage) -> None:
    deps = make_deps(storage, FakeClock())
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    made = []
    for i in range(7):
        made.append((await uc.products.create(studio, c.CreateProduct(f"P{i}"))).id)
        deps.clock.advance(1)  # type: ignore[attr-defined]
    seen: list[str] = []
    asked = c.ListProducts(c.Paging(3))
    while True:
        page = await uc.products.list(studio, asked)
        seen += [p.id for p in page.items]
        if page.next_cursor is None:
            break
        asked = c.ListProducts(c.Paging(3, page.next_cursor))
    assert seen == made


async def test_no_api_key_or_license_key_is_stored_in_the_clear(storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Secret"))
    await uc.lifecycle.change(studio, c.ChangeLicense(
        c.LicenseTarget(product.id, world.buyer.platform_id), LicenseEvent.GRANT))
    async with storage.unit_of_work() as uow:
        lic = await uow.licenses.for_user(product.id, world.buyer.platform_id)
    assert lic is not None and lic.key_ciphertext is not None
    license_key = deps.vault.decrypt(lic.key_ciphertext, lic.id)
    assert license_key.startswith("lk_")
    secrets = [world.studio_key, world.library_key, license_key]
    dump = await _raw_dump(storage)
    for secret in secrets:
        assert secret.encode() not in dump
        assert secret[4:20].encode() not in dump  # not even a recognisable part


async def _raw_dump(storage: Storage) -> bytes:
    if isinstance(storage, MemoryStorage):
        return repr(storage.tables).encode()
    if isinstance(storage, SqliteStorage):
        path = storage.path
        con = sqlite3.connect(path)
        con.execute("PRAGMA wal_checkpoint(FULL)")
        con.close()
        files = [Path(path + suffix) for suffix in ("", "-wal")]
        return b"".join(f.read_bytes() for f in files if f.exists())
    assert isinstance(storage, PostgresStorage)
    out = []
    with psycopg.connect(storage.url) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
        for table in tables:
            for row in conn.execute(f"SELECT * FROM {table}"):
                out.append(repr(row))
    return "\n".join(out).encode()


async def test_revoke_clears_the_key_and_regrant_mints_a_new_one(storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Hat"))
    target = c.LicenseTarget(product.id, world.buyer.username)
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.GRANT))
    async with storage.unit_of_work() as uow:
        first = await uow.licenses.for_user(product.id, world.buyer.platform_id)
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.REVOKE))
    async with storage.unit_of_work() as uow:
        revoked = await uow.licenses.for_user(product.id, world.buyer.platform_id)
    assert revoked is not None and revoked.state is LicenseState.INACTIVE
    assert revoked.key_ciphertext is None and revoked.key_digest is None
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.GRANT))
    async with storage.unit_of_work() as uow:
        again = await uow.licenses.for_user(product.id, world.buyer.platform_id)
    assert first is not None and again is not None
    assert again.state is LicenseState.ACTIVE and again.id == first.id
    assert again.key_digest not in (None, first.key_digest)
    with pytest.raises(LicoreError):
        await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.GRANT))


async def _uploaded(storage: Storage) -> tuple[UseCases, ActingStudio, Product, Version]:
    from adapters_formats.codec import RobloxModelCodec
    from tests.support.models import product_model

    deps = make_deps(storage)
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Build"))
    data = RobloxModelCodec().write(product_model())
    version = (await uc.packages.upload(studio, c.UploadVersion(product.id, "1.0",
                                                                data))).version
    return uc, studio, product, version


async def test_versions_keep_their_file_scripts_and_labels(storage: Storage) -> None:
    _, _, product, version = await _uploaded(storage)
    async with storage.unit_of_work() as uow:
        stored = await uow.versions.by_id(version.id)
        assert stored is not None and stored.label == "1.0" and not stored.published
        data = await uow.versions.data(stored)
        scripts = await uow.versions.scripts(stored.id)
        greeter = await uow.versions.scripts(stored.id, "Greeter")
        assert await uow.versions.of_product(product.id, True, None, None) == Page((), None)
        assert [v.id for v in (await uow.versions.of_product(product.id, False, None,
                                                             None)).items] == [stored.id]
        # The same label again is answered, not raised, and adds nothing.
        assert not await uow.versions.add(attrs.evolve(stored, id="ver_other",
                                                       blob_id="blb_other"), b"x", [])
    import hashlib

    assert hashlib.sha256(data).hexdigest() == stored.sha256 == version.sha256
    assert [s.name for s in scripts] == ["LicenseCheck", "Greeter"]
    assert [s.position for s in greeter] == [1]
    assert greeter[0].path == "Product/Greeter"


async def test_prepared_copies_are_kept_per_key_generation_and_dropped(
        storage: Storage) -> None:
    uc, studio, product, version = await _uploaded(storage)
    target = c.LicenseTarget(product.id, "555")
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.GRANT))
    async with storage.unit_of_work() as uow:
        lic = await uow.licenses.for_user(product.id, "555")
        assert lic is not None
        await uow.copies.put(version.id, lic.id, lic.key_generation, b"one")
        await uow.copies.put(version.id, lic.id, lic.key_generation, b"two")
        assert await uow.copies.get(version.id, lic.id, lic.key_generation) == b"two"
        assert await uow.copies.get(version.id, lic.id, lic.key_generation + 1) is None
    # Revoking drops the license's copies in the same unit of work.
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.REVOKE))
    async with storage.unit_of_work() as uow:
        assert await uow.copies.get(version.id, lic.id, lic.key_generation) is None
        await uow.copies.put(version.id, lic.id, 7, b"three")
        await uow.copies.drop(product_id=product.id)
        assert await uow.copies.get(version.id, lic.id, 7) is None


async def test_a_copys_nodes_are_kept_beside_that_copy_only(storage: Storage) -> None:
    uc, studio, product, version = await _uploaded(storage)
    target = c.LicenseTarget(product.id, "556")
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.GRANT))
    async with storage.unit_of_work() as uow:
        lic = await uow.licenses.for_user(product.id, "556")
        assert lic is not None
        v, g = version.id, lic.key_generation
        await uow.copies.put_nodes(v, lic.id, g, True, b"one", b"[1]")  # no copy stored yet
        assert await uow.copies.nodes(v, lic.id, g, True) is None
        await uow.copies.put(v, lic.id, g, b"one")
        await uow.copies.put_nodes(v, lic.id, g, True, b"stale", b"[0]")  # another copy's
        assert await uow.copies.nodes(v, lic.id, g, True) is None
        await uow.copies.put_nodes(v, lic.id, g, True, b"one", b"[1]")
        await uow.copies.put_nodes(v, lic.id, g, False, b"one", b"[{}]")
        assert await uow.copies.nodes(v, lic.id, g, True) == b"[1]"
        assert await uow.copies.nodes(v, lic.id, g, False) == b"[{}]"
        assert await uow.copies.nodes(v, lic.id, g + 1, True) is None
        await uow.copies.put(v, lic.id, g, b"two")  # a remade copy forgets the old nodes
        assert await uow.copies.nodes(v, lic.id, g, True) is None
        assert await uow.copies.nodes(v, lic.id, g, False) is None
        await uow.copies.put_nodes(v, lic.id, g, True, b"two", b"[2]")
        await uow.copies.drop(license_id=lic.id)
        assert await uow.copies.nodes(v, lic.id, g, True) is None


COMPACT, TAGGED = FileForm(compact=True), FileForm(compact=False)


async def test_a_copys_update_files_are_named_beside_its_nodes_only(
        storage: Storage) -> None:
    uc, studio, product, version = await _uploaded(storage)
    target = c.LicenseTarget(product.id, "557")
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.GRANT))
    one, other = UpdateFile("a" * 64 + "-3", "b" * 64), UpdateFile("c" * 64 + "-4", "d" * 64)
    async with storage.unit_of_work() as uow:
        lic = await uow.licenses.for_user(product.id, "557")
        assert lic is not None
        v, g = version.id, lic.key_generation
        await uow.copies.put(v, lic.id, g, b"copy")
        await uow.copies.put_file(v, lic.id, g, COMPACT, b"[1]", one)  # no nodes kept yet
        assert await uow.copies.file(v, lic.id, g, COMPACT) is None
        await uow.copies.put_nodes(v, lic.id, g, True, b"copy", b"[1]")
        await uow.copies.put_file(v, lic.id, g, COMPACT, b"[0]", one)  # other nodes' file
        assert await uow.copies.file(v, lic.id, g, COMPACT) is None
        await uow.copies.put_file(v, lic.id, g, COMPACT, b"[1]", one)
        assert await uow.copies.file(v, lic.id, g, COMPACT) == one
        assert await uow.copies.file(v, lic.id, g, TAGGED) is None  # per form
        assert await uow.copies.file(v, lic.id, g, FileForm(True, zstd=True)) is None
        assert await uow.copies.file(v, lic.id, g + 1, COMPACT) is None
        assert await uow.copies.file_named(one.name) == FileOwner(v, lic.id, g, COMPACT,
                                                                   one.text_sha256)
        assert await uow.copies.file_named(other.name) is None
        await uow.copies.put(v, lic.id, g, b"remade")  # a remade copy forgets its files
        assert await uow.copies.file(v, lic.id, g, COMPACT) is None
        assert await uow.copies.file_named(one.name) is None
        await uow.copies.put_nodes(v, lic.id, g, False, b"remade", b"[2]")
        await uow.copies.put_file(v, lic.id, g, TAGGED, b"[2]", other)
        assert await uow.copies.file_named(other.name) == FileOwner(v, lic.id, g, TAGGED,
                                                                     other.text_sha256)
    # Revoking drops the license's copies, their files with them.
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.REVOKE))
    async with storage.unit_of_work() as uow:
        assert await uow.copies.file(v, lic.id, g, TAGGED) is None
        assert await uow.copies.file_named(other.name) is None


async def test_a_versions_node_templates_are_kept_per_form_and_outlive_its_copies(
        storage: Storage) -> None:
    _, _, product, version = await _uploaded(storage)
    async with storage.unit_of_work() as uow:
        assert await uow.copies.template(version.id, True) is None
        await uow.copies.put_template(version.id, True, b"compact one")
        await uow.copies.put_template(version.id, False, b"tagged")
        await uow.copies.put_template(version.id, True, b"compact two")  # remade: replaced
    async with storage.unit_of_work() as uow:
        await uow.copies.drop(product_id=product.id)  # new rules drop copies, not templates
        assert await uow.copies.template(version.id, True) == b"compact two"
        assert await uow.copies.template(version.id, False) == b"tagged"
    with pytest.raises(RuntimeError):
        async with storage.unit_of_work() as uow:
            await uow.copies.put_template(version.id, False, b"rolled back")
            raise RuntimeError("boom")
    async with storage.unit_of_work() as uow:
        assert await uow.copies.template(version.id, False) == b"tagged"
        # A withdrawn version's copies go (nobody downloads it again), and so do its
        # templates: they would be dead weight as large as the build.
        await uow.copies.drop(version_id=version.id)
        assert await uow.copies.template(version.id, True) is None
        assert await uow.copies.template(version.id, False) is None


async def test_sweeping_forgets_expired_nonces_and_past_counter_windows(
        storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        assert await uow.records.runtime.use_nonce("lic_1", "n" * 16, 1_000, 500)
        assert await uow.records.runtime.use_nonce("lic_1", "m" * 16, 2_000, 500)
        await uow.records.counters.hit(["old"], 60)
        await uow.records.counters.hit(["now"], 1_200)
        await uow.records.counters.hit(["forever"], 0)
    async with storage.unit_of_work() as uow:
        assert await uow.records.runtime.sweep_nonces(1_000) == 1
        assert await uow.records.counters.sweep(1_200) == 1  # the old window, never window 0
    async with storage.unit_of_work() as uow:
        # The expired nonce may be used again; the live one still may not.
        assert await uow.records.runtime.use_nonce("lic_1", "n" * 16, 3_000, 1_001)
        assert not await uow.records.runtime.use_nonce("lic_1", "m" * 16, 3_000, 1_001)
        assert await uow.records.counters.hit(["now"], 1_200) == [2]
        assert await uow.records.counters.hit(["old"], 60) == [1]
        assert await uow.records.counters.hit(["forever"], 0) == [2]  # window 0 is never swept


async def test_concurrent_nonces_are_each_accepted_once_across_batches(
        storage: Storage) -> None:
    nonces = [f"{i:016d}" for i in range(20)]
    # Every nonce twice, concurrently: one batch may hold both uses of a nonce.
    results = await asyncio.gather(*(storage.use_nonce("lic_b", n, 2_000, 1_000)
                                     for n in nonces + nonces))
    by_nonce: dict[str, list[bool]] = {}
    for n, ok in zip(nonces + nonces, results, strict=True):
        by_nonce.setdefault(n, []).append(ok)
    assert all(sorted(v) == [False, True] for v in by_nonce.values())
    # The batched path and the transaction's path see the same rows.
    async with storage.unit_of_work() as uow:
        assert not await uow.records.runtime.use_nonce("lic_b", nonces[0], 2_000, 1_000)
        # expired: usable again
        assert await uow.records.runtime.use_nonce("lic_b", nonces[0], 3_000, 2_000)


async def test_nonces_past_a_full_batch_refuse_repeats_and_live_ones_reuse_expired_ones(
        storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        assert await uow.records.runtime.use_nonce("lic_b", "live", 5_000, 1_000)
        assert await uow.records.runtime.use_nonce("lic_b", "stale", 1_500, 1_000)
    far = 2**40  # an expiry past 32 bits
    # 154 concurrent uses: on SQL a batch of MAX_BATCH (128) then the rest. n0..n27 come twice
    # within the first batch, n28..n49 once in each.
    calls = ([("lic_b", f"n{i % 100}") for i in range(150)]
             + [("lic_b", "live"), ("lic_b", "stale"), ("lic_b", "stale"), ("lic_c", "n0")])
    results = await asyncio.gather(*(storage.use_nonce(lic, n, far, 2_000) for lic, n in calls))
    firsts = {call: i for i, call in reversed(list(enumerate(calls)))}
    expected = [firsts[call] == i and call != ("lic_b", "live") for i, call in enumerate(calls)]
    assert results == expected
    async with storage.unit_of_work() as uow:
        assert not await uow.records.runtime.use_nonce("lic_b", "n0", far + 1, far - 1)
        assert await uow.records.runtime.use_nonce("lic_b", "n0", far + 2, far)


@pytest.mark.postgres
async def test_postgres_runs_one_prepared_statement_per_hot_path_step_whatever_the_batch_size(
        pg_schema_url: str) -> None:
    # psycopg prepares a statement once its text has run `prepare_threshold` (5) times on a
    # connection, and converts its placeholders once. A batch's text must therefore not
    # depend on its size. One connection, so every batch runs on the one we look at.
    store = PostgresStorage(pg_schema_url, min_size=1, max_size=1, hot_size=1)
    try:
        await store.migrate()
        for n, size in enumerate((1, 2, 3, 5, 8, 13, 128)):
            await asyncio.gather(*(store.runtime_read(["k", f"ip{i}"], 60, f"digest{i}", "2",
                                                      None if i % 2 else "g1")
                                   for i in range(size)))
            await asyncio.gather(*(store.use_nonce("lic_1", f"{n}-{i}", 2_000, 1_000)
                                   for i in range(size)))
        async with store.hot_pool.connection() as conn:  # the hot path's own pool
            cur = await conn.execute("SELECT DISTINCT statement FROM pg_prepared_statements")
            prepared = [str(r[0]) for r in await cur.fetchall()]
            await conn.rollback()
    finally:
        await store.close()
    for step in ("INSERT INTO rate_counters", "JOIN licenses", "INSERT INTO nonces"):
        assert len([s for s in prepared if step in s]) == 1, (step, prepared)


@pytest.mark.postgres
async def test_postgres_hot_path_runs_generic_plans_and_commits_without_waiting_for_disk(
        pg_schema_url: str) -> None:
    # PostgreSQL planned a batch of one afresh on every run (a custom plan: 0.45 ms, four
    # times running it), and a durable commit waits for the disk. The hot path's own
    # sessions use the generic plan and do not wait; units of work keep the defaults.
    store = PostgresStorage(pg_schema_url, min_size=1, max_size=1, hot_size=1)
    try:
        await store.migrate()
        for i in range(12):
            await store.runtime_read(["k"], 60, f"digest{i}", "2", None)
        async with store.hot_pool.connection() as conn:
            cur = await conn.execute(
                "SELECT current_setting('plan_cache_mode'), "
                "current_setting('synchronous_commit'), current_setting('search_path'), "
                "(SELECT SUM(generic_plans) FROM "
                "pg_prepared_statements WHERE statement LIKE '%JOIN licenses%'), "
                "(SELECT SUM(custom_plans) FROM pg_prepared_statements WHERE statement "
                "LIKE '%JOIN licenses%')")
            hot = await cur.fetchone()
        async with store.unit_of_work() as uow:
            plain = (await uow.db.rows("SELECT current_setting('plan_cache_mode'), "
                                       "current_setting('synchronous_commit'), "
                                       "current_setting('search_path')"))[0]
    finally:
        await store.close()
    assert hot is not None and hot[:2] == ("force_generic_plan", "off"), hot
    # the URL's own options (this test's schema) hold in both pools
    assert hot[2] == plain[2] and plain[2] != "\"$user\", public", hot
    assert hot[3] >= 6 and not hot[4], hot  # every run since it was prepared: generic
    assert tuple(plain[:2]) == ("auto", "on")


@pytest.mark.postgres
async def test_postgres_hot_path_sends_no_begin_or_commit(pg_schema_url: str,
                                                           tmp_path: Path) -> None:
    # Outside a unit of work the connections commit each statement themselves; an implicit
    # transaction would cost a BEGIN and a COMMIT trip per batch. libpq's own protocol trace
    # shows what went over the wire.
    store = PostgresStorage(pg_schema_url, min_size=1, max_size=1, hot_size=1)
    trace = tmp_path / "wire.trace"
    try:
        await store.migrate()
        with trace.open("w") as out:
            for pool in (store.pool, store.hot_pool):
                async with pool.connection() as conn:
                    conn.pgconn.trace(out.fileno())
            await asyncio.gather(*(store.runtime_read(["k"], 60, f"d{i}", "2", None)
                                   for i in range(3)))
            await store.use_nonce("lic_1", "nonce1", 2_000, 1_000)
            async with store.unit_of_work() as uow:
                await uow.records.runtime.use_nonce("lic_1", "nonce2", 2_000, 1_000)
            for pool in (store.pool, store.hot_pool):
                async with pool.connection() as conn:
                    conn.pgconn.untrace()
    finally:
        await store.close()
    wire = trace.read_text()
    assert "rate_counters" in wire and "INSERT INTO nonces" in wire
    sent = [line.split("\t", 4)[-1] for line in wire.splitlines() if "\tF\t" in line]
    # Only the unit of work opens and commits a transaction.
    assert sent.count(' "BEGIN"') == 1 and sent.count(' "COMMIT"') == 1, sent


@pytest.mark.postgres
def test_postgres_reads_an_array_literal_back_as_the_values_it_was_made_of() -> None:
    # The hot path passes a batch's rows as array literals; PostgreSQL itself is the judge
    # of whether quoting (or its absence, on the fast path) kept every value as it was.
    _postgres_or_skip()
    with psycopg.connect(PG_URL, autocommit=True) as conn:

        @settings(max_examples=300, deadline=None)
        @given(st.lists(st.none() | st.integers(min_value=-2**63, max_value=2**63 - 1)
                        | st.text(st.characters(exclude_categories=["Cs"],
                                                exclude_characters="\x00")), max_size=12))
        def read_back(values: list[str | int | None]) -> None:
            got = conn.execute("SELECT CAST(%s AS TEXT[])", [array_literal(values)]).fetchone()
            assert got is not None
            assert got[0] == [None if v is None else str(v) for v in values]

        read_back()


@pytest.mark.postgres
async def test_postgres_busy_wait_is_the_operators_choice(pg_schema_url: str) -> None:
    # Every pooled connection in use while the database answers: a request waits the
    # configured busy wait (LICORE_DATABASE_BUSY_WAIT), then is Unavailable (503).
    opened = open_storage(pg_schema_url, busy_wait=7)
    assert isinstance(opened, PostgresStorage) and opened.busy_wait == 7
    store = PostgresStorage(pg_schema_url, min_size=1, max_size=1, busy_wait=1)
    try:
        await store.migrate()
        async with store.pool.connection():
            started = asyncio.get_running_loop().time()
            with pytest.raises(Unavailable):
                async with store.unit_of_work():
                    pass
            waited = asyncio.get_running_loop().time() - started
        # the default would have waited thirty seconds; the choice was one
        assert waited < 10, waited
    finally:
        await store.close()
