"""`licore kek rotate` on both databases, as docs/operators.md walks it for several hosts: a
host of the old key and a host holding both keys (`LICORE_KEK_PREVIOUS`) serve one database;
the rotation re-seals every license key and stored copy in batches while the second host
answers runtime checks and grants licenses; afterwards a host of the new key alone serves
everything made before (a sealed /runtime/unlock that opens under the buyer's key, the
buyer's stored copy), a host of the old key alone refuses to start in one line, and a run
again finds nothing left to re-seal."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import attrs
import httpx

from adapters_crypto import AesGcmKeyVault
from adapters_formats.codec import RobloxModelCodec
from adapters_storage import open_storage
from licore.services.deps import Deps
from licore.services.wiring import UseCases
from tests.cli.test_backup import DATA, load, passes, unlocks, v1
from tests.cli.test_kek_check import refusal
from tests.http.e2e import People, auth, core, license_key, obtain_key, owner_key
from tests.support.fakes import TEST_KEK
from tests.support.models import product_model
from tests.support.records import license, seed
from tests.support.server import LICORE, Server, running_server

OLD, NEW = TEST_KEK, bytes(range(100, 132))
STUDIO = ("packages:read packages:write products:read products:write licenses:read "
          "licenses:write")
LIBRARY = "library:read library:download"


def licore(database_url: str, cwd: Path, *args: str, **keys: bytes
           ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    env |= {"LICORE_DATABASE_URL": database_url, "LICORE_DATA_DIR": str(cwd / "data")}
    env |= {f"LICORE_{name.upper()}": key.hex() for name, key in keys.items()}
    return subprocess.run([str(LICORE), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


async def _people(d: Deps) -> People:
    operator = UseCases.of(d).operator
    owner = await operator.add_account("owner9", "19", None)
    buyer = await operator.add_account("buyer9", "29", None)
    studio = await operator.add_studio("Studio9", "owner9")
    client = await operator.add_client("Kit tool", "Sells kits", f"{STUDIO} {LIBRARY}")
    return People(owner.id, buyer.id, "", studio.id, client.id)


def download(server: Server, library_key: str, product: str) -> bytes:
    got = httpx.get(f"{server.url}/v1/library/download", headers=auth(library_key),
                    params={"product_id": product}, timeout=60)
    assert got.status_code == 200, got.text
    return got.content


def sealed_rows(database_url: str, sql: str = "SELECT id, key_ciphertext FROM licenses "
                "WHERE key_ciphertext IS NOT NULL") -> list[tuple[Any, ...]]:
    """Rows of an id and sealed columns, as the database holds them."""
    async def read() -> list[tuple[Any, ...]]:
        storage = open_storage(database_url)
        try:
            async with storage.unit_of_work() as uow:
                rows = await uow.db.rows(sql)
        finally:
            await storage.close()
        return [(str(row[0]), *(bytes(c) for c in row[1:])) for row in rows]

    return asyncio.run(read())


def test_rotation_while_serving_then_the_new_key_alone(tmp_path: Path,
                                                       database_url: str) -> None:
    with running_server(database_url) as old_host:  # LICORE_KEK: the old key
        people = core(database_url, _people)
        seller = owner_key(old_host, people, STUDIO)
        product = v1(old_host, seller, "/products", {"title": "Kit"})["id"]
        v1(old_host, seller, "/packages/settings", {"product_id": product, "unlock_data": DATA})
        version = httpx.post(f"{old_host.url}/v1/packages/versions", headers=auth(seller),
                             params={"product_id": product, "version": "1"},
                             content=RobloxModelCodec().write(product_model())).json()
        v1(old_host, seller, "/packages/publish",
           {"product_id": product, "version_id": version["version"]["id"]})
        v1(old_host, seller, "/licenses", {"product_id": product, "user": "29"})
        buyer_key = license_key(old_host, product, "29")
        library = obtain_key(old_host, people, LIBRARY, people.buyer_id, None)
        copy = download(old_host, library, product)  # stored, sealed, for the next time
        hook = v1(old_host, seller, "/webhooks", {"url": "https://1.1.1.1/hook",
                                                  "events": ["product.changed"]})
        rotated_hook = v1(old_host, seller, "/webhooks/rotate", {"id": hook["id"]})

        with running_server(database_url, LICORE_KEK=NEW.hex(),
                            LICORE_KEK_PREVIOUS=OLD.hex()) as both:
            assert passes(both, product, "29", buyer_key)
            # until the rotation the database names the old key: what the host holding both
            # seals, the host of the old key opens
            v1(both, seller, "/licenses", {"product_id": product, "user": "30"})
            assert passes(old_host, product, "30", license_key(old_host, product, "30"))
            with load(both, seller, product, "29", buyer_key) as statuses:
                rotated = licore(database_url, tmp_path, "kek", "rotate", "--batch", "2",
                                 kek=OLD, new_kek=NEW)
            assert rotated.returncode == 0, rotated.stderr
            assert set(statuses) == {200}, sorted(set(statuses))
            shown = rotated.stdout
            assert "licenses: 2 of" in shown and "prepared_copies: 1 of 1 rows" in shown, shown
            assert NEW.hex() not in shown + rotated.stderr
            unlocks(both, product, "29", buyer_key)  # answered through the window

    # every host given the new key, the rotation run again: nothing is left under the old one
    again = licore(database_url, tmp_path, "kek", "rotate", kek=OLD, new_kek=NEW)
    assert again.returncode == 0, again.stderr
    last = licore(database_url, tmp_path, "kek", "rotate", kek=OLD, new_kek=NEW).stdout
    assert "re-sealed 0 secrets" in last and "nothing is left" in last, last
    rows = sealed_rows(database_url)
    assert len(rows) > 2
    assert all(AesGcmKeyVault(NEW).opens(c, i) and not AesGcmKeyVault(OLD).opens(c, i)
               for i, c in rows)
    # the webhook's secret and the one it replaced (still accepted) open under the new key
    ((endpoint, secret, previous),) = sealed_rows(
        database_url, "SELECT id, secret_ciphertext, previous_ciphertext FROM webhook_endpoints")
    assert AesGcmKeyVault(NEW).decrypt(secret, endpoint) == rotated_hook["secret"]
    assert AesGcmKeyVault(NEW).decrypt(previous, endpoint) == hook["secret"]

    line = refusal(licore(database_url, tmp_path, "account", "list", kek=OLD))
    assert "replaced by a rotation" in line and "LICORE_KEK" in line, line
    # a rotation without a new key, or to the key in use, is refused in one line
    assert "set LICORE_NEW_KEK" in refusal(licore(database_url, tmp_path, "kek", "rotate",
                                                  kek=NEW))
    assert "make a new one" in refusal(licore(database_url, tmp_path, "kek", "rotate",
                                              kek=NEW, new_kek=NEW))
    with running_server(database_url, LICORE_KEK=NEW.hex()) as new_host:
        assert passes(new_host, product, "29", buyer_key)
        unlocks(new_host, product, "29", buyer_key)  # made before, opens under its key
        assert download(new_host, library, product) == copy  # the stored copy, re-sealed


def test_a_rotation_cut_short_is_resumed_by_running_it_again(tmp_path: Path) -> None:
    """Killed between two batches, the rotation leaves every row sealed under one key or the
    other (each batch is one transaction), and the next run finishes it."""
    url = f"sqlite:///{tmp_path / 'licore.db'}"
    many = 2000

    async def fill() -> None:
        storage = open_storage(url)
        old = AesGcmKeyVault(OLD)
        try:
            await storage.migrate()
            async with storage.unit_of_work() as uow:
                await seed(uow)
                for n in range(many):
                    sealed = attrs.evolve(license(n, platform_id=str(10_000 + n)),
                                          key_ciphertext=old.encrypt(f"LK-{n}", f"lic_{n}"))
                    assert await uow.licenses.add(sealed)
        finally:
            await storage.close()

    asyncio.run(fill())
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    env |= {"LICORE_DATABASE_URL": url, "LICORE_DATA_DIR": str(tmp_path / "data"),
            "LICORE_KEK": OLD.hex(), "LICORE_NEW_KEK": NEW.hex()}
    cut = subprocess.Popen([str(LICORE), "kek", "rotate", "--batch", "1"], cwd=tmp_path,
                           env=env, stdout=subprocess.PIPE, text=True)
    assert cut.stdout is not None
    for line in cut.stdout:  # a few batches done: cut it short
        if line.startswith("licenses: 3 of"):
            cut.kill()
            break
    assert cut.wait(60) == -9, "the rotation ended before it could be cut short"
    cut.stdout.close()
    rows = sealed_rows(url)
    under_new = sum(AesGcmKeyVault(NEW).opens(c, i) for i, c in rows)
    assert 3 <= under_new < many
    assert under_new + sum(AesGcmKeyVault(OLD).opens(c, i) for i, c in rows) == many

    resumed = subprocess.run([str(LICORE), "kek", "rotate"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert f"re-sealed {many - under_new} secrets" in resumed.stdout, resumed.stdout
    assert all(AesGcmKeyVault(NEW).opens(c, i) for i, c in sealed_rows(url))
