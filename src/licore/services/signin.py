"""Signing in to the web pages (`Sessions`, and `LocalAccounts`, the sign-in with a username
and a password), and what a web session counts on the server.

The session itself travels in a signed cookie; the few facts a replayed old cookie must not
undo live in the database's named counters (the rate-counter table), keyed by the session's
random id: its wrong user-code entries (contract 6) and whether it was signed out.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence

import attrs

from licore import device_flow as df
from licore.errors import LicoreError
from licore.model import Account
from licore.ports import Clock, Offload, PasswordHasher, SignIn
from licore.services.device import EntryAttempts
from licore.services.ids import Ids
from licore.sources import DEFAULT_IPV6_PREFIX, source_of
from licore.storage_ports import Storage, UnitOfWork

FAILURE_WINDOW = 900  # seconds: failed sign-ins are counted in 15-minute windows
# What a failure costs its source (an IPv4 address, an IPv6 network: licore.sources), never
# the account's owner elsewhere (OWASP's guidance): a source that failed at a name waits for
# the next 10-second window to try it again (slowed), then is blocked for that name after 5
# failures and for every name after 30. The name's own count, from every source at once,
# bounds a guesser with many networks: past 50, a source that has failed at the name even
# once is blocked for it, while one that never failed (its owner at home) still gets in.
PACE_WINDOW = 10
FAILURES_PER_NAME_AND_SOURCE = 5
FAILURES_PER_SOURCE = 30
FAILURES_PER_NAME = 10 * FAILURES_PER_NAME_AND_SOURCE
# A session's counters are never reset: the id is new at every sign-in, so one window will do.
SESSION_WINDOW = 0


class SignInRefused(LicoreError):
    code = "access_denied"
    status = 401

    def __init__(self) -> None:
        # The same words whether the name or the password was wrong: no account enumeration.
        super().__init__("wrong username or password")


class AccountDisabled(SignInRefused):
    """Told only to someone who proved the account is theirs: it names nothing else. A kind
    of refusal, so every sign-in page shows it as it shows a wrong password."""

    status = 403

    def __init__(self) -> None:
        LicoreError.__init__(self, "this account is disabled; ask the operator of this service")


class PasswordAccount(LicoreError):
    """Platform sign-in into an account that has a password: refused. The platform proves
    the same platform user, but a password is a second credential its holder chose; letting
    the platform's session stand in for it would make a taken-over platform account (or a
    platform id an operator typed wrong) enough to enter the account without it."""

    code = "access_denied"
    status = 403

    def __init__(self) -> None:
        super().__init__("this platform user's account here has a password; sign in with "
                         "the username and password")


class SignInLocked(LicoreError):
    code = "rate_limited"
    status = 429

    def __init__(self, retry_after: int, limit: str) -> None:
        wait = (f"{retry_after} seconds" if retry_after < 60 else
                f"{(retry_after + 59) // 60} minutes")
        super().__init__(f"too many failed sign-ins; try again in {wait}")
        self.retry_after = retry_after
        self.limit = limit  # which: "pace", "name-source", "source" or "name"


@attrs.frozen
class _Bucket:
    """A failed-sign-in counter: its key, the failures a window it allows, the window."""

    limit: str
    key: str
    failures: int
    window: int


def _buckets(name: str, source: str) -> tuple[_Bucket, ...]:
    """The counters an attempt is counted in.

    A sign-in without a username (the platform's) is counted per source only: one shared
    "no name" bucket would let five failures lock every platform sign-in out."""
    per_source = _Bucket("source", f"source:{source}", FAILURES_PER_SOURCE, FAILURE_WINDOW)
    if not name:
        return (per_source,)
    folded = name.casefold()
    return (per_source,
            _Bucket("name-source", f"name-source:{folded}:{source}",
                    FAILURES_PER_NAME_AND_SOURCE, FAILURE_WINDOW),
            _Bucket("name", f"name:{folded}", FAILURES_PER_NAME, FAILURE_WINDOW),
            _Bucket("pace", f"pace:{folded}:{source}", 1, PACE_WINDOW))


async def _failures(uow: UnitOfWork, buckets: Sequence[_Bucket], now: int,
                    count_this: bool) -> dict[str, int]:
    """Each bucket's failures in its window before this attempt: the attempts less the
    successes, this attempt counted first when `count_this` (and not among them)."""
    out = {}
    for window in sorted({b.window for b in buckets}):
        start = now - now % window
        mine = [b for b in buckets if b.window == window]
        tries = [f"signin-try:{b.key}" for b in mine]
        counters = uow.records.counters
        if count_this:
            counted = [n - 1 for n in await counters.hit(tries, start)]
        else:
            counted = [await counters.count(key, start) for key in tries]
        for b, attempts in zip(mine, counted, strict=True):
            out[b.limit] = attempts - await counters.count(f"signin-ok:{b.key}", start)
    return out


def _refusal(buckets: Sequence[_Bucket], failures: dict[str, int], now: int) -> None:
    """Raise `SignInLocked` when a limit holds this source back (the longest wait first)."""
    over = [b for b in buckets if failures[b.limit] >= b.failures]
    # The name's own limit holds back only the sources that have failed at it.
    over = [b for b in over if b.limit != "name" or failures.get("name-source", 0) > 0]
    if over:
        worst = max(over, key=lambda b: b.window)
        raise SignInLocked(now - now % worst.window + worst.window - now, worst.limit)


@attrs.frozen
class SignedIn:
    account: Account
    at: int  # when: a session lasts a fixed time from sign-in


MAX_FIELD = 1024  # longer input is not a username or password anyone typed


class LocalAccounts:
    """Sign-in with a local account: a username and a password checked against its
    Argon2id digest. One implementation of the `SignIn` port."""

    def __init__(self, storage: Storage, passwords: PasswordHasher, offload: Offload) -> None:
        self.storage = storage
        self.passwords = passwords
        self.offload = offload
        self._decoy: str | None = None

    async def identify(self, fields: Mapping[str, str]) -> Account | None:
        username, password = fields.get("username", ""), fields.get("password", "")
        if not username or not password or len(username) > MAX_FIELD or len(
                password) > MAX_FIELD:
            return None
        async with self.storage.unit_of_work() as uow:
            account = await uow.accounts.by_username(username)
        digest = account.password_digest if account else None
        if digest is None:
            # Spend the same time on an unknown name as on a wrong password, so timing does
            # not tell which names exist.
            decoy = await self._decoy_digest()
            await self.offload(lambda: self.passwords.verify(decoy, password))
            return None
        # Argon2 is deliberately slow; keep it off the event loop.
        ok = await self.offload(lambda: self.passwords.verify(digest, password))
        return account if ok else None

    async def _decoy_digest(self) -> str:
        if self._decoy is None:
            made = secrets.token_urlsafe(16)
            self._decoy = await self.offload(lambda: self.passwords.hash(made))
        return self._decoy


@attrs.frozen
class Sessions:
    """Sign-in within the failed-attempt limits, and the facts of a web session the server
    keeps (signed out, wrong user-code entries)."""

    storage: Storage
    clock: Clock
    ids: Ids
    local: SignIn  # the default sign-in method: local accounts
    ipv6_prefix: int = DEFAULT_IPV6_PREFIX  # an IPv6 client's network is one source

    async def sign_in(self, method: SignIn, fields: Mapping[str, str], ip: str) -> SignedIn:
        """The account the fields prove, within the failed-attempt limits of the source
        `ip` is in (`_buckets`).

        An attempt a limit refuses is refused before it is counted: a blocked source's
        retries cost it nothing and push no count further. Every other attempt is counted
        in a committed step of its own BEFORE its password is checked, and the counters
        answer with the new count atomically, so however many attempts arrive at once, at
        most a limit's worth of them are checked: the rest see the count over it. A
        successful sign-in is counted too, and the failures are the attempts less the
        successes.
        """
        now = self.clock.now()
        buckets = _buckets(fields.get("username", ""), source_of(ip, self.ipv6_prefix))
        for count_this in (False, True):
            async with self.storage.unit_of_work() as uow:
                failures = await _failures(uow, buckets, now, count_this)
            _refusal(buckets, failures, now)
        account = await method.identify(fields)
        if account is None:
            raise SignInRefused()
        # The right proof is no guess, even for a disabled account: it counts as a success,
        # so the owner is not paced when the operator enables the account again.
        async with self.storage.unit_of_work() as uow:
            for window in sorted({b.window for b in buckets}):
                await uow.records.counters.hit([f"signin-ok:{b.key}" for b in buckets
                                                if b.window == window], now - now % window)
        if account.disabled_at is not None:
            raise AccountDisabled()
        return SignedIn(account, self.clock.now())

    async def platform_account(self, platform_id: str, name: str) -> Account | None:
        """The account of a person the platform vouched for (the ID token's subject), made
        at their first sign-in: no password (they always sign in through the platform), and
        the platform's name as the username when no one has it. None when no free name was
        found. An existing account with a password is not entered this way
        (`PasswordAccount`)."""
        async with self.storage.unit_of_work() as uow:
            found = await uow.accounts.by_platform_id(platform_id)
            if found is not None:
                if found.password_digest is not None:
                    raise PasswordAccount()
                return found
            for username in _username_candidates(name, platform_id):
                account = Account(self.ids.new("acc"), platform_id, username, None,
                                  self.clock.now())
                if await uow.accounts.add(account):
                    return account
        # A concurrent first sign-in of the same person may have made it meanwhile.
        async with self.storage.unit_of_work() as uow:
            made = await uow.accounts.by_platform_id(platform_id)
        if made is not None and made.password_digest is not None:
            raise PasswordAccount()
        return made

    async def visitor(self, account_id: str, session_id: str, started_at: int,
                      max_age: int) -> Account | None:
        """The person a session cookie names, while the session lasts (`max_age` from
        sign-in, however often it is renewed), is not signed out and the account exists and
        is not disabled (the operator's `account disable` ends its sessions here)."""
        if self.clock.now() - started_at > max_age:
            return None
        async with self.storage.unit_of_work() as uow:
            ended = await uow.records.counters.count(f"session-ended:{session_id}",
                                                     SESSION_WINDOW)
            if ended > 0:
                return None
            found = await uow.accounts.by_id(account_id)
        return found if found is not None and found.disabled_at is None else None

    async def entry_attempts(self, session_id: str,
                             linked_user_code: str | None) -> EntryAttempts:
        """The session's wrong user-code entries, as the server counted them."""
        async with self.storage.unit_of_work() as uow:
            wrong = await uow.records.counters.count(f"session-wrong-code:{session_id}",
                                                     SESSION_WINDOW)
        return EntryAttempts(wrong=min(wrong, df.WRONG_ENTRY_LIMIT),
                             linked_user_code=linked_user_code)

    async def count_wrong_entry(self, session_id: str) -> None:
        async with self.storage.unit_of_work() as uow:
            await uow.records.counters.hit([f"session-wrong-code:{session_id}"], SESSION_WINDOW)

    async def end_session(self, session_id: str) -> None:
        """Sign-out: the session's cookie, even kept and replayed, signs no one in again."""
        async with self.storage.unit_of_work() as uow:
            await uow.records.counters.hit([f"session-ended:{session_id}"], SESSION_WINDOW)

    async def session_ended(self, session_id: str) -> bool:
        async with self.storage.unit_of_work() as uow:
            ended = await uow.records.counters.count(f"session-ended:{session_id}",
                                                     SESSION_WINDOW)
            return ended > 0


_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def _username_candidates(name: str, platform_id: str) -> list[str]:
    """The platform's name, else with the platform id appended, else one made of the id:
    never all digits (POST /licenses would read it as a platform id) and at most 64."""
    base = _NOT_NAME.sub("", name)[:40]
    if not base or base.isdigit():
        base = "player"
    return [base, f"{base}-{platform_id}"[:64], f"player-{platform_id}"[:64]]
