"""The database knows its key-encryption key by a fingerprint: a process holding another key
refuses to start, in one line naming the setting to fix, instead of failing every buyer."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import attrs
import httpx
import pytest

from adapters_crypto import AesGcmKeyVault
from adapters_formats.codec import RobloxModelCodec
from adapters_storage import open_storage
from adapters_storage.key_fingerprint import Verdict, settle
from licore.errors import KeyUnreadable
from licore.services.deps import Deps
from licore.services.wiring import UseCases
from tests.http.e2e import People, auth, core, license_key, obtain_key, owner_key
from tests.support.models import product_model
from tests.support.records import license, seed
from tests.support.server import LICORE, free_port, running_server

KEK_A = bytes(range(32))
KEK_B = bytes(range(1, 33))
STUDIO = "packages:write products:write licenses:write"
LIBRARY = "library:read library:download"


def run(tmp_path: Path, database_url: str, kek: bytes | None, *args: str,
        ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    env.update(LICORE_DATABASE_URL=database_url, LICORE_DATA_DIR=str(tmp_path / "data"))
    if kek is not None:
        env["LICORE_KEK"] = kek.hex()
    command = list(args) if args and args[0].startswith("/") else [str(LICORE), *args]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0
    lines = (done.stderr + done.stdout).strip().splitlines()
    assert len(lines) == 1, done.stderr + done.stdout
    assert "Traceback" not in lines[0]
    return lines[0]


def test_serve_with_another_kek_refuses_in_one_line(tmp_path: Path, database_url: str) -> None:
    assert run(tmp_path, database_url, KEK_A, "migrate").returncode == 0  # records A's
    served = run(tmp_path, database_url, KEK_B, "serve", "--port", str(free_port()))
    line = refusal(served)
    assert "key-encryption key" in line and "LICORE_KEK" in line, line
    for secret in (KEK_A, KEK_B):  # no key material, in any spelling
        assert secret.hex() not in line and secret.hex().upper() not in line
    assert AesGcmKeyVault(KEK_A).fingerprint() not in line
    # the same key still starts: the refusal is about the key, not the database
    assert run(tmp_path, database_url, KEK_A, "account", "list").returncode == 0


def test_a_host_without_the_shared_kek_names_the_file_it_made(tmp_path: Path,
                                                              database_url: str) -> None:
    assert run(tmp_path, database_url, KEK_A, "migrate").returncode == 0
    line = refusal(run(tmp_path, database_url, None, "account", "list"))
    assert "LICORE_KEK is unset" in line and str(tmp_path / "data" / "kek") in line, line
    assert not (tmp_path / "data" / "kek").exists()  # the key it made for this start is gone


async def test_a_database_without_a_fingerprint_adopts_only_a_key_that_opens_its_keys(
        database_url: str) -> None:
    a, b = AesGcmKeyVault(KEK_A), AesGcmKeyVault(KEK_B)
    storage = open_storage(database_url)
    try:
        await storage.migrate()
        async with storage.unit_of_work() as uow:  # made before fingerprints were kept
            await seed(uow)
            sealed = attrs.evolve(license(1), key_ciphertext=a.encrypt("LK-1", "lic_1"))
            assert await uow.licenses.add(sealed)
        assert (await settle(storage, b.fingerprint(), b.opens)).verdict is Verdict.CANNOT_OPEN
        assert (await settle(storage, a.fingerprint(), a.opens)).verdict is Verdict.RECORDED
        assert (await settle(storage, a.fingerprint(), a.opens)).verdict is Verdict.MATCHES
        assert (await settle(storage, b.fingerprint(), b.opens)).verdict is Verdict.DIFFERS
    finally:
        await storage.close()


async def test_a_fresh_database_takes_the_first_key(database_url: str) -> None:
    a, b = AesGcmKeyVault(KEK_A), AesGcmKeyVault(KEK_B)
    storage = open_storage(database_url)
    try:
        await storage.migrate()
        assert (await settle(storage, b.fingerprint(), b.opens)).verdict is Verdict.RECORDED
        assert (await settle(storage, a.fingerprint(), a.opens)).verdict is Verdict.DIFFERS
    finally:
        await storage.close()


def test_a_key_that_does_not_open_is_unavailable_not_a_crash(
        caplog: pytest.LogCaptureFixture) -> None:
    sealed = AesGcmKeyVault(KEK_A).encrypt("LK-secret-1", "lic_1")
    blob = AesGcmKeyVault(KEK_A).encrypt_blob(b"copy", "v|lic_1|1")
    other = AesGcmKeyVault(KEK_B)
    with pytest.raises(KeyUnreadable) as raised:
        other.decrypt(sealed, "lic_1")
    assert raised.value.status == 503
    with pytest.raises(KeyUnreadable):
        other.decrypt_blob(blob, "v|lic_1|1")
    assert "LICORE_KEK" in caplog.text and "LK-secret-1" not in caplog.text


async def _seller_and_buyer(d: Deps) -> People:
    operator = UseCases.of(d).operator
    owner = await operator.add_account("owner5", "15", None)
    buyer = await operator.add_account("buyer5", "25", None)
    studio = await operator.add_studio("Studio5", "owner5")
    client = await operator.add_client("Kit tool", "Sells kits", f"{STUDIO} {LIBRARY}")
    return People(owner.id, buyer.id, "", studio.id, client.id)


def test_a_stored_key_that_does_not_open_answers_503_never_500(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'licore.db'}"
    with running_server(url) as server:
        people = core(url, _seller_and_buyer)
        seller = auth(owner_key(server, people, STUDIO))
        product = httpx.post(f"{server.url}/v1/products", headers=seller,
                             json={"title": "Kit"}).json()["id"]
        version = httpx.post(f"{server.url}/v1/packages/versions", headers=seller,
                             params={"product_id": product, "version": "1"},
                             content=RobloxModelCodec().write(product_model())).json()
        httpx.post(f"{server.url}/v1/packages/publish", headers=seller, json={
            "product_id": product, "version_id": version["version"]["id"]}).raise_for_status()
        httpx.post(f"{server.url}/v1/licenses", headers=seller,
                   json={"product_id": product, "user": "25"}).raise_for_status()
        buyer = auth(obtain_key(server, people, LIBRARY, people.buyer_id, None))
        key = license_key(server, product, "25")

        async def reseal_under_another_kek(d: Deps) -> None:  # a row from elsewhere
            async with d.storage.unit_of_work() as uow:
                lic = await uow.licenses.for_user(product, "25")
                assert lic is not None
                sealed = AesGcmKeyVault(KEK_B).encrypt(key, lic.id)
                await uow.db.run(  # type: ignore[attr-defined]
                    "UPDATE licenses SET key_ciphertext = ? WHERE id = ?", [sealed, lic.id])

        core(url, reseal_under_another_kek)
        got = httpx.get(f"{server.url}/v1/library/download", headers=buyer,
                        params={"product_id": product})
        assert got.status_code == 503, got.text
        assert got.json()["error"] == "temporarily_unavailable"
        assert "Retry-After" in got.headers
        log = server.log_showing("LICORE_KEK")
    assert "LICORE_KEK" in log and key not in log and "InvalidTag" not in log


HYPERCORN = LICORE.parent / "hypercorn"


def test_the_asgi_entry_point_under_hypercorn_refuses_another_kek(tmp_path: Path,
                                                                   database_url: str) -> None:
    """`hypercorn licore_cli.asgi:app`, the application run under another ASGI server,
    checks the key as `licore serve` does: one line, and nothing served."""
    assert run(tmp_path, database_url, KEK_A, "migrate").returncode == 0  # records A's
    port = free_port()
    served = run(tmp_path, database_url, KEK_B, str(HYPERCORN), "licore_cli.asgi:app",
                 "--bind", f"127.0.0.1:{port}")
    lines = (served.stderr + served.stdout).strip().splitlines()
    # Hypercorn 0.18 reports its worker's exit status as 0; the line and the port are what
    # the operator sees.
    assert len(lines) == 1 and lines[0].startswith("licore: "), lines
    assert "key-encryption key" in lines[0] and "LICORE_KEK" in lines[0], lines[0]
    assert KEK_A.hex() not in lines[0] and KEK_B.hex() not in lines[0]
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
    # the right key serves under the same command
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    env.update(LICORE_DATABASE_URL=database_url, LICORE_DATA_DIR=str(tmp_path / "data"),
               LICORE_KEK=KEK_A.hex())
    server = subprocess.Popen([str(HYPERCORN), "licore_cli.asgi:app", "--bind",
                               f"127.0.0.1:{port}"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        else:
            pytest.fail("hypercorn with the right key did not become ready")
        assert server.poll() is None
    finally:
        server.terminate()
        server.wait(30)
