"""`licore backup` while the server answers, and the documented restore: the copy served by a
fresh server with the same key-encryption key keeps every license key working and every
sealed answer opening (docs/operators.md, "Backups"); with another key it refuses to start."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from licore.services.deps import Deps
from licore.services.wiring import UseCases
from tests.conftest import PG_URL
from tests.http.e2e import People, auth, core, owner_key
from tests.support.fakes import TEST_KEK
from tests.support.server import LICORE, Server, running_server
from tests.support.spec_verifier import verify

STUDIO = ("packages:read packages:write products:read products:write licenses:read "
          "licenses:write")
DATA = {"level": 7, "items": ["sword"]}
# the load below is one key and one address as fast as they go: no limit may refuse it
BUSY = {"LICORE_PARTNER_RATE_LIMIT": "1000000", "LICORE_RUNTIME_KEY_RATE_LIMIT": "1000000",
        "LICORE_RUNTIME_IP_RATE_LIMIT": "1000000"}


def licore(database_url: str, cwd: Path, *args: str, kek: bytes = TEST_KEK,
           path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    env |= {"LICORE_DATABASE_URL": database_url, "LICORE_KEK": kek.hex(),
            "LICORE_DATA_DIR": str(cwd / "data")}
    if path is not None:
        env["PATH"] = path
    return subprocess.run([str(LICORE), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def v1(server: Server, key: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    r = httpx.post(f"{server.url}/v1{path}", headers=auth(key), json=body, timeout=30)
    assert r.status_code == 200, (path, r.text)
    answer: dict[str, Any] = r.json()
    return answer


def keys_of(database_url: str, product: str) -> dict[str, str]:
    """Every license key of the product, by buyer, as the database keeps it (sealed)."""

    async def read(d: Deps) -> dict[str, str]:
        async with d.storage.unit_of_work() as uow:
            found = (await uow.licenses.of_product(product, None, None)).items
        return {lc.platform_id: d.vault.decrypt(lc.key_ciphertext, lc.id) for lc in found
                if lc.key_ciphertext is not None}

    return core(database_url, read)


def passes(server: Server, product: str, buyer: str, key: str) -> bool:
    r = httpx.post(f"{server.url}/runtime/check", json={"user_id": buyer, "product_id": product,
                                                         "key": key}, timeout=30)
    return bool(r.json()["success"])


def unlocks(server: Server, product: str, buyer: str, key: str) -> None:
    nonce = secrets.token_hex(16)
    r = httpx.post(f"{server.url}/runtime/unlock", json={
        "user_id": buyer, "product_id": product, "key": key, "nonce": nonce, "game_id": "5"})
    assert r.json()["ok"] is True, r.text
    assert verify(key, nonce, r.json(), int(time.time()))["data"] == DATA


@contextmanager
def load(server: Server, key: str, product: str, buyer: str, license_key: str,
         ) -> Iterator[list[int]]:
    """Runtime checks and new licenses (writes) without pause until the block ends."""
    statuses: list[int] = []
    stop = threading.Event()

    def work() -> None:
        n = 0
        with httpx.Client(base_url=server.url, timeout=30) as http:
            while not stop.is_set():
                n += 1
                statuses.append(http.post("/runtime/check", json={
                    "user_id": buyer, "product_id": product, "key": license_key}).status_code)
                if n <= 20:  # some writes in flight too; few, so the restore has few to try
                    statuses.append(http.post("/v1/licenses", headers=auth(key), json={
                        "product_id": product, "user": str(900_000 + n)}).status_code)

    thread = threading.Thread(target=work)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while len(statuses) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        yield statuses
    finally:
        stop.set()
        thread.join()


async def _people(d: Deps) -> People:
    operator = UseCases.of(d).operator
    owner = await operator.add_account("owner8", "18", None)
    studio = await operator.add_studio("Studio8", "owner8")
    client = await operator.add_client("Shop tool", "Sells things", STUDIO)
    return People(owner.id, "", "", studio.id, client.id)


def shop(server: Server) -> tuple[str, str, str, str]:
    """A studio key, a product with unlock data, and one buyer's license key."""
    people = core(server.database_url, _people)  # in this process: quicker than the CLI
    key = owner_key(server, people, STUDIO)
    product = v1(server, key, "/products", {"title": "Backed up"})["id"]
    v1(server, key, "/packages/settings", {"product_id": product, "unlock_data": DATA})
    v1(server, key, "/licenses", {"product_id": product, "user": "77"})
    return key, product, "77", keys_of(server.database_url, product)["77"]


