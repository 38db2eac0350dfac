"""Issue 13, case 5: a copy of the database alone reveals no license key. Buyers' prepared
copies and their `/update` nodes are stored encrypted; SQLite overwrites deleted content.
The raw bytes of the SQLite files (database, WAL) and a `pg_dump` of the schema are searched
for every key issued in a scenario, a revoked one included."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote

import attrs
import pytest

from adapters_formats.codec import RobloxModelCodec
from adapters_storage import open_storage
from licore import commands as c
from licore.actors import ActingPerson, ActingStudio
from licore.licenses import LicenseEvent
from licore.model import License
from licore.services.deps import Deps
from licore.services.wiring import UseCases
from tests.support.fakes import make_deps
from tests.support.models import product_model
from tests.support.scenario import build_world


async def _license(deps: Deps, product_id: str, platform_id: str) -> tuple[License, str]:
    async with deps.storage.unit_of_work() as uow:
        lic = await uow.licenses.for_user(product_id, platform_id)
    assert lic is not None and lic.key_ciphertext is not None
    return lic, deps.vault.decrypt(lic.key_ciphertext, lic.id)


async def _scenario(deps: Deps) -> list[str]:
    """Keys handed to buyers through every path that stores a copy; one of them revoked
    after its copy was stored."""
    world = await build_world(deps)
    uc = UseCases.of(deps)
    studio, buyer = ActingStudio(world.studio.id), ActingPerson(world.buyer.id)
    product = await uc.products.create(studio, c.CreateProduct("Secret keeper"))
    # Unprotected by the seller's choice: the copies then hold the key in the clear, the
    # worst case for what the database keeps.
    await uc.packages.change_settings(studio, c.ChangeSettings(product.id,
                                                               protection=c.JsonValue({})))
    data = RobloxModelCodec().write(product_model(extra=3))
    version = (await uc.packages.upload(studio, c.UploadVersion(product.id, "1", data))).version
    await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    target = c.LicenseTarget(product.id, world.buyer.platform_id)
    keys = []
    for round_ in range(2):
        await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.GRANT))
        lic, key = await _license(deps, product.id, world.buyer.platform_id)
        keys.append(key)
        got = await uc.library.download(buyer, c.DownloadCopy(product.id))
        assert key.encode() in got.data  # the buyer's copy carries the key ...
        for nodes in ("tagged", "compact"):
            update = c.Update(c.NumberOrText(world.buyer.platform_id), product.id, key,
                              f"nonce{round_}{nodes}0123456789", None, nodes)
            assert await uc.runtime.update(update, "127.0.0.1") is not None
        async with deps.storage.unit_of_work() as uow:  # ... and is kept, encrypted
            stored = await uow.copies.get(version.id, lic.id, lic.key_generation)
            assert stored is not None and key.encode() not in stored
            assert await uow.copies.nodes(version.id, lic.id, lic.key_generation, True)
        if round_ == 0:
            await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.REVOKE))
    return keys


def _raw_bytes(database_url: str, tmp_path: Path) -> bytes:
    if database_url.startswith("sqlite"):
        path = Path(database_url.removeprefix("sqlite:///"))
        files = [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-journal")) if p.exists()]
        return b"".join(p.read_bytes() for p in files)
    pg_dump = shutil.which("pg_dump")
    assert pg_dump is not None, "pg_dump is needed for this test"
    schema = re.search(r"search_path%3D(\w+)", database_url)
    assert schema is not None
    base = database_url.split("?")[0]
    out = tmp_path / "dump.sql"
    subprocess.run([pg_dump, "--dbname", base, "--schema", unquote(schema.group(1)),
                    "--file", str(out)], check=True, timeout=60)
    return out.read_bytes()


@pytest.mark.slow
async def test_no_license_key_in_the_database_files_or_a_dump(database_url: str,
                                                              tmp_path: Path) -> None:
    storage = open_storage(database_url)
    await storage.migrate()
    deps = attrs.evolve(make_deps(storage))
    try:
        keys = await _scenario(deps)
    finally:
        await storage.close()
    raw = _raw_bytes(database_url, tmp_path)
    assert len(raw) > 10_000  # the copies are in there, as ciphertext
    assert len(set(keys)) == 2
    for key in keys:
        # Written plain, and as UTF-16 (how a Roblox model may carry a string), nowhere.
        assert key.encode() not in raw
        assert key.encode("utf-16-le") not in raw


async def test_sqlite_overwrites_deleted_content(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:///{tmp_path / 'x.db'}")
    await storage.migrate()
    async with storage.unit_of_work() as uow:
        await uow.records.counters.hit(["deleted-marker-0123456789abcdef"], 1)
    async with storage.unit_of_work() as uow:
        assert await uow.records.counters.sweep(2) == 1
    await storage.close()
    import sqlite3

    con = sqlite3.connect(tmp_path / "x.db")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    assert b"deleted-marker-0123456789abcdef" not in (tmp_path / "x.db").read_bytes()
