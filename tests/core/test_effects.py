"""What each service that performs a table's effects may be asked to do: the rows of the
events it handles ask for these effects and no other, so its dispatcher has an arm for each
and none for an effect that cannot come (`transitions.effects_of`). A row that asks one of
these callers for a new effect fails here until its dispatcher handles it."""

from __future__ import annotations

from typing import Any

import pytest

from licore import transitions
from licore.device_flow import DEVICE_FLOW, DeviceEffect, DeviceEvent
from licore.licenses import LicenseEvent, LicenseState
from licore.releases import RELEASES, ReleaseEffect, ReleaseEvent
from licore.transitions import effects_of


def test_publishing_goes_live_or_to_beta_and_tells() -> None:
    """`Packages.publish`."""
    assert effects_of(RELEASES, ReleaseEvent.PUBLISH_STABLE, ReleaseEvent.PUBLISH_BETA) == {
        ReleaseEffect.GO_LIVE, ReleaseEffect.GO_BETA, ReleaseEffect.TELL_PUBLISHED}


def test_withdrawing_falls_back_and_tells() -> None:
    """`Packages.withdraw`."""
    assert effects_of(RELEASES, ReleaseEvent.WITHDRAW) == {
        ReleaseEffect.FALL_BACK, ReleaseEffect.TELL_WITHDRAWN}


def test_a_new_device_code_issues_the_codes_only() -> None:
    """`DeviceFlow.request_code`."""
    assert effects_of(DEVICE_FLOW, DeviceEvent.REQUEST_CODE) == {DeviceEffect.ISSUE_CODES}


def test_a_poll_slows_down_or_issues_the_key() -> None:
    """`DeviceFlow._poll_effect`."""
    assert effects_of(DEVICE_FLOW, DeviceEvent.POLL, DeviceEvent.POLL_TOO_FAST,
                      DeviceEvent.POLL_CLIENT_DISABLED) == {
        DeviceEffect.SLOW_DOWN, DeviceEffect.ISSUE_KEY}


def test_an_approval_grants_the_filtered_scopes_only() -> None:
    """`_approved` in `services.device`."""
    assert effects_of(DEVICE_FLOW, DeviceEvent.APPROVE,
                      DeviceEvent.APPROVE_NOTHING_SURVIVES) == {DeviceEffect.GRANT_FILTERED}


def test_a_table_with_a_cell_left_out_is_refused() -> None:
    """Every event has a row in every state (the lookup in `step` cannot miss)."""
    S, E = LicenseState, LicenseEvent
    rows: list[tuple[LicenseState, LicenseEvent, transitions.Outcome[LicenseState, Any]]] = [
        (s, e, transitions.Go(s)) for s in S for e in E]
    assert transitions.table(*rows)
    with pytest.raises(ValueError, match="no row for"):
        transitions.table(*rows[1:])