def backed_up_under_load(server: Server, tmp_path: Path, target: Path,
                         ) -> tuple[str, dict[str, str]]:
    key, product, buyer, license_key = shop(server)
    before = keys_of(server.database_url, product)
    with load(server, key, product, buyer, license_key) as statuses:
        done = licore(server.database_url, tmp_path, "backup", str(target))
        during = len(statuses)
    assert done.returncode == 0, done.stderr
    assert "Keep the key-encryption key too" in done.stdout
    assert TEST_KEK.hex() not in done.stdout + done.stderr
    assert during >= 10 and set(statuses) == {200}, statuses  # served throughout
    return product, before


def restored_works(url: str, product: str, before: dict[str, str], tmp_path: Path) -> None:
    after = keys_of(url, product)
    assert before.items() <= after.items()  # the keys made before the backup, unchanged
    with running_server(url) as restored:
        for buyer, key in after.items():
            assert passes(restored, product, buyer, key), buyer
        unlocks(restored, product, "77", before["77"])
    # the copy is of no use under another key-encryption key, and says so
    other = licore(url, tmp_path, "account", "list", kek=bytes(range(2, 34)))
    assert other.returncode != 0 and "key-encryption key" in other.stderr


def test_sqlite_backup_under_load_restores_into_a_fresh_server(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'licore.db'}"
    target = tmp_path / "licore-backup.db"
    with running_server(url, **BUSY) as server:
        product, before = backed_up_under_load(server, tmp_path, target)
        again = licore(url, tmp_path, "backup", str(target))
        assert again.returncode != 0 and "already exists" in again.stderr  # never overwritten
    assert target.stat().st_mode & 0o077 == 0  # like the kek file: the owner's alone
    fresh = tmp_path / "restored"
    fresh.mkdir()
    shutil.copy(target, fresh / "licore.db")  # the documented restore: the file, back
    restored_works(f"sqlite:///{fresh / 'licore.db'}", product, before, tmp_path)


@pytest.mark.postgres
def test_postgres_backup_under_load_restores_into_a_fresh_database(
        tmp_path: Path, pg_schema_url: str) -> None:
    psql = shutil.which("psql")
    assert psql and shutil.which("pg_dump"), "the PostgreSQL client tools are installed here"
    target = tmp_path / "licore-backup.sql"
    with running_server(pg_schema_url, **BUSY) as server:
        product, before = backed_up_under_load(server, tmp_path, target)
    database = "licore_restore_" + secrets.token_hex(4)
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    try:
        base = PG_URL.rsplit("/", 1)[0] + f"/{database}"
        done = subprocess.run([psql, "--quiet", "-v", "ON_ERROR_STOP=1", "-f", str(target),
                               base], capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        schema = pg_schema_url.rsplit("search_path%3D", 1)[1]
        restored_works(f"{base}?options=-csearch_path%3D{schema}", product, before, tmp_path)
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {database} WITH (FORCE)")


def test_without_pg_dump_one_line_says_what_to_install(tmp_path: Path,
                                                       pg_schema_url: str) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = licore(pg_schema_url, tmp_path, "backup", str(tmp_path / "x.sql"), path=str(empty))
    assert done.returncode != 0 and done.stderr.count("\n") == 1, done.stderr
    assert "pg_dump is not on PATH" in done.stderr and "postgresql-client" in done.stderr
    assert not (tmp_path / "x.sql").exists()
