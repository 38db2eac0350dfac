"""Signing in to the web pages, and what a web session counts on the server.

The session itself travels in a signed cookie; the few facts a replayed old cookie must not
undo live in the database's named counters (the rate-counter table), keyed by the session's
random id: its wrong user-code entries (contract 6) and whether it was signed out.
"""

from __future__ import annotations

from collections.abc import Mapping

from licore import device_flow as df
from licore.errors import LicoreError
from licore.model import Account
from licore.ports import Clock, SignIn, Storage
from licore.services.device import EntryAttempts

FAILURE_WINDOW = 900  # seconds: failed sign-ins are counted in 15-minute windows
FAILURES_PER_NAME = 5  # wrong passwords for one username in a window, then it waits
FAILURES_PER_IP = 30  # wrong passwords from one address in a window (many names tried)
# A session's counters are never reset: the id is new at every sign-in, so one window will do.
SESSION_WINDOW = 0


class SignInRefused(LicoreError):
    code = "access_denied"
    status = 401

    def __init__(self) -> None:
        # The same words whether the name or the password was wrong: no account enumeration.
        super().__init__("wrong username or password")


class SignInLocked(LicoreError):
    code = "rate_limited"
    status = 429

    def __init__(self, retry_after: int) -> None:
        minutes = max(1, (retry_after + 59) // 60)
        super().__init__(f"too many failed sign-ins; try again in {minutes} minutes")
        self.retry_after = retry_after


def _buckets(kind: str, name: str, ip: str) -> tuple[str, str]:
    return f"signin-{kind}:name:{name.casefold()}", f"signin-{kind}:ip:{ip}"


async def sign_in(storage: Storage, clock: Clock, method: SignIn, fields: Mapping[str, str],
                  ip: str) -> Account:
    """The account the fields prove, within the failed-attempt limits (per name, per IP).

    Every attempt is counted in a committed step of its own BEFORE its password is checked,
    and the counters answer with the new count atomically, so however many attempts arrive
    at once, at most the limit of them are checked: the rest see the count over it. A
    successful sign-in is counted too, and the failures are the attempts less the
    successes. An attempt refused by the lock counts as an attempt (it changes nothing: the
    name or address is locked for the rest of the window anyway).
    """
    now = clock.now()
    window = now - now % FAILURE_WINDOW
    name = fields.get("username", "")
    tries = _buckets("try", name, ip)
    oks = _buckets("ok", name, ip)
    async with storage.unit_of_work() as uow:
        name_tries, ip_tries = await uow.counters.hit(list(tries), window)
        name_oks = await uow.counters.count(oks[0], window)
        ip_oks = await uow.counters.count(oks[1], window)
    # Failures before this attempt: the attempts counted so far (this one included) less the
    # successes, less this one.
    if (name_tries - name_oks - 1 >= FAILURES_PER_NAME
            or ip_tries - ip_oks - 1 >= FAILURES_PER_IP):
        raise SignInLocked(window + FAILURE_WINDOW - now)
    account = await method.identify(fields)
    if account is None:
        raise SignInRefused()
    async with storage.unit_of_work() as uow:
        await uow.counters.hit(list(oks), window)
    return account


async def entry_attempts(storage: Storage, session_id: str,
                         linked_user_code: str | None) -> EntryAttempts:
    """The session's wrong user-code entries, as the server counted them."""
    async with storage.unit_of_work() as uow:
        wrong = await uow.counters.count(f"session-wrong-code:{session_id}", SESSION_WINDOW)
    return EntryAttempts(wrong=min(wrong, df.WRONG_ENTRY_LIMIT),
                         linked_user_code=linked_user_code)


async def count_wrong_entry(storage: Storage, session_id: str) -> None:
    async with storage.unit_of_work() as uow:
        await uow.counters.hit([f"session-wrong-code:{session_id}"], SESSION_WINDOW)


async def end_session(storage: Storage, session_id: str) -> None:
    """Sign-out: the session's cookie, even kept and replayed, signs no one in again."""
    async with storage.unit_of_work() as uow:
        await uow.counters.hit([f"session-ended:{session_id}"], SESSION_WINDOW)


async def session_ended(storage: Storage, session_id: str) -> bool:
    async with storage.unit_of_work() as uow:
        return await uow.counters.count(f"session-ended:{session_id}", SESSION_WINDOW) > 0
