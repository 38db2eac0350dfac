"""The device authorization flow (spec 4.1) and its approval step. Keys once issued are
`licore.services.keys`."""

from __future__ import annotations

import attrs

from licore import device_flow as df
from licore import scopes as sc
from licore import tokens
from licore.audit import Actor, ActorKind, acting
from licore.device_flow import DeviceEffect, DeviceEvent, DeviceState
from licore.errors import (
    ExpiredToken,
    InvalidClient,
    InvalidRequest,
    LicoreError,
    NotFound,
    SlowDown,
)
from licore.model import ApiKey, Client, DeviceAuthorization
from licore.ports import Clock, Randomness
from licore.services import limits
from licore.services.ids import Ids
from licore.sources import DEFAULT_IPV6_PREFIX, source_of
from licore.storage_ports import Storage, UnitOfWork


@attrs.frozen
class DeviceSettings:
    """The operator's choices the flow reads (spec 4.1 and contract 6)."""

    public_url: str
    lifetime: int
    interval: int
    code_rate_limit: int  # new codes, an IP, a minute
    entry_rate_limit: int  # wrong user-code entries, an IP, a minute
    ipv6_prefix: int = DEFAULT_IPV6_PREFIX  # an IPv6 client's network counts as one


@attrs.frozen
class DeviceCodeResponse:
    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    expires_in: int
    interval: int


@attrs.frozen
class TokenResponse:
    access_token: str
    token_type: str
    scope: str
    studio_id: str | None


async def _client_disabled(uow: UnitOfWork, client_id: str) -> bool:
    # Held, not just read: a disable committing between this check and the key's insert
    # would revoke the client's keys without seeing the new one.
    client = await uow.clients.hold(client_id)
    return client is None or client.disabled


async def _active_client(uow: UnitOfWork, client_id: str) -> Client:
    client = await uow.clients.by_id(client_id)
    if client is None or client.disabled:
        raise InvalidClient("unknown or disabled client_id")
    return client


# What the approval step (spec 4.1 "user-facing approval step") shows and counts; the web page
# is one front for it.


@attrs.frozen
class ApprovalView:
    """What the consent screen shows; never the device code or a key."""

    user_code: str
    client_name: str
    client_description: str
    kind: sc.KeyKind
    requested: tuple[str, ...]
    state: DeviceState


@attrs.frozen
class EntryAttempts:
    """Wrong user-code entries of one approval session (contract 6)."""

    wrong: int = 0
    linked_user_code: str | None = None  # set when opened from verification_uri_complete

    @property
    def burned(self) -> bool:
        return self.wrong >= df.WRONG_ENTRY_LIMIT


class SessionBurned(LicoreError):
    code = "access_denied"
    status = 403

    def __init__(self) -> None:
        super().__init__("too many wrong codes; sign in again to enter another code")


