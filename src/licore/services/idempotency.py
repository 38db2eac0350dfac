"""Exactly-once calls over an unreliable network: the `Idempotency-Key` a client sends with a
Partner POST (an extension; the convention Stripe and Keygen use, docs/api.md "Retrying
safely").

The first call with a key runs, and its answer is kept with the key **in the same
transaction** as the call's own changes: a crash between the two cannot leave a grant
without the answer that tells of it. Any later call with the key and the same request, for
24 hours, gets that answer again, byte for byte, without running; with another request it is
refused (`422 idempotency_key_reused`).

One mechanism serves every call, none of which knows of it. While a keyed call runs, the
storage every use case was given (`Joining`) hands the call's units of work one transaction,
the one the key was claimed in: the first unit of work the use case opens claims the key
before the use case's first statement, and the call's end keeps the answer and commits. So
work a use case does before touching the database (reading a platform, checking a file) is
outside the claim, and a second call with the same key waits for the first at the claim
(PostgreSQL's unique index waits for the transaction that holds the key; SQLite and the
in-memory store queue every unit of work on their write lock) and then replays its answer.

Only answers of calls that succeeded are kept. A refusal changed nothing, so a retry runs
again and meets what holds then (the product a seller fixed, the license revoked meanwhile);
a 5xx or 429 leaves nothing behind either, and its retry runs again too."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from typing import TypeVar

import attrs

from licore import bounds
from licore.errors import IdempotencyKeyReused
from licore.model import IdempotencyRecord, KeptAnswer
from licore.ports import Clock
from licore.services.overlay import Overlay
from licore.storage_ports import Storage, UnitOfWork

R = TypeVar("R")
HEADER = "Idempotency-Key"
# A day, as Stripe keeps them: long past any client's retries, short enough to stay small.
KEEP_FOR = 24 * 3600
# Visible ASCII: a UUID, a platform's purchase id, a hash; never spaces or control bytes.
KEY = bounds.Text(min_len=1, max_len=255, pattern=r"[\x21-\x7e]+",
                  shape="1 to 255 visible ASCII characters (no spaces)")


@attrs.frozen
class Once:
    """What the edge hands the core for a keyed call: the key as sent, the request's
    fingerprint (asked once the command is read: a bad key or body is refused first), and
    how the call's value becomes the answer to keep (asked inside the transaction)."""

    key: str
    fingerprint: Callable[[], str]
    answer: Callable[[object], KeptAnswer]

    def checked_key(self) -> str:
        """The key as sent, or `400 invalid_request` naming the header."""
        return KEY.check(HEADER, self.key)


@attrs.frozen
class Outcome:
    answer: KeptAnswer
    replayed: bool  # True: the kept answer of an earlier call, nothing ran


class _Replay(Exception):
    """Carries a kept answer out of the use case that met the claimed key. Not a
    `LicoreError`: no use case catches it, and no edge may turn it into an error."""

    def __init__(self, answer: KeptAnswer) -> None:
        super().__init__("replay")
        self.answer = answer


@attrs.define
class _Call:
    """The keyed call in progress: its transaction, once its first unit of work opened it."""

    record: IdempotencyRecord
    stack: AsyncExitStack
    uow: UnitOfWork | None = None

    async def begin(self, storage: Storage) -> UnitOfWork:
        if self.uow is None:
            uow = await self.stack.enter_async_context(storage.unit_of_work())
            self.uow = uow  # set before the claim: a replay still ends (rolls back) it
            kept = await uow.records.idempotency.claim(self.record, self.record.created_at)
            if kept is not None:
                if kept.fingerprint != self.record.fingerprint:
                    raise IdempotencyKeyReused(
                        "this Idempotency-Key was used for a different request in the last "
                        "24 hours; use a new key for a new request")
                assert kept.answer is not None  # kept in the transaction that claimed it
                raise _Replay(kept.answer)
        return self.uow


_CALL: ContextVar[_Call | None] = ContextVar("licore_idempotent_call", default=None)


@attrs.frozen
class Joining(Overlay):
    """The storage the use cases are given: `inner` itself, except that inside a keyed call
    every unit of work is the call's one transaction (see the module's note)."""

    inner: Storage

    def unit_of_work(self) -> AbstractAsyncContextManager[UnitOfWork]:
        call = _CALL.get()
        return self.inner.unit_of_work() if call is None else self._joined(call)

    @asynccontextmanager
    async def _joined(self, call: _Call) -> AsyncIterator[UnitOfWork]:
        # Entered and left with the use case's block, but committed (or rolled back) only
        # when the call ends: what the use case wrote and the kept answer go together.
        yield await call.begin(self.inner)


@attrs.frozen
class Idempotency:
    storage: Storage  # the storage under `Joining`, where the call's transaction is opened
    clock: Clock

    async def run(self, owner: str, key: str, fingerprint: str,
                  work: Callable[[], Awaitable[R]],
                  answer_of: Callable[[R], KeptAnswer]) -> Outcome:
        """`work` run at most once for `owner`'s key: its answer, kept with the key in the
        transaction of its changes; or the answer an earlier call with the key kept."""
        now = self.clock.now()
        record = IdempotencyRecord(owner, key, fingerprint, now, now + KEEP_FOR)
        async with AsyncExitStack() as stack:
            call = _Call(record, stack)
            token = _CALL.set(call)
            try:
                value = await work()
            except _Replay as replay:
                return Outcome(replay.answer, True)
            finally:
                _CALL.reset(token)
            answer = answer_of(value)
            try:
                # A call that opened no unit of work claims the key now: the answer is kept
                # all the same, and a call that beat it to the key is replayed instead.
                uow = await call.begin(self.storage)
            except _Replay as replay:
                return Outcome(replay.answer, True)
            await uow.records.idempotency.keep(owner, key, answer)
            return Outcome(answer, False)
        raise AssertionError("unreachable: the exit stack does not swallow exceptions")
