"""A product is protected until its seller says otherwise: new products' rules protect every
script with `light`, a buyer's copy then shows neither the sources as written nor the key,
rules `{}` (the seller's explicit choice) deliver the scripts as written, and products left
at the old default `{}` are given the protecting default by a migration."""

from __future__ import annotations

import json

from adapters_formats.codec import RobloxModelCodec
from adapters_storage import open_storage
from adapters_storage.schema import MIGRATIONS, statements
from licore import commands as c
from licore.actors import ActingPerson, ActingStudio
from licore.builds.tree import source_of
from licore.licenses import LicenseEvent
from licore.protection import (
    DEFAULT_RULES,
    DEFAULT_RULES_JSON,
    PRESETS,
    ProtectionSettings,
    parse_protection_settings,
)
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import make_deps
from tests.support.models import LICENSE_SCRIPT, PLAIN_SCRIPT, product_model
from tests.support.scenario import build_world


async def _copy_scripts(storage: Storage, protection: object | None) -> tuple[dict[str, str],
                                                                              str]:
    """The buyer's copy's scripts by name, and the buyer's key."""
    deps = make_deps(storage)
    world = await build_world(deps)
    uc = UseCases.of(deps)
    studio = ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Kit"))
    if protection is not None:
        await uc.packages.change_settings(studio, c.ChangeSettings(
            product.id, protection=c.JsonValue(protection)))
    data = RobloxModelCodec().write(product_model())
    version = (await uc.packages.upload(studio, c.UploadVersion(product.id, "1", data))).version
    await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    await uc.lifecycle.change(studio, c.ChangeLicense(
        c.LicenseTarget(product.id, world.buyer.platform_id), LicenseEvent.GRANT))
    async with storage.unit_of_work() as uow:
        lic = await uow.licenses.for_user(product.id, world.buyer.platform_id)
    assert lic is not None and lic.key_ciphertext is not None
    key = deps.vault.decrypt(lic.key_ciphertext, lic.id)
    got = await uc.library.download(ActingPerson(world.buyer.id), c.DownloadCopy(product.id))
    model = RobloxModelCodec().read(got.data)
    return {path.rsplit("/", 1)[-1]: source_of(s).decode() for path, s in model.scripts()}, key


async def test_a_new_product_protects_every_script(storage: Storage) -> None:
    settings = parse_protection_settings(json.loads(DEFAULT_RULES_JSON))
    for path in ("Product/Greeter", "Workspace/Deep/Folder/LicenseCheck", "Main"):
        assert settings.transforms_for(path) == PRESETS["light"]
    scripts, key = await _copy_scripts(storage, None)
    assert set(scripts) == {"LicenseCheck", "Greeter"}
    assert key not in scripts["LicenseCheck"]  # the key is among the encrypted strings
    assert "-- greet" not in scripts["Greeter"] and scripts["Greeter"] != PLAIN_SCRIPT


async def test_rules_of_nothing_are_the_sellers_choice_and_deliver_sources_as_written(
        storage: Storage) -> None:
    scripts, key = await _copy_scripts(storage, {})
    assert scripts["Greeter"] == PLAIN_SCRIPT
    assert scripts["LicenseCheck"] == LICENSE_SCRIPT.replace("LICORE_LICENSE_KEY", key)


async def test_products_left_at_the_old_default_are_protected_by_the_migration(
        database_url: str) -> None:
    storage = open_storage(database_url)
    dialect = "sqlite" if database_url.startswith("sqlite") else "postgresql"
    last = len(MIGRATIONS)
    try:
        async with storage.unit_of_work() as uow:  # a database as it was before it
            db = uow.db
            await db.run("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)")
            # every migration before the one that protects products left at `{}`
            before = next(n for n, m in enumerate(MIGRATIONS) if any("server_facts" in s
                                                                      for s in m))
            for version, migration in enumerate(MIGRATIONS[:before], start=1):
                for sql in statements(dialect, migration):
                    await db.run(sql)
                await db.run("INSERT INTO schema_migrations (version) VALUES (?)", [version])
            await db.run("INSERT INTO accounts VALUES ('acc_1', '1', 'o', 'o', NULL, 0)")
            await db.run("INSERT INTO studios VALUES ('std_1', 'S', 'acc_1', 3, 0)")
            for pid, rules in (("prd_1", "{}"), ("prd_2", '{"rules":[]}')):
                await db.run(
                    "INSERT INTO products (id, studio_id, slug, title, tagline, description, "
                    "price_credit, discoverable, licensing_enabled, created_at, updated_at, "
                    "placeholder, verify_scripts, unlock_data, protection) VALUES "
                    "(?, 'std_1', ?, 'T', '', '', 0, ?, ?, 0, 0, 'P', ?, 'null', ?)",
                    [pid, pid, False, True, False, rules])
        assert last > 1
        await storage.migrate()
        async with storage.unit_of_work() as uow:
            first, second = await uow.products.by_id("prd_1"), await uow.products.by_id("prd_2")
        assert first is not None and first.protection == DEFAULT_RULES
        # rules written by a seller, even an empty list, are theirs and stay
        assert second is not None and second.protection == ProtectionSettings()
    finally:
        await storage.close()