class DeviceFlow:
    """The device authorization flow (spec 4.1) and its approval step."""

    def __init__(self, storage: Storage, clock: Clock, random: Randomness, ids: Ids,
                 settings: DeviceSettings) -> None:
        self.storage = storage
        self.clock = clock
        self.random = random
        self.ids = ids
        self.settings = settings

    async def start(self, client_id: str, scope_text: str, ip: str,
                    root_path: str = "") -> DeviceCodeResponse:
        """POST /device/code. `root_path`: the path prefix the service is served under (the
        approval page is `{public_url}{root_path}/device`)."""
        requested = sc.parse_scope_string(scope_text)
        async with self.storage.unit_of_work() as uow:
            client = await _active_client(uow, client_id)
        wanted = sc.requestable(requested, client.scopes)
        source = source_of(ip, self.settings.ipv6_prefix)
        await limits.hit(self.storage, self.clock, f"device-code:{source}",
                         self.settings.code_rate_limit)
        # The row's one effect, ISSUE_CODES, is what follows: the codes drawn are the answer.
        created = df.transition(DeviceState.NONE, DeviceEvent.REQUEST_CODE)
        now = self.clock.now()
        device_code = tokens.make_device_code(self.random.token_bytes(48))
        for _ in range(10):  # a user-code collision among live codes is rare; draw again
            user_code = tokens.make_user_code(self.random.token_bytes(16), df.USER_CODE_ALPHABET,
                                              df.USER_CODE_LENGTH)
            device = DeviceAuthorization(
                id=self.ids.new("dev"), device_code_digest=tokens.device_code_digest(device_code),
                user_code=user_code, client_id=client.id, requested_scopes=wanted,
                state=created.next, created_at=now,
                expires_at=now + self.settings.lifetime,
                interval=self.settings.interval)
            async with self.storage.unit_of_work() as uow:
                if await uow.devices.add(device):
                    break
        else:
            raise LicoreError("could not allocate a user code")
        shown = df.format_user_code(user_code)
        uri = self.settings.public_url.rstrip("/") + root_path.rstrip("/") + "/device"
        return DeviceCodeResponse(device_code, shown, uri, f"{uri}?code={shown}",
                                  self.settings.lifetime, self.settings.interval)

    async def poll(self, device_code: str, client_id: str | None) -> TokenResponse:
        """POST /device/token. Errors are raised only after the poll itself is recorded."""
        if not device_code:
            raise InvalidRequest("device_code is required", "device_code")
        now = self.clock.now()
        async with self.storage.unit_of_work() as uow:
            device = await uow.devices.by_code_digest(tokens.device_code_digest(device_code))
            if device is None:
                raise df.refusal(DeviceState.NONE, DeviceEvent.POLL)
            if client_id is not None and client_id != device.client_id:
                raise InvalidClient("this device_code was issued to another client")
            polled = await self._polled(uow, device, now)
            if not await uow.devices.replace(polled.device, expected=device.state):
                # Someone else polled this code in the same instant and claimed it first.
                raise ExpiredToken("the code was already used; start over")
        if polled.refusal is not None:
            raise polled.refusal
        assert polled.issued is not None
        return polled.issued

    async def _polled(self, uow: UnitOfWork, device: DeviceAuthorization, now: int) -> _Polled:
        """The poll by the table: the record as it is now (state, last poll, interval), and
        the key it issues or the refusal it answers."""
        timing = _timing(device)
        state = df.effective_state(device.state, timing, now)
        event = df.poll_event(timing, now)
        if await _client_disabled(uow, device.client_id):
            event = DeviceEvent.POLL_CLIENT_DISABLED
        polled = _Polled(attrs.evolve(device, state=state, last_poll_at=now))
        try:
            outcome = df.transition(state, event)
        except LicoreError as error:
            return attrs.evolve(polled, refusal=error)
        polled = attrs.evolve(polled, device=attrs.evolve(polled.device, state=outcome.next))
        for effect in outcome.effects:
            polled = await self._poll_effect(uow, device, polled, effect)
        return polled

    async def _poll_effect(self, uow: UnitOfWork, device: DeviceAuthorization,
                           polled: _Polled, effect: DeviceEffect) -> _Polled:
        # A poll's rows ask for these two effects only (tests/core/test_effects.py).
        if effect is DeviceEffect.SLOW_DOWN:
            slower = attrs.evolve(polled.device, interval=df.grown_interval(device.interval))
            return attrs.evolve(polled, device=slower, refusal=SlowDown(slower.interval))
        return attrs.evolve(polled, issued=await self._issue_key(uow, device))

    async def _issue_key(self, uow: UnitOfWork, device: DeviceAuthorization) -> TokenResponse:
        kind = sc.kind_of(device.granted_scopes)
        plain = tokens.make_api_key(kind, self.random.token_bytes(40))
        now = self.clock.now()
        assert device.account_id is not None
        key_id = self.ids.new("key")
        # The app's poll takes the key the person approved: the audit trail names the app
        # and the key (the approver is the key's `account_id`).
        with acting(Actor(ActorKind.APP, device.client_id, key_id)):
            await uow.api_keys.add(ApiKey(
                id=key_id, digest=tokens.api_key_digest(plain), kind=kind,
                scopes=device.granted_scopes, client_id=device.client_id,
                account_id=device.account_id, studio_id=device.studio_id,
                created_at=now, last_used_at=now))
        return TokenResponse(plain, "Bearer", sc.format_scopes(device.granted_scopes),
                             device.studio_id)

    async def look_up(self, entered: str, attempts: EntryAttempts,
                      ip: str) -> tuple[ApprovalView | None, EntryAttempts]:
        """Find the pending authorization a person typed the code of.

        A wrong entry counts against the session (5 burn it, and burn the authorization the
        session was opened for) and against the IP. Returns the view, or None and the new count.
        """
        if attempts.burned:
            raise SessionBurned()
        code = df.normalize_user_code(entered)
        now = self.clock.now()
        async with self.storage.unit_of_work() as uow:
            view = await _pending_view(uow, code, now)
            if view is not None:
                return view, attempts
            after = attrs.evolve(attempts, wrong=attempts.wrong + 1)
            if after.burned and attempts.linked_user_code is not None:
                await _burn(uow, attempts.linked_user_code, now)
        source = source_of(ip, self.settings.ipv6_prefix)
        await limits.hit(self.storage, self.clock, f"code-entry:{source}",
                         self.settings.entry_rate_limit)
        return None, after

    async def pending_view(self, user_code: str) -> ApprovalView | None:
        """The consent screen of a code the caller already found through `look_up` (this counts
        no entry, so it must never be offered as a way to try codes)."""
        async with self.storage.unit_of_work() as uow:
            return await _pending_view(uow, df.normalize_user_code(user_code), self.clock.now())

    async def grantable_for(self, account_id: str, kind: sc.KeyKind,
                            studio_id: str | None) -> sc.Grantable:
        """What this person may grant: for studio scopes, their permissions in that studio."""
        if kind is sc.KeyKind.LIBRARY:
            return sc.Grantable(frozenset())
        if studio_id is None:
            return sc.Grantable(frozenset())
        async with self.storage.unit_of_work() as uow:
            membership = await uow.studios.membership(studio_id, account_id)
        return sc.Grantable(membership.permissions if membership else frozenset())

    async def decide(self, account_id: str, user_code: str, approve: bool,
                     studio_id: str | None = None) -> tuple[str, ...]:
        """Approve (with the chosen studio for studio scopes) or deny. Returns the granted scopes.

        Approval where nothing survives the approver's permissions is refused with HTTP 403 and
        leaves the authorization pending (spec 3).
        """
        code = df.normalize_user_code(user_code)
        now = self.clock.now()
        async with self.storage.unit_of_work() as uow:
            device = await uow.devices.by_user_code(code)
            if device is None:
                raise df.refusal(DeviceState.NONE, DeviceEvent.DENY if not approve
                                 else DeviceEvent.APPROVE)
            if await uow.accounts.by_id(account_id) is None:
                raise NotFound("no account behind this approval")
            state = df.effective_state(device.state, _timing(device), now)
            if await _client_disabled(uow, device.client_id):
                raise df.refusal(state, DeviceEvent.DECIDE_CLIENT_DISABLED)
            if not approve:
                await _deny(uow, device, state, account_id)
                return ()
            studio_id, permissions = await _approver_rights(uow, device, account_id, studio_id)
            granted = sc.Grantable(permissions).filter(device.requested_scopes)
            approved = _approved(device, state, account_id, granted, studio_id)
            if not await uow.devices.replace(approved, expected=device.state):
                raise ExpiredToken("this code is no longer waiting for approval")
        return granted


