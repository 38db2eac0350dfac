"""At start: is this process's key-encryption key the one the database's keys were sealed
with? If not, the process stops with one line saying which setting to fix."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

from adapters_storage.key_fingerprint import Verdict, settle
from adapters_storage.probe import problem
from licore_cli import settings

if TYPE_CHECKING:
    from adapters_storage.postgres import PostgresStorage
    from adapters_storage.sqlite import SqliteStorage
    from licore.ports import KeyVault
    from licore.services.deps import Deps


class KeyMismatch(Exception):
    """The one line the operator sees."""


def source() -> str:
    """Where this process's key-encryption key comes from, in words."""
    if os.environ.get("LICORE_KEK"):
        return "LICORE_KEK"
    where = Path(settings.load().data_dir).resolve() / "kek"
    return f"the file {where} (LICORE_KEK is unset)"


def _databases() -> tuple[type, ...]:
    """The database adapters this process has loaded: a storage made by one that was never
    imported is none of them, and naming them here must not import the PostgreSQL driver
    into a process on SQLite."""
    return tuple(getattr(sys.modules[module], name) for module, name in (
        ("adapters_storage.sqlite", "SqliteStorage"),
        ("adapters_storage.postgres", "PostgresStorage")) if module in sys.modules)


async def check(deps: Deps, also: KeyVault | None = None) -> None:
    """Refuses (`KeyMismatch`) a key the database was not made with; otherwise tells the
    vault (and `also`, another process part's vault holding the same keys) which of its
    keys the database names, and the look-up root it keeps."""
    from adapters_crypto import AesGcmKeyVault

    vault, storage = deps.vault, deps.storage
    if not isinstance(vault, AesGcmKeyVault) or not isinstance(storage, _databases()):
        return  # an embedder's own vault, or a database that outlives nothing
    database = cast("SqliteStorage | PostgresStorage", storage)
    settled = await settle(database, vault.fingerprint(), vault.opens,
                           also=vault.fingerprints()[1:])
    if settled.verdict not in (Verdict.MATCHES, Verdict.RECORDED):
        _remove_made_key()
    if settled.verdict is Verdict.REPLACED:
        raise KeyMismatch(
            f"the key-encryption key from {source()} was replaced by a rotation (licore kek "
            f"rotate); set LICORE_KEK to the new key, as every other host of this database has")
    if settled.verdict is Verdict.DIFFERS:
        raise KeyMismatch(
            f"the key-encryption key from {source()} is not the one this database was "
            f"made with; set LICORE_KEK to that key (every host of one database shares it), "
            f"or every license key would fail")
    if settled.verdict is Verdict.CANNOT_OPEN:
        raise KeyMismatch(
            f"the key-encryption key from {source()} does not open the license keys stored "
            f"in this database; set LICORE_KEK to the key they were sealed with")
    for held in (vault, also):
        if isinstance(held, AesGcmKeyVault):
            held.adopt(settled.named, settled.sealed_root)


def _remove_made_key() -> None:
    """A key file this start made, for a database that names another key, goes again: left
    behind it would be read by every later start instead of the one to set."""
    from licore_cli.compose import MADE

    made = Path(settings.load().data_dir).resolve() / "kek"
    if made in MADE:
        made.unlink(missing_ok=True)
        MADE.discard(made)


async def prepare(vault: KeyVault | None = None) -> str | None:
    """None once the database answers, is migrated, and was made with this process's key
    (which `vault`, the serving parts' own, is told as `check` says); otherwise why it cannot
    be reached (`KeyMismatch` for another key). With parts of its own, closed before it
    returns: nothing opened here may outlive the event loop it ran in."""
    from licore_cli.compose import deps_from_env

    wrong = await problem(settings.load().database_url)
    if wrong:
        return wrong
    deps = deps_from_env()
    try:
        await deps.storage.migrate()
        await check(deps, vault)
    finally:
        await deps.storage.close()
    return None


def waits_for(url: str) -> bool:
    """Whether a server on this database waits for it rather than refusing to start: a
    PostgreSQL server comes up on its own time (after a reboot, on another host); a SQLite
    file that cannot be opened stays so until the operator acts."""
    return url.startswith(("postgresql:", "postgres:"))


def check_before_serving(vault: KeyVault) -> bool:
    """What `licore serve` does before it serves, for a process another ASGI server started
    (`hypercorn licore_cli.asgi:app`): True when the database answers, is migrated, and was
    made with this key; False when PostgreSQL does not answer yet (the server starts all the
    same and waits for it, `licore_cli.late_database`); otherwise `SystemExit` with the one
    line that says what to fix, and nothing served. In a short event loop of its own: the
    server's loop is not running yet."""
    try:
        wrong = asyncio.run(prepare(vault))
    except (KeyMismatch, settings.SettingsError) as refused:
        raise SystemExit(f"licore: {refused}") from None
    if wrong and not waits_for(settings.load().database_url):
        raise SystemExit(f"licore: {wrong}")
    return wrong is None
