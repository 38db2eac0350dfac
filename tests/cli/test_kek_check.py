"""The database knows its key-encryption key by a fingerprint: a process holding another key
refuses to start, in one line naming the setting to fix, instead of failing every buyer."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import attrs
import pytest

from adapters_crypto import AesGcmKeyVault
from adapters_storage import open_storage
from adapters_storage.key_fingerprint import Verdict, settle
from licore.errors import KeyUnreadable
from tests.support.records import license, seed
from tests.support.server import LICORE, free_port

KEK_A = bytes(range(32))
KEK_B = bytes(range(1, 33))


def run(tmp_path: Path, database_url: str, kek: bytes | None, *args: str,
        ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    env.update(LICORE_DATABASE_URL=database_url, LICORE_DATA_DIR=str(tmp_path / "data"))
    if kek is not None:
        env["LICORE_KEK"] = kek.hex()
    return subprocess.run([str(LICORE), *args], cwd=tmp_path, env=env, capture_output=True,
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
        assert await settle(storage, b.fingerprint(), b.opens) is Verdict.CANNOT_OPEN
        assert await settle(storage, a.fingerprint(), a.opens) is Verdict.RECORDED
        assert await settle(storage, a.fingerprint(), a.opens) is Verdict.MATCHES
        assert await settle(storage, b.fingerprint(), b.opens) is Verdict.DIFFERS
    finally:
        await storage.close()


async def test_a_fresh_database_takes_the_first_key(database_url: str) -> None:
    a, b = AesGcmKeyVault(KEK_A), AesGcmKeyVault(KEK_B)
    storage = open_storage(database_url)
    try:
        await storage.migrate()
        assert await settle(storage, b.fingerprint(), b.opens) is Verdict.RECORDED
        assert await settle(storage, a.fingerprint(), a.opens) is Verdict.DIFFERS
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