@attrs.frozen
class _Polled:
    device: DeviceAuthorization  # the record to store
    refusal: LicoreError | None = None
    issued: TokenResponse | None = None


def _timing(device: DeviceAuthorization) -> df.Timing:
    """What the poll clock of `device` knows (`licore.device_flow.Timing`)."""
    return df.Timing(device.created_at, device.expires_at, device.interval, device.last_poll_at)


async def _deny(uow: UnitOfWork, device: DeviceAuthorization, state: DeviceState,
                account_id: str) -> None:
    denial = df.transition(state, DeviceEvent.DENY)
    assert not denial.effects  # denying only changes the state
    denied = attrs.evolve(device, state=denial.next, account_id=account_id)
    await uow.devices.replace(denied, expected=device.state)


async def _approver_rights(uow: UnitOfWork, device: DeviceAuthorization, account_id: str,
                           studio_id: str | None
                           ) -> tuple[str | None, frozenset[sc.Permission]]:
    """The studio an approval acts for and the approver's permissions there; a library
    key's approval acts for the person (no studio, no permission needed)."""
    if sc.kind_of(device.requested_scopes) is not sc.KeyKind.STUDIO:
        return None, frozenset()
    membership = (await uow.studios.membership(studio_id, account_id) if studio_id else None)
    return studio_id, membership.permissions if membership else frozenset()


def _approved(device: DeviceAuthorization, state: DeviceState, account_id: str,
              granted: tuple[str, ...], studio_id: str | None) -> DeviceAuthorization:
    """The record after an approval by the table; nothing surviving is the table's 403."""
    event = DeviceEvent.APPROVE if granted else DeviceEvent.APPROVE_NOTHING_SURVIVES
    outcome = df.transition(state, event)
    approved = attrs.evolve(device, state=outcome.next, account_id=account_id)
    if DeviceEffect.GRANT_FILTERED in outcome.effects:  # an approval's one effect
        approved = attrs.evolve(approved, granted_scopes=granted, studio_id=studio_id)
    return approved


async def _pending_view(uow: UnitOfWork, code: str, now: int) -> ApprovalView | None:
    device = await uow.devices.by_user_code(code) if df.is_well_formed_user_code(code) else None
    if device is None:
        return None
    if df.effective_state(device.state, _timing(device), now) is not DeviceState.PENDING:
        return None
    client = await uow.clients.by_id(device.client_id)
    if client is None or client.disabled:
        # A clear page rather than a consent screen for an app that can get nothing.
        raise df.refusal(DeviceState.PENDING, DeviceEvent.DECIDE_CLIENT_DISABLED)
    return ApprovalView(df.format_user_code(code), client.name, client.description,
                        sc.kind_of(device.requested_scopes), device.requested_scopes,
                        DeviceState.PENDING)


async def _burn(uow: UnitOfWork, user_code: str, now: int) -> None:
    device = await uow.devices.by_user_code(df.normalize_user_code(user_code))
    if device is None:
        return
    state = df.effective_state(device.state, _timing(device), now)
    outcome = df.transition(state, DeviceEvent.BURN)
    assert not outcome.effects  # burning only changes the state
    if outcome.next is not device.state:
        await uow.devices.replace(attrs.evolve(device, state=outcome.next), expected=device.state)
