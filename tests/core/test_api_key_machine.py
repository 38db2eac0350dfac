"""API keys against a simple model: revoked, idle-expired or unknown keys never authenticate."""

from __future__ import annotations

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, invariant, rule

from licore.api_keys import IDLE_LIMIT
from licore.errors import InvalidToken, NotFound
from licore.services.wiring import UseCases
from tests.core.machine_support import StorageMachine, machine_tests
from tests.support.scenario import obtain_key


@attrs.define
class Key:
    plain: str
    id: str
    last_used: int
    revoked: bool = False


class ApiKeyMachine(StorageMachine):
    keys = Bundle("keys")

    def __init__(self) -> None:
        super().__init__()
        d = self.w.deps
        self.owner = self.w.run(UseCases.of(d).operator.add_account("owner", "1", None))
        self.studio = self.w.run(UseCases.of(d).operator.add_studio("S", "owner"))
        self.client = self.w.run(UseCases.of(d).operator.add_client("App", "d", "products:read"))
        self.all: list[Key] = []

    def now(self) -> int:
        return self.w.clock.now()

    def alive(self, key: Key) -> bool:
        return not key.revoked and self.now() - key.last_used < IDLE_LIMIT

    @rule(target=keys)
    def issue(self) -> Key:
        plain = self.w.run(obtain_key(self.w.deps, self.client, "products:read", self.owner,
                                      self.studio.id))
        record = self.w.run(UseCases.of(self.w.deps).keys.identify(plain))
        key = Key(plain, record.id, self.now())
        self.all.append(key)
        return key

    @rule(key=keys)
    def use(self, key: Key) -> None:
        try:
            self.w.run(UseCases.of(self.w.deps).keys.identify(key.plain))
        except InvalidToken:
            assert not self.alive(key)
            key.revoked = True  # idle expiry is permanent
            return
        assert self.alive(key)
        if self.now() - key.last_used >= 60:
            key.last_used = self.now()  # writes are coalesced to one a minute

    @rule(key=keys)
    def holder_revokes(self, key: Key) -> None:
        if self.alive(key):
            record = self.w.run(UseCases.of(self.w.deps).keys.identify(key.plain))
            self.w.run(UseCases.of(self.w.deps).keys.revoke(record))
            key.revoked = True

    @rule(key=keys)
    def user_revokes_in_connected_apps(self, key: Key) -> None:
        try:
            self.w.run(UseCases.of(self.w.deps).keys.revoke_connected_app(
                key.id, studio_id=self.studio.id))
        except NotFound:
            raise AssertionError("the studio's own key must be listed") from None
        key.revoked = True

    @rule(days=st.sampled_from([0, 1, 30, 59, 61]), seconds=st.integers(0, 120))
    def time_passes(self, days: int, seconds: int) -> None:
        self.w.clock.advance(days * 86400 + seconds)

    @rule(junk=st.text(min_size=0, max_size=50))
    def unknown_keys_never_authenticate(self, junk: str) -> None:
        try:
            self.w.run(UseCases.of(self.w.deps).keys.identify(junk))
        except InvalidToken:
            return
        raise AssertionError("an unknown key authenticated")

    @invariant()
    def connected_apps_list_exactly_the_live_keys(self) -> None:
        apps = self.w.run(UseCases.of(self.w.deps).keys.connected_apps(
            studio_id=self.studio.id))
        assert {a.key.id for a in apps} == {k.id for k in self.all if self.alive(k)}


TestApiKeys, TestApiKeysInMemory = machine_tests(ApiKeyMachine, max_examples=50, steps=25)
