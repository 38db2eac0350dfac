"""API keys once issued (spec 5, contract 6): authenticating a bearer key for a Partner call
(its state, its kind and scope, the per-key rate limit), revocation by the holder, and the
connected-apps lists a studio or a person revokes keys from.

Authorization of a key's call is decided here and nowhere else: a call names the scope it
needs, and `authenticate` answers the caller acting for the key's studio or person, or the
specification's error."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import assert_never

import attrs

from licore import api_keys, tokens
from licore import scopes as sc
from licore.actors import ActingPerson, ActingStudio
from licore.audit import Actor, ActorKind, acting
from licore.errors import InvalidToken, LicoreError, NotFound, RateLimited
from licore.model import ApiKey
from licore.ports import Clock, ConnectedApp
from licore.services import limits
from licore.storage_ports import Storage, UnitOfWork

UNKNOWN_KEY = "the key is unknown, revoked or expired"


@attrs.frozen
class Caller:
    """An authenticated key within its rate limit, and what is left of that limit."""

    key: ApiKey
    quota: limits.Quota

    @property
    def studio(self) -> ActingStudio:
        assert self.key.studio_id is not None  # a studio key; the call's scope made sure
        return ActingStudio(self.key.studio_id)

    @property
    def person(self) -> ActingPerson:
        return ActingPerson(self.key.account_id)


# Told the key's id and quota as soon as they are known, even when the call is then refused
# (the access log names the key; a refused call still says how much of the limit is left).
Note = Callable[[str, "limits.Quota | None"], None]


def _unnoted(key_id: str, quota: limits.Quota | None) -> None:
    return None


@attrs.frozen
class Keys:
    storage: Storage
    clock: Clock
    rate_limit: int  # Partner calls, a key, a minute

    async def authenticate(self, bearer: str | None, scope: str | None = None,
                           note: Note = _unnoted) -> Caller:
        """The key behind `Authorization: Bearer`, counted against its per-key limit, and
        checked for the key kind and scope a call needs (`scope` None: any kind, any scope).
        One unit of work for the look-up, an idle key's revocation and the count; the
        coalesced touch (once a minute) is a step of its own after it, so that a burst of
        calls with one key never holds the key's row while it queues for the counter's."""
        if bearer is None:
            raise InvalidToken("this call needs Authorization: Bearer <API_KEY>")
        if not tokens.api_key_shape_ok(bearer):
            raise InvalidToken(UNKNOWN_KEY)
        now = self.clock.now()
        start = now - now % limits.WINDOW
        async with self.storage.unit_of_work() as uow:
            key, refusal = await self._usable(uow, bearer, now)
            if refusal is None:
                (count,) = await uow.records.counters.hit([f"key:{key.id}"], start)
        if refusal is not None:
            raise refusal
        await self._touch(key, now)
        quota = limits.quota(count, self.rate_limit, now)
        note(key.id, quota)
        if quota is None:
            raise RateLimited(retry_after=limits.reset(now), limit=self.rate_limit)
        if scope is not None:
            sc.require(frozenset(key.scopes), key.kind, sc.SCOPES[scope][0], scope)
        return Caller(key, quota)

    async def identify(self, bearer: str) -> ApiKey:
        """The key behind `bearer`, without counting it (an idle one is revoked for good)."""
        if not tokens.api_key_shape_ok(bearer):
            raise InvalidToken(UNKNOWN_KEY)
        now = self.clock.now()
        async with self.storage.unit_of_work() as uow:
            key, refusal = await self._usable(uow, bearer, now)
        if refusal is not None:
            raise refusal
        await self._touch(key, now)
        return key

    async def _touch(self, key: ApiKey, now: int) -> None:
        if api_keys.needs_touch(key.last_used_at, now):
            async with self.storage.unit_of_work() as uow:
                await uow.api_keys.touch(key.id, now)

    async def _usable(self, uow: UnitOfWork, bearer: str,
                      now: int) -> tuple[ApiKey, LicoreError | None]:
        """The key and, when it may not be used, why; the refusal is raised by the caller
        after the unit of work commits, so an idle key's revocation is kept."""
        key = await uow.api_keys.by_digest(tokens.api_key_digest(bearer))
        if key is None:
            raise InvalidToken(UNKNOWN_KEY)
        state = api_keys.state_at(key.revoked_at, key.last_used_at, now)
        if key.revoked_at is None and api_keys.is_idle(key.last_used_at, now):
            # Idle for 60 days: revoked for good, recorded so the list shows it gone.
            idle = api_keys.transition(api_keys.KeyState.ACTIVE, api_keys.KeyEvent.IDLE_60_DAYS)
            await _apply(uow, key, idle.effects, now)
        try:
            api_keys.transition(state, api_keys.KeyEvent.USE)
        except LicoreError as refused:
            return key, refused
        return key, None

    async def revoke(self, key: ApiKey) -> None:
        """POST /revoke by the holder (the key was authenticated by the caller)."""
        outcome = api_keys.transition(api_keys.KeyState.ACTIVE, api_keys.KeyEvent.HOLDER_REVOKES)
        # The holder is the app with the key (docs/audit.md).
        with acting(Actor(ActorKind.APP, key.client_id, key.id)):
            async with self.storage.unit_of_work() as uow:
                await _apply(uow, key, outcome.effects, self.clock.now())

    async def revoke_bearer(self, bearer: str | None, note: Note = _unnoted) -> None:
        """POST /revoke with `Authorization: Bearer`: the key revokes itself (counted as a
        call of the key)."""
        await self.revoke((await self.authenticate(bearer, None, note)).key)

    async def revoke_token(self, token: str) -> None:
        """RFC 7009 (extension): the key named in the body is revoked; an unknown, revoked
        or malformed token changes nothing and is not reported (section 2.2)."""
        with contextlib.suppress(InvalidToken):
            if tokens.api_key_shape_ok(token):
                await self.revoke(await self.identify(token))

    async def revoke_connected_app(self, key_id: str, *, studio_id: str | None = None,
                                   account_id: str | None = None) -> None:
        """Revocation from a connected-apps list; only keys acting for that studio or
        person."""
        async with self.storage.unit_of_work() as uow:
            key = await uow.api_keys.by_id(key_id)
            if key is None or not _acts_for(key, studio_id, account_id):
                raise NotFound("no such connected app")
            state = (api_keys.KeyState.ACTIVE if key.revoked_at is None
                     else api_keys.KeyState.REVOKED)  # an idle key is still revoked by hand
            outcome = api_keys.transition(state, api_keys.KeyEvent.USER_REVOKES)
            await _apply(uow, key, outcome.effects, self.clock.now())

    async def connected_apps(self, *, studio_id: str | None = None,
                             account_id: str | None = None) -> list[ConnectedApp]:
        """Every key still acting for a studio (or a person's library keys), idle ones left
        out."""
        now = self.clock.now()
        async with self.storage.unit_of_work() as uow:
            apps = await uow.api_keys.connected_apps(studio_id=studio_id, account_id=account_id)
        return [a for a in apps if api_keys.state_at(a.key.revoked_at, a.key.last_used_at, now)
                is api_keys.KeyState.ACTIVE]


def _acts_for(key: ApiKey, studio_id: str | None, account_id: str | None) -> bool:
    if studio_id is not None:
        return key.studio_id == studio_id
    return key.account_id == account_id and not key.studio_id


async def _apply(uow: UnitOfWork, key: ApiKey, effects: tuple[api_keys.KeyEffect, ...],
                 now: int) -> None:
    for effect in effects:
        match effect:
            case api_keys.KeyEffect.RECORD_REVOKED:
                await uow.api_keys.revoke(key.id, now)
            case _:
                assert_never(effect)
