"""The device flow against a simple model, driven by random event sequences."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, invariant, multiple, rule

from licore import scopes as sc
from licore.errors import (
    AccessDenied,
    ApprovalRefused,
    AuthorizationPending,
    ExpiredToken,
    LicoreError,
    SlowDown,
)
from licore.scopes import Permission
from licore.services.wiring import UseCases
from tests.core.machine_support import StorageMachine, machine_tests

STUDIO = tuple(s for s, (k, _) in sc.SCOPES.items() if k is sc.KeyKind.STUDIO)
LIBRARY = tuple(s for s, (k, _) in sc.SCOPES.items() if k is sc.KeyKind.LIBRARY)
REGISTERED = ("products:read", "products:write", "licenses:read", "licenses:write",
              "library:read")


@attrs.define
class Flow:
    device_code: str
    user_code: str
    requested: tuple[str, ...]
    created: int
    state: str = "pending"
    interval: int = 5
    last_poll: int | None = None
    granted: tuple[str, ...] = ()
    keys_returned: int = 0


class DeviceFlowMachine(StorageMachine):
    flows = Bundle("flows")

    def __init__(self) -> None:
        super().__init__()
        d = self.w.deps
        self.flow = UseCases.of(d).device
        self.keys = UseCases.of(d).keys
        owner = self.w.run(UseCases.of(d).operator.add_account("owner", "1", None))
        helper = self.w.run(UseCases.of(d).operator.add_account("helper", "2", None))
        self.outsider = self.w.run(UseCases.of(d).operator.add_account("outsider", "3", None))
        studio = self.w.run(UseCases.of(d).operator.add_studio("S", "owner"))
        self.w.run(UseCases.of(d).operator.set_collaborator(
            "S", "helper", frozenset({Permission.MANAGE_LICENSES})))
        self.client = self.w.run(UseCases.of(d).operator.add_client("App", "d",
                                                                    " ".join(REGISTERED)))
        self.studio_id = studio.id
        self.perms = {owner.id: frozenset(Permission), helper.id:
                      frozenset({Permission.MANAGE_LICENSES}), self.outsider.id: frozenset()}
        self.approvers = list(self.perms)
        self.all_flows: list[Flow] = []

    def now(self) -> int:
        return self.w.clock.now()

    @rule(target=flows, family=st.sampled_from([STUDIO, LIBRARY]), data=st.data())
    def start(self, family: tuple[str, ...], data: st.DataObject) -> Any:
        requested = data.draw(st.lists(st.sampled_from(family), min_size=1, unique=True))
        usable = [s for s in requested if s in REGISTERED]
        try:
            out = self.w.run(self.flow.start(self.client.id, " ".join(requested),
                                          f"10.0.0.{len(self.all_flows) % 250}"))
        except LicoreError as e:
            assert not usable and e.code == "invalid_scope"
            return multiple()  # nothing enters the bundle
        assert usable, "a request with no registered scope must be invalid_scope"
        flow = Flow(out.device_code, out.user_code, tuple(usable), self.now())
        self.all_flows.append(flow)
        return flow

    def _expired(self, flow: Flow) -> bool:
        return self.now() >= flow.created + 600

    @rule(flow=flows, seconds=st.sampled_from([0, 1, 4, 5, 11, 300, 601]))
    def poll(self, flow: Any, seconds: int) -> None:
        if not isinstance(flow, Flow):
            return
        self.w.clock.advance(seconds)
        now = self.now()
        if flow.state in ("pending", "approved") and self._expired(flow):
            flow.state = "expired"
        too_fast = flow.last_poll is not None and now - flow.last_poll < flow.interval - 1
        flow.last_poll = now
        try:
            token = self.w.run(self.flow.poll(flow.device_code, None))
        except SlowDown as e:
            assert flow.state == "pending" and too_fast
            flow.interval = min(flow.interval + 5, 60)
            event("slow_down")
            assert e.interval == flow.interval
            return
        except AuthorizationPending:
            assert flow.state == "pending" and not too_fast
            return
        except AccessDenied:
            assert flow.state == "denied"
            return
        except ExpiredToken:
            assert flow.state in ("expired", "claimed", "burned")
            return
        assert flow.state == "approved", flow.state
        flow.state = "claimed"
        flow.keys_returned += 1
        event("key claimed")
        assert set(token.scope.split()) == set(flow.granted)
        key = self.w.run(self.keys.identify(token.access_token))
        assert set(key.scopes) == set(flow.granted)

    @rule(flow=flows, approver=st.integers(0, 2), approve=st.booleans())
    def decide(self, flow: Any, approver: int, approve: bool) -> None:
        if not isinstance(flow, Flow):
            return
        account = self.approvers[approver]
        if flow.state == "pending" and self._expired(flow):
            flow.state = "expired"
        kind = sc.kind_of(flow.requested)
        perms = self.perms[account] if kind is sc.KeyKind.STUDIO else frozenset()
        allowed = sc.Grantable(perms).filter(flow.requested)
        try:
            granted = self.w.run(self.flow.decide(account, flow.user_code, approve,
                                               self.studio_id))
        except ApprovalRefused:
            assert flow.state == "pending" and approve and not allowed
            event("approval refused")
            return
        except ExpiredToken:
            assert flow.state != "pending"
            return
        assert flow.state == "pending"
        if approve:
            assert set(granted) == set(allowed) and granted
            flow.state, flow.granted = "approved", granted
        else:
            flow.state = "denied"

    @invariant()
    def a_key_is_returned_at_most_once(self) -> None:
        for flow in self.all_flows:
            assert flow.keys_returned <= 1

    @invariant()
    def granted_scopes_are_bounded_and_of_one_family(self) -> None:
        for flow in self.all_flows:
            granted = set(flow.granted)
            assert granted <= set(flow.requested) <= set(REGISTERED)
            assert len({sc.SCOPES[s][0] for s in granted}) <= 1


TestDeviceFlow, TestDeviceFlowInMemory = machine_tests(DeviceFlowMachine, max_examples=80, steps=25)
