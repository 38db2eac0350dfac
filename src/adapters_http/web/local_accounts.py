"""Sign-in with a local account: a username and a password checked against its Argon2id
digest. One adapter of the core's `SignIn` port."""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from starlette.concurrency import run_in_threadpool

from licore.model import Account
from licore.services.deps import Deps

MAX_FIELD = 1024  # longer input is not a username or password anyone typed


class LocalAccounts:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self._decoy: str | None = None

    async def identify(self, fields: Mapping[str, str]) -> Account | None:
        username, password = fields.get("username", ""), fields.get("password", "")
        if not username or not password or len(username) > MAX_FIELD or len(
                password) > MAX_FIELD:
            return None
        async with self.deps.storage.unit_of_work() as uow:
            account = await uow.accounts.by_username(username)
        digest = account.password_digest if account else None
        if digest is None:
            # Spend the same time on an unknown name as on a wrong password, so timing does
            # not tell which names exist.
            await run_in_threadpool(self.deps.passwords.verify, await self._decoy_digest(),
                                    password)
            return None
        # Argon2 is deliberately slow; keep it off the event loop.
        ok = await run_in_threadpool(self.deps.passwords.verify, digest, password)
        return account if ok else None

    async def _decoy_digest(self) -> str:
        if self._decoy is None:
            self._decoy = await run_in_threadpool(self.deps.passwords.hash,
                                                  secrets.token_urlsafe(16))
        return self._decoy
