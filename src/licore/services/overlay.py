"""A storage laid over another that changes only how its units of work are opened (the
keyed call's one transaction, the audit trail's repositories): everything else is the
inner storage's own, forwarded here once for every such layer."""

from __future__ import annotations

from collections.abc import Sequence

from licore.runtime import Facts as RuntimeFacts
from licore.storage_ports import Storage
from licore.usage import Call


class Overlay:
    inner: Storage  # the storage under this one (an attrs field of each subclass)

    async def runtime_read(self, buckets: Sequence[str], window_start: int, key_digest: str,
                           user_id: str, game_id: str | None) -> tuple[list[int], RuntimeFacts]:
        return await self.inner.runtime_read(buckets, window_start, key_digest, user_id,
                                             game_id)

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        return await self.inner.use_nonce(license_id, nonce, expires_at, now)

    def note_call(self, call: Call) -> None:
        self.inner.note_call(call)

    async def flush_usage(self) -> None:
        await self.inner.flush_usage()

    async def migrate(self) -> None:
        await self.inner.migrate()

    async def open(self) -> None:
        await self.inner.open()

    async def ready(self) -> bool:
        return await self.inner.ready()

    async def close(self) -> None:
        await self.inner.close()
