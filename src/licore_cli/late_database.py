"""Starting before the database (docs/operators.md, "A reboot with a late database"): a
server or worker whose PostgreSQL does not answer yet keeps trying, with a back-off that
grows to `LICORE_DATABASE_RETRY` seconds, and says so in one log line each time, until the
database answers, is migrated and holds this process's key."""

from __future__ import annotations

import asyncio
import logging
import os

from licore.ports import KeyVault
from licore_cli import kek, settings

log = logging.getLogger("licore.serve")


def _refuse(line: str) -> None:
    """A key refusal once the database answers: the one line, and the process ends as a
    refusal at start would (a supervised worker too: its server sees it die)."""
    log.error("%s", line)
    logging.shutdown()
    os._exit(1)


async def until_prepared(vault: KeyVault | None = None) -> None:
    """Returns once `kek.prepare` has succeeded (telling `vault` what it tells); ends the
    process on a key refusal."""
    most = settings.load().database_retry
    delay = min(1, most)
    while True:
        try:
            wrong = await kek.prepare(vault)
        except kek.KeyMismatch as refused:
            _refuse(f"licore: {refused}")
            return
        except Exception as exc:  # the database went away between the probe and the rest
            wrong = f"the database stopped answering while starting ({type(exc).__name__})"
        if wrong is None:
            return
        log.warning("%s; trying again in %d s (until then /readyz and every call answer 503)",
                    wrong, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, most)
