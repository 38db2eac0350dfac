"""`licore kek rotate`: move the database from the key-encryption key this host holds (read as
`serve` reads it: `LICORE_KEK`, or the kek file in the data directory) to the one in
`LICORE_NEW_KEK`, while servers keep serving (docs/operators.md, "Rotating the
key-encryption key").

First, in one transaction, the database names the new key (with the look-up root sealed under
it, so buyers' keys are found by the same digests and their copies keep their marks); then
every license key, webhook secret and stored copy is re-sealed in batches, and the command
says how far it got. Run again, it picks up where it stopped."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, cast

from adapters_crypto import AesGcmKeyVault
from adapters_storage.kek_rotation import KINDS, Reseal, Tally, begin, reseal_table
from licore.services.deps import Deps
from licore_cli import kek

if TYPE_CHECKING:
    from adapters_storage.postgres import PostgresStorage
    from adapters_storage.sqlite import SqliteStorage

NEW = "LICORE_NEW_KEK"


class RotationRefused(Exception):
    """The one line the operator sees."""


def new_key(current: bytes) -> bytes:
    given = os.environ.get(NEW, "").strip()
    try:
        key = bytes.fromhex(given)
    except ValueError:
        key = b""
    if len(key) != 32:
        raise RotationRefused(f"set {NEW} to the new key-encryption key, 32 bytes written as "
                              f"64 hex digits (python3 -c 'import secrets; "
                              f"print(secrets.token_hex(32))')")
    if key == current:
        raise RotationRefused(f"{NEW} is the key the database already uses ({kek.source()}); "
                              f"make a new one")
    return key


def _reseal(vault: AesGcmKeyVault) -> Reseal:
    """Re-seal under `vault`'s key what it does not seal already; None for what it does."""
    def reseal(sealed: bytes, context: str, blob: bool) -> bytes | None:
        if blob:
            if vault.blob_sealed_here(sealed, context):
                return None
            return vault.encrypt_blob(vault.decrypt_blob(sealed, context), context)
        if vault.sealed_here(sealed, context):
            return None
        return vault.encrypt(vault.decrypt(sealed, context), context)
    return reseal


def _progress(table: str, done: int, total: int) -> None:
    print(f"{table}: {done} of {total} rows", flush=True)


async def rotate(deps: Deps, old_kek: bytes, new_kek: bytes, batch: int) -> Tally:
    """`deps.vault` holds both keys (old first), told by `kek.check` which the database
    names and its look-up root."""
    vault = cast(AesGcmKeyVault, deps.vault)
    storage = cast("SqliteStorage | PostgresStorage", deps.storage)
    target = AesGcmKeyVault(new_kek, previous=old_kek)
    # sealed_root: the look-up root the database's key gives (named old: from the old key;
    # named new, a run resumed: as stored already, sealed under the new key)
    if not await begin(storage, vault.fingerprint(), target.fingerprint(),
                       vault.sealed_root(under=target)):
        raise RotationRefused("the database names neither key; nothing was changed")
    await kek.check(deps, target)  # the target seals under the new key, with the root
    reseal = _reseal(target)
    whole = Tally()
    for kind in KINDS:
        done = await reseal_table(storage, kind, reseal, batch, _progress)
        whole.rows += done.rows
        whole.resealed += done.resealed
    return whole


def run(batch: int) -> Tally:
    """The command's work, with the database the settings name."""
    from licore_cli.compose import deps_from_env, secret

    old_kek = secret("kek", 32)
    new_kek = new_key(old_kek)
    # this process holds both: the database names the old key, or the new one when a run
    # was interrupted after it began
    os.environ["LICORE_KEK_PREVIOUS"] = new_kek.hex()

    async def work() -> Tally:
        deps = deps_from_env()
        try:
            await deps.storage.migrate()
            await kek.check(deps)
            return await rotate(deps, old_kek, new_kek, batch)
        finally:
            await deps.storage.close()

    return asyncio.run(work())


def report(tally: Tally) -> None:
    said = f"re-sealed {tally.resealed} secrets under the new key ({tally.rows} rows read)"
    if tally.resealed == 0:
        print(f"{said}: nothing is left under the old key. Remove LICORE_KEK_PREVIOUS from "
              f"every host (a host of the old key alone now refuses to start).")
        return
    print(f"{said}; the database names the new key. Run this again once every host has "
          f"restarted with the new key as LICORE_KEK: hosts that started before now still "
          f"seal under the old one; the run that re-seals 0 says nothing is left.")
